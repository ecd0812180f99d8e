package daemon

import (
	"strings"
	"testing"
	"testing/iotest"
)

// The workspace file an exec's argv runs, and what it runs it as.
func TestScriptOf(t *testing.T) {
	for _, tc := range []struct {
		argv     []string
		dir      string
		file, as string
	}{
		{[]string{"bash", "x.sh"}, "", "x.sh", "bash"},
		{[]string{"sh", "-e", "-x", "/workspace/a/b.sh", "arg"}, "", "a/b.sh", "bash"},
		{[]string{"python3.11", "-u", "main.py"}, "/workspace/sub", "sub/main.py", "python"},
		{[]string{"/usr/bin/node", "app.js"}, "", "app.js", "node"},
		{[]string{"./tool"}, "/workspace/bin", "bin/tool", ""},
		{[]string{"bash", "-c", "echo hi"}, "", "", ""},
		{[]string{"python3", "-m", "http.server"}, "", "", ""},
		{[]string{"bash", "/etc/profile"}, "", "", ""},
		{[]string{"bash", "../../etc/passwd"}, "", "", ""},
		{[]string{"ls", "-l"}, "", "", ""},
		{[]string{"bash", "-o", "errexit", "run.sh"}, "", "run.sh", "bash"},
		{[]string{"python3", "-W", "ignore", "-X", "dev", "x.py"}, "", "x.py", "python"},
		{[]string{"node", "-r", "pre.js", "x.js"}, "", "x.js", "node"},
		{[]string{"php", "-d", "k=v", "-f", "x.php"}, "", "x.php", "php"},
		{[]string{"env", "A=1", "timeout", "5", "nice", "-n", "5", "bash", "run.sh"}, "", "run.sh", "bash"},
		{[]string{"sh", "-c", "cd /workspace && bash run.sh | tee log"}, "", "run.sh", "bash"},
		{[]string{"bash", "--", "x.sh"}, "", "x.sh", "bash"},
	} {
		var got script
		if s := scriptsOf(tc.argv, tc.dir); len(s) > 0 {
			got = s[len(s)-1]
		}
		if got.file != tc.file || got.as != tc.as {
			t.Errorf("%q in %q: %q as %q, want %q as %q", tc.argv, tc.dir, got.file, got.as, tc.file, tc.as)
		}
	}
	for head, want := range map[string]string{"#!/bin/sh\nx": "bash", "#!/usr/bin/env -S python3 -u\n": "python", "#!/usr/bin/env node\n": "node", "echo\n": "", "#!/usr/bin/awk -f\n": ""} {
		if got := shebang([]byte(head)); got != want {
			t.Errorf("shebang %q: %q, want %q", head, got, want)
		}
	}
}

// A file is read a chunk at a time, each cut after its last whole line
// (a line longer than a chunk where it must be), and nothing is lost or
// read twice.
func TestChunker(t *testing.T) {
	text := "one\ntwo\nthree\n" + strings.Repeat("x", 25) + "\nfour"
	c := &chunker{r: iotest.HalfReader(strings.NewReader(text)), size: 10}
	var got []string
	for {
		chunk, last, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		if len(chunk) > 10 {
			t.Errorf("a chunk of %d bytes", len(chunk))
		}
		got = append(got, string(chunk))
		if last {
			break
		}
	}
	if strings.Join(got, "") != text || got[0] != "one\ntwo\n" || got[1] != "three\n" {
		t.Errorf("chunks %q", got)
	}
}
