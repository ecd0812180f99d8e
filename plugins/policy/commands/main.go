// Command sandbox-policy-commands is the commands policy (enforce by
// default) for the argv of session commands: a deny-list of destructive
// commands, an optional allow-list, the shell rules (rm -rf /, curl | sh,
// fork bombs) over the command line and over `sh -c` scripts, and
// arguments that point outside the workspace (a warning).
//
// Options: deny (comma-separated command names, replacing the default
// list), allow (comma-separated: only these commands may run),
// allow_paths (comma-separated path prefixes besides /workspace and /tmp).
package main

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/policy"
	"github.com/sandboxd/sandboxd/plugins/policy/internal/rules"
)

var defaultDeny = []string{"mkfs", "fdisk", "sfdisk", "parted", "shutdown", "reboot", "halt", "poweroff", "init", "telinit",
	"mount", "umount", "insmod", "rmmod", "modprobe", "swapoff", "iptables", "nsenter", "chroot"}

var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ash"}

type commands struct{}

func (commands) Info(context.Context) (policy.Info, error) {
	return policy.Info{Name: "commands", Version: "1.0.0", DefaultMode: policy.ModeEnforce,
		Description: "session commands: deny-list, optional allow-list, shell rules, paths outside the workspace",
		Rules:       []string{"commands.denied", "commands.not_allowed", "commands.path_outside_workspace", "shell.rm_rf_root", "shell.curl_pipe_sh", "shell.fork_bomb"}}, nil
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
	name := path.Base(req.Argv[0])
	deny := list(req.Options["deny"], defaultDeny)
	if slices.Contains(deny, name) || strings.HasPrefix(name, "mkfs.") {
		bad("commands.denied", policy.SeverityError, "%s is on the deny-list", name)
	}
	if allow := list(req.Options["allow"], nil); allow != nil && !slices.Contains(allow, name) {
		bad("commands.not_allowed", policy.SeverityError, "%s is not on the allow-list (%s)", name, strings.Join(allow, ", "))
	}
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
	roots := append([]string{"/workspace", "/tmp", "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"}, list(req.Options["allow_paths"], nil)...)
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

func main() { plugins.ServePolicy(commands{}) }
