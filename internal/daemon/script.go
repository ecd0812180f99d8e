package daemon

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/plugins/program"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// interpreters are the commands that run a script named in their
// arguments, and the language their scripts are judged as.
var interpreters = map[string]string{
	"bash": "bash", "sh": "bash", "dash": "bash", "zsh": "bash", "ksh": "bash",
	"python": "python", "python3": "python", "node": "node", "nodejs": "node", "ruby": "ruby", "php": "php",
}

// versioned are interpreters named with their version (python3.13).
var versioned = regexp.MustCompile(`^(python)[0-9.]+$`)

// inlineFlags say, per interpreter's language, that its program is its
// next argument (which the commands policy reads as argv), or a module,
// not a file.
var inlineFlags = map[string][]string{
	"bash": {"-c"}, "python": {"-c", "-m"}, "node": {"-e", "--eval", "-p", "--print"}, "ruby": {"-e"}, "php": {"-r"},
}

func interpreter(argv0 string) string {
	base := path.Base(argv0)
	if l, ok := interpreters[base]; ok {
		return l
	}
	if m := versioned.FindStringSubmatch(base); m != nil {
		return interpreters[m[1]]
	}
	return ""
}

// scriptOf is the workspace file an exec's argv runs, and the language it
// runs it as ("" for a file run by its own #! line): `bash x.sh`, `python3
// x.py`, `./x`. None for a command given inline (-c, -e), or a file
// outside the workspace.
func scriptOf(argv []string, dir string) (file, as string) {
	if len(argv) == 0 {
		return "", ""
	}
	arg := ""
	if as = interpreter(argv[0]); as != "" {
		for _, a := range argv[1:] {
			if slices.Contains(inlineFlags[as], a) {
				return "", ""
			}
			if !strings.HasPrefix(a, "-") {
				arg = a
				break
			}
		}
	} else if strings.Contains(argv[0], "/") {
		arg = argv[0]
	}
	if arg == "" {
		return "", ""
	}
	if !path.IsAbs(arg) {
		arg = path.Join(cmp.Or(dir, runtime.Workspace), arg)
	}
	rel, ok := strings.CutPrefix(path.Clean(arg), runtime.Workspace+"/")
	if !ok {
		return "", ""
	}
	if name, aerr := sessions.Path(rel); aerr == nil {
		return name, as
	}
	return "", ""
}

// judgeScript judges, beside an exec's argv, the workspace file it runs,
// as its interpreter's program (its #! line's, for one run by it): all
// of it, read from the sandbox now. A file that cannot be read (gone, a
// link, a directory) leaves the argv judged alone: the exec then fails
// to run it, or runs what the policies were not shown, which the
// findings of argv's own judgement cover.
func (d *Daemon) judgeScript(ctx context.Context, sb *runtime.Sandbox, j judgement, file, as string, max int64) (ruling, bool, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		res, err := sb.File(ctx, supervisor.OpGet, supervisor.FileRequest{Path: file, Max: max}, nil, func(b []byte) { _, _ = pw.Write(b) })
		if err == nil && res.Error != "" {
			err = io.ErrUnexpectedEOF
		}
		pw.CloseWithError(err)
		done <- err
	}()
	br := bufio.NewReader(pr)
	head, err := br.Peek(256)
	if len(head) == 0 && err != nil {
		pr.CloseWithError(err)
		<-done
		return ruling{}, false, nil
	}
	if as == "" {
		as = shebang(head)
	}
	j.as = as
	r, aerr := d.judgeWhole(ctx, j, program.File{Path: file}, br, nil)
	pr.Close()
	<-done
	return r, true, aerr
}

// shebang is the language of a file's #! line's interpreter, if known.
func shebang(head []byte) string {
	line, _, _ := strings.Cut(string(head), "\n")
	cmd, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	words := strings.Fields(cmd)
	if len(words) > 1 && path.Base(words[0]) == "env" {
		words = words[1:]
		for len(words) > 1 && strings.HasPrefix(words[0], "-") {
			words = words[1:]
		}
	}
	if len(words) == 0 {
		return ""
	}
	return interpreter(words[0])
}
