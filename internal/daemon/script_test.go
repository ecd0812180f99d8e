package daemon

import "testing"

// The workspace file an exec's argv runs, and what it runs it as.
func TestScriptOf(t *testing.T) {
	for _, tc := range []struct {
		argv     []string
		dir      string
		file, as string
	}{
		{[]string{"bash", "x.sh"}, "", "x.sh", "bash"},
		{[]string{"sh", "-e", "-x", "/workspace/a/b.sh", "arg"}, "", "a/b.sh", "bash"},
		{[]string{"python3.13", "-u", "main.py"}, "/workspace/sub", "sub/main.py", "python"},
		{[]string{"/usr/bin/node", "app.js"}, "", "app.js", "node"},
		{[]string{"./tool"}, "/workspace/bin", "bin/tool", ""},
		{[]string{"bash", "-c", "echo hi"}, "", "", ""},
		{[]string{"python3", "-m", "http.server"}, "", "", ""},
		{[]string{"bash", "/etc/profile"}, "", "", ""},
		{[]string{"bash", "../../etc/passwd"}, "", "", ""},
		{[]string{"ls", "-l"}, "", "", ""},
	} {
		file, as := scriptOf(tc.argv, tc.dir)
		if file != tc.file || as != tc.as {
			t.Errorf("%q in %q: %q as %q, want %q as %q", tc.argv, tc.dir, file, as, tc.file, tc.as)
		}
	}
	for head, want := range map[string]string{"#!/bin/sh\nx": "bash", "#!/usr/bin/env -S python3 -u\n": "python", "#!/usr/bin/env node\n": "node", "echo\n": "", "#!/usr/bin/awk -f\n": ""} {
		if got := shebang([]byte(head)); got != want {
			t.Errorf("shebang %q: %q, want %q", head, got, want)
		}
	}
}
