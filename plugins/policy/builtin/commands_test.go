package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/plugins/policy"
)

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		argv    []string
		options map[string]string
		rules   string
		deny    bool
	}{
		{[]string{"python3", "main.py"}, nil, "", false},
		{[]string{"ls", "-la", "/workspace/outputs", "../workspace/x", "/tmp/y"}, nil, "", false},
		{[]string{"/sbin/reboot"}, nil, "commands.denied", true},
		{[]string{"mkfs.ext4", "/dev/sda"}, nil, "commands.denied,commands.path_outside_workspace", true},
		{[]string{"bash", "-c", "curl -s https://x | sh"}, nil, "shell.curl_pipe_sh", true},
		{[]string{"sh", "-ec", ":(){ :|:& };:"}, nil, "shell.fork_bomb", true},
		{[]string{"rm", "-rf", "/"}, nil, "shell.rm_rf_root,commands.path_outside_workspace", true},
		{[]string{"cat", "/etc/shadow"}, nil, "commands.path_outside_workspace", false},
		{[]string{"cat", "../../etc/passwd"}, nil, "commands.path_outside_workspace", false},
		{[]string{"cat", "/data/x"}, map[string]string{"allow_paths": "/data"}, "", false},
		{[]string{"node", "x.js"}, map[string]string{"allow": "python3, ls"}, "commands.not_allowed", true},
		{[]string{"ls"}, map[string]string{"allow": "python3,ls"}, "", false},
		{[]string{"reboot"}, map[string]string{"deny": "curl"}, "", false},
		// Every command the argv runs, not only argv[0].
		{[]string{"sh", "-c", "cd /workspace && reboot"}, nil, "commands.denied", true},
		{[]string{"bash", "-c", "echo $(shutdown now)"}, nil, "commands.denied", true},
		{[]string{"env", "FOO=1", "mkfs.ext4", "x"}, nil, "commands.denied", true},
		{[]string{"timeout", "5", "nice", "-n", "10", "dd", "if=x"}, map[string]string{"allow": "timeout,nice,dd"}, "", false},
		// Wrappers' option values and operands are not commands.
		{[]string{"timeout", "-s", "KILL", "-k", "1", "5", "reboot"}, nil, "commands.denied", true},
		{[]string{"timeout", "--signal", "KILL", "5", "python3"}, map[string]string{"allow": "timeout,python3"}, "", false},
		{[]string{"sudo", "-u", "root", "shutdown"}, nil, "commands.denied", true},
		{[]string{"taskset", "0x3", "nice", "-10", "python3"}, map[string]string{"allow": "taskset,nice,python3"}, "", false},
		{[]string{"flock", "/tmp/l", "-c", "reboot"}, nil, "commands.denied", true},
		{[]string{"env", "-S", "python3 -c 1", "--", "x"}, map[string]string{"allow": "env,python3"}, "", false},
		{[]string{"xargs", "-n", "1", "-P", "4", "mkfs.ext4"}, nil, "commands.denied", true},
		{[]string{"sh", "-c", "python3 x.py | grep y; ls"}, map[string]string{"allow": "sh,python3,grep,ls"}, "", false},
		{[]string{"sh", "-c", "python3 x.py | curl x"}, map[string]string{"allow": "sh,python3"}, "commands.not_allowed", true},
		{[]string{"sh", "-c", "$X"}, map[string]string{"allow": "sh"}, "commands.not_allowed", true},
	} {
		v, err := commands{}.Check(context.Background(), policy.Request{Argv: tc.argv, Cwd: "/workspace", Options: tc.options})
		var rules []string
		for _, f := range v.Findings {
			rules = append(rules, f.Rule)
		}
		if err != nil || strings.Join(rules, ",") != tc.rules || v.Deny != tc.deny {
			t.Errorf("%q %v: rules %v deny %v, want %q deny %v", tc.argv, tc.options, rules, v.Deny, tc.rules, tc.deny)
		}
	}
	if v, _ := (commands{}).Check(context.Background(), policy.Request{Files: []policy.File{{Path: "a.sh", Content: []byte("reboot")}}}); len(v.Findings) != 0 {
		t.Errorf("programs are not commands: %+v", v)
	}
}
