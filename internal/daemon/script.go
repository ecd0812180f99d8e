package daemon

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	contract "github.com/sandboxd/sandboxd/plugins/policy"
	"github.com/sandboxd/sandboxd/plugins/policy/builtin"
	"github.com/sandboxd/sandboxd/plugins/program"
	"github.com/sandboxd/sandboxd/policy"
	"github.com/sandboxd/sandboxd/runtime"
)

// interpreters are the commands that run a script named in their
// arguments, and the language their scripts are judged as.
var interpreters = map[string]string{
	"bash": "bash", "sh": "bash", "dash": "bash", "zsh": "bash", "ksh": "bash", "ash": "bash", "mksh": "bash",
	"python": "python", "python3": "python", "node": "node", "nodejs": "node", "ruby": "ruby", "php": "php",
}

// versioned are interpreters named with their version (python3.11).
var versioned = regexp.MustCompile(`^(python)[0-9.]+$`)

// interpreterOptions are, per language, the options whose program is
// their value rather than a file (inline: read as argv by the commands
// policy), and those that take a value before the script.
var interpreterOptions = map[string]struct{ inline, valued []string }{
	"bash":   {inline: []string{"-c"}, valued: []string{"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}},
	"python": {inline: []string{"-c", "-m"}, valued: []string{"-W", "-X", "-Q", "--check-hash-based-pycs"}},
	"node":   {inline: []string{"-e", "--eval", "-p", "--print"}, valued: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--env-file", "--title"}},
	"ruby":   {inline: []string{"-e"}, valued: []string{"-I", "-r", "-E", "-C", "-F", "-K", "-T", "-x"}},
	"php":    {inline: []string{"-r"}, valued: []string{"-d", "-c", "-z"}},
}

// extensions are the file names the policies read each language's
// programs by.
var extensions = map[string]string{"bash": ".sh", "python": ".py", "node": ".js", "ruby": ".rb", "php": ".php"}

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

// script is a workspace file an exec runs, and the language it runs it
// as ("" for a file run by its own #! line).
type script struct{ file, as string }

// scriptsOf are the workspace files an exec's argv runs: as an
// interpreter's script (`bash x.sh`, `python3 -u x.py`), by its #! line
// (`./x`), behind a wrapper (`env`, `timeout`, `nice`, `sudo`) or in a
// shell's -c script (`sh -c "bash x.sh"`, the MCP exec tool's form). A
// program given inline (-c, -e) is argv, and a file outside the
// workspace is none of sandboxd's to read.
func scriptsOf(argv []string, dir string) []script {
	var out []script
	for _, c := range builtin.Commands(argv) {
		if s, ok := scriptOf(c, dir); ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// scriptOf is the workspace file one command line runs, if any.
func scriptOf(argv []string, dir string) (script, bool) {
	if len(argv) == 0 || argv[0] == "" {
		return script{}, false
	}
	arg, as := "", interpreter(argv[0])
	if as != "" {
		opts := interpreterOptions[as]
		rest := argv[1:]
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			switch {
			case slices.Contains(opts.inline, a):
				return script{}, false
			case a == "--":
				if i+1 < len(rest) {
					arg = rest[i+1]
				}
			case slices.Contains(opts.valued, a):
				i++
			case as == "php" && a == "-f" && i+1 < len(rest):
				arg = rest[i+1]
			case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
				continue
			default:
				arg = a
			}
			if arg != "" {
				break
			}
		}
	} else if strings.Contains(argv[0], "/") {
		arg = argv[0]
	}
	if arg == "" {
		return script{}, false
	}
	if !path.IsAbs(arg) {
		arg = path.Join(cmp.Or(dir, runtime.Workspace), arg)
	}
	rel, ok := strings.CutPrefix(path.Clean(arg), runtime.Workspace+"/")
	if !ok {
		return script{}, false
	}
	if name, aerr := sessions.Path(rel); aerr == nil {
		return script{file: name, as: as}, true
	}
	return script{}, false
}

// judgeCommand judges an exec's argv and every workspace script it runs,
// all of each, as its interpreter's program, with one ruling for all of
// them. A script that cannot be read (gone, a link, a directory) is
// refused when an enforcing or asking policy could have had something to
// say of it; and one that changed between its reading and the ruling (a
// person's approval takes a while) is refused: what runs is what was
// judged, as far as sandboxd can hold it (see docs/policies.md).
func (d *Daemon) judgeCommand(ctx context.Context, sb *runtime.Sandbox, j judgement, dir string) (ruling, error) {
	scripts := scriptsOf(j.argv, dir)
	if len(scripts) == 0 {
		return d.judge(ctx, j)
	}
	dec := d.evaluate(ctx, j, j.files, j.argv)
	sums := map[string][sha256.Size]byte{}
	for _, s := range scripts {
		sdec, shown, sum, err := d.evaluateScript(ctx, sb, j, s)
		if err != nil {
			return ruling{}, err
		}
		dec = mergeDecisions(dec, sdec)
		j.shown = append(j.shown, shown...)
		sums[s.file] = sum
	}
	r, aerr := d.decide(ctx, j, dec)
	if aerr != nil {
		return r, aerr
	}
	for _, s := range scripts {
		if sum, err := d.readScript(ctx, sb, s.file, nil); err != nil || sum != sums[s.file] {
			return r, errdefs.Errorf(errdefs.Conflict, "%s changed while it was judged (or waited for approval): run it again, and it is judged as it is then", s.file)
		}
	}
	return r, nil
}

// evaluateScript judges the workspace file s, all of it, as its
// interpreter's program (its #! line's), under the name that tells the
// policies its language; its findings keep its own name.
func (d *Daemon) evaluateScript(ctx context.Context, sb *runtime.Sandbox, j judgement, s script) (policy.Decision, []state.ApprovalFile, [sha256.Size]byte, error) {
	var (
		dec   policy.Decision
		shown []state.ApprovalFile
	)
	dec = policy.Decision{Allowed: true, Findings: []policy.Finding{}}
	// A file not there is not there yet: what the command makes, sandboxd
	// cannot read first; its decision stays the empty one.
	sum, err := d.readScript(ctx, sb, s.file, func(r *bufio.Reader) error {
		as := s.as
		if as == "" {
			head, _ := r.Peek(256)
			if as = shebang(head); as == "" {
				return nil // a binary, or a script of an interpreter the policies do not read
			}
		}
		judged := s.file
		if ext, ok := extensions[as]; ok && contract.FamilyOfFile(judged, as) != contract.Family(as) {
			judged += ext // the policies tell a program's language by its name
		}
		j.as = cmp.Or(as, j.as)
		var err error
		dec, shown, err = d.evaluateWhole(ctx, j, nil, program.File{Path: judged}, r, nil)
		dec, shown = renamed(dec, shown, judged, s.file)
		return err
	})
	return dec, shown, sum, err
}

// readScript reads the workspace file whole from the sandbox, handing it
// to judge (if set) as it comes, and says its SHA-256 (of nothing, for a
// file not there). One that is there but cannot be read whole (a link, a
// FIFO, a directory, over sessions.max_transfer) is refused: it would
// run unjudged.
func (d *Daemon) readScript(ctx context.Context, sb *runtime.Sandbox, file string, judge func(*bufio.Reader) error) (sum [sha256.Size]byte, err error) {
	pr, pw := io.Pipe()
	h := sha256.New()
	done := make(chan error, 1)
	go func() {
		err := sandbox.WorkspaceOf(sb).Read(ctx, file, false, d.cfg.Sessions.MaxTransfer, func(b []byte) {
			h.Write(b)
			_, _ = pw.Write(b)
		})
		switch {
		case errdefs.Is(err, errdefs.NotFound):
			err = io.EOF // nothing to read
		case err != nil && errdefs.KindOf(err) != errdefs.Internal: // refused, not lost
			err = errdefs.Errorf(errdefs.Conflict, "%s cannot be read whole (%v): the policies judge the scripts an exec runs, so it is refused; run a regular file of the workspace", file, err)
		}
		pw.CloseWithError(err)
		done <- err
	}()
	br := bufio.NewReader(pr)
	if judge != nil {
		err = judge(br)
	}
	_, _ = io.Copy(io.Discard, br)
	pr.Close()
	ferr := <-done
	copy(sum[:], h.Sum(nil))
	if ferr != nil && ferr != io.EOF {
		return sum, ferr
	}
	return sum, err
}

// renamed gives the findings (and excerpts) of a file judged under the
// name judged the file's own name.
func renamed(dec policy.Decision, shown []state.ApprovalFile, judged, name string) (policy.Decision, []state.ApprovalFile) {
	if judged == name {
		return dec, shown
	}
	move := func(f *policy.Finding) {
		if f != nil && f.File == judged {
			f.File = name
		}
	}
	for i := range dec.Findings {
		move(&dec.Findings[i])
	}
	move(dec.Denial)
	move(dec.Question)
	for i := range shown {
		if shown[i].Path == judged {
			shown[i].Path = name
		}
	}
	return dec, shown
}

// shebang is the language of a file's #! line's interpreter, if known.
func shebang(head []byte) string {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	cmd, ok := strings.CutPrefix(strings.TrimSuffix(string(line), "\r"), "#!")
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
