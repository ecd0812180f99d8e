package builtin

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/sandboxd/sandboxd/plugins/policy"
	"github.com/sandboxd/sandboxd/plugins/policy/internal/rules"
)

var defaultDeny = []string{"mkfs", "fdisk", "sfdisk", "parted", "shutdown", "reboot", "halt", "poweroff", "init", "telinit",
	"mount", "umount", "insmod", "rmmod", "modprobe", "swapoff", "iptables", "nsenter", "chroot"}

var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ash"}

// commands is the commands policy (enforce by default) for the argv of
// session commands: a deny-list of destructive commands, an optional
// allow-list, the shell rules (rm -rf /, curl | sh, fork bombs) over the
// command line and over `sh -c` scripts, and arguments that point outside
// the workspace (a warning).
//
// The lists apply to every command the argv runs, not only argv[0]: the
// commands wrappers start (env, timeout, nice, xargs, sudo, ..., read past
// each wrapper's option values and operands, and through command strings
// such as env -S and su -c), and each command of a shell's -c script (the
// MCP exec tool's form), found with a real shell parser (mvdan.cc/sh). A
// command whose name is computed (`$X args`) cannot be on an allow-list.
//
// Options: deny (comma-separated command names, replacing the default
// list), allow (comma-separated: only these commands may run),
// allow_paths (comma-separated path prefixes besides /workspace and /tmp).
type commands struct{}

func (commands) Info(context.Context) (policy.Info, error) {
	return policy.Info{Name: "commands", Version: "1.0.0", DefaultMode: policy.ModeEnforce,
		Description: "session commands: deny-list, optional allow-list, shell rules, paths outside the workspace",
		Rules:       []string{"commands.denied", "commands.not_allowed", "commands.path_outside_workspace", "shell.rm_rf_root", "shell.curl_pipe_sh", "shell.fork_bomb"},
		Kinds:       []string{policy.KindExec, policy.KindValidate}}, nil
}

func list(opt string, def []string) []string {
	if opt == "" {
		return def
	}
	var out []string
	for _, s := range strings.Split(opt, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (commands) Check(_ context.Context, req policy.Request) (policy.Verdict, error) {
	if len(req.Argv) == 0 {
		return policy.Verdict{}, nil
	}
	var out []policy.Finding
	bad := func(rule, severity, format string, args ...any) {
		out = append(out, policy.Finding{Rule: rule, Severity: severity, File: "argv", Message: fmt.Sprintf(format, args...),
			Snippet: strings.Join(req.Argv, " ")})
	}
	deny := list(req.Options["deny"], defaultDeny)
	allow := list(req.Options["allow"], nil)
	for _, name := range commandNames(req.Argv) {
		switch {
		case name == "" && allow != nil:
			bad("commands.not_allowed", policy.SeverityError, "a command whose name is computed cannot be checked against the allow-list (%s)", strings.Join(allow, ", "))
		case name == "":
		case slices.Contains(deny, name) || strings.HasPrefix(name, "mkfs."):
			bad("commands.denied", policy.SeverityError, "%s is on the deny-list", name)
		case allow != nil && !slices.Contains(allow, name):
			bad("commands.not_allowed", policy.SeverityError, "%s is not on the allow-list (%s)", name, strings.Join(allow, ", "))
		}
	}
	name := path.Base(req.Argv[0])
	// A shell's script, or else the command line, as shell text.
	scripts := []string{strings.Join(req.Argv, " ")}
	if slices.Contains(shells, name) {
		for i, a := range req.Argv[1:] {
			if strings.HasPrefix(a, "-") && strings.Contains(a, "c") && i+2 < len(req.Argv) {
				scripts = []string{req.Argv[i+2]}
				break
			}
		}
	}
	for _, script := range scripts {
		out = append(out, rules.Apply(policy.NewSource("argv", "shell", []byte(script)), rules.Shell)...)
	}
	// /home/user is the workspace as E2B's clients name it (a link in
	// sandboxd's images).
	roots := append([]string{"/workspace", "/home/user", "/tmp", "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"}, list(req.Options["allow_paths"], nil)...)
	cwd := req.Cwd
	if cwd == "" {
		cwd = "/workspace"
	}
	for _, a := range req.Argv[1:] {
		if strings.HasPrefix(a, "-") || !strings.Contains(a, "/") && a != ".." {
			continue
		}
		p := a
		if !path.IsAbs(p) {
			p = path.Join(cwd, p)
		}
		p = path.Clean(p)
		if !slices.ContainsFunc(roots, func(r string) bool { return p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") }) {
			bad("commands.path_outside_workspace", policy.SeverityWarning, "argument %q is outside the workspace (%s)", a, p)
		}
	}
	return policy.DenyAtError(out), nil
}

// wrappers run the command their arguments name. For each: the options
// that take the next word as their value, and how many operands come
// before the command (flock's lock file, taskset's mask).
var wrappers = map[string]struct {
	valued   []string
	operands int
}{
	"env":     {valued: []string{"-u", "--unset", "-C", "--chdir"}},
	"timeout": {valued: []string{"-s", "--signal", "-k", "--kill-after"}, operands: 1},
	"nice":    {valued: []string{"-n", "--adjustment"}},
	"nohup":   {}, "setsid": {}, "command": {}, "busybox": {},
	"xargs":   {valued: []string{"-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "--max-args", "-P", "--max-procs", "-s", "--max-chars"}},
	"sudo":    {valued: []string{"-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user", "-C", "--close-from", "-D", "--chdir", "-R", "--chroot"}},
	"doas":    {valued: []string{"-u", "-C"}},
	"exec":    {valued: []string{"-a"}},
	"time":    {valued: []string{"-f", "--format", "-o", "--output"}},
	"stdbuf":  {valued: []string{"-i", "--input", "-o", "--output", "-e", "--error"}},
	"ionice":  {valued: []string{"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"}},
	"chrt":    {operands: 1},
	"taskset": {operands: 1},
	"unshare": {valued: []string{"-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd"}},
	"flock":   {valued: []string{"-w", "--timeout", "-E", "--conflict-exit-code"}, operands: 1},
	"watch":   {valued: []string{"-n", "--interval", "-d", "-q", "--equexit"}},
	"strace":  {valued: []string{"-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X"}},
	"ltrace":  {valued: []string{"-o", "-e", "-p", "-s", "-u", "-a", "-l", "-n", "-A", "-D", "-F", "-x"}},
	"su":      {valued: []string{"-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"}},
}

// commandString are a wrapper's options whose value is itself a command
// line: env -S, su -c, flock -c, watch's whole operand list is one too.
var commandString = map[string][]string{"env": {"-S", "--split-string"}, "su": {"-c", "--command"}, "flock": {"-c", "--command"}}

// commandNames is every command an argv runs, once each, in order: argv[0],
// what a wrapper starts, and the commands of a shell's -c script. "" stands
// for a command whose name is computed.
func commandNames(argv []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range Commands(argv) {
		name := path.Base(c[0])
		if c[0] == "" {
			name = ""
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// Commands is every command line an argv runs, in order: argv, what a
// wrapper (env, timeout, nice, sudo, ...) starts, and the commands of a
// shell's -c script (a word that is not a literal is ""). sandboxd reads
// it for the scripts an exec runs, too.
func Commands(argv []string) [][]string {
	var out [][]string
	var visit func(argv []string, depth int)
	visit = func(argv []string, depth int) {
		if len(argv) == 0 || depth > 8 {
			return
		}
		out = append(out, argv)
		name := path.Base(argv[0])
		rest := argv[1:]
		w, isWrapper := wrappers[name]
		switch {
		case isWrapper:
			operands := w.operands
			for i := 0; i < len(rest); i++ {
				a := rest[i]
				switch {
				case slices.Contains(commandString[name], a) && i+1 < len(rest):
					for _, call := range scriptCalls(rest[i+1]) {
						visit(call, depth+1)
					}
					return // what follows are its arguments (or su's user)
				case slices.Contains(w.valued, a):
					i++ // its value
				case a == "--":
				case strings.HasPrefix(a, "-"), name == "env" && strings.Contains(a, "="):
				case operands > 0:
					operands--
				default:
					visit(rest[i:], depth+1)
					return
				}
			}
		case slices.Contains(shells, name):
			for i, a := range rest {
				if strings.HasPrefix(a, "-") && strings.Contains(a, "c") && i+1 < len(rest) {
					for _, call := range scriptCalls(rest[i+1]) {
						visit(call, depth+1)
					}
					return
				}
			}
		}
	}
	visit(argv, 0)
	return out
}

// scriptCalls parses a shell script and returns the argv of each simple
// command in it, subshells and command substitutions included; a word
// that is not a literal is "". A script that does not parse gives none
// (the shell rules still read it as text).
func scriptCalls(script string) [][]string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil
	}
	var calls [][]string
	syntax.Walk(f, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			argv := make([]string, len(call.Args))
			for i, w := range call.Args {
				argv[i] = w.Lit()
			}
			calls = append(calls, argv)
		}
		return true
	})
	return calls
}
