package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// Two versions of one language side by side, as sandboxd.hcl ships them:
// python (3.11, bookworm) keeps .py files, python3.13 (trixie) is asked
// for by name, and has its own warm runtimes, contexts and tools.
func TestLanguageVersions(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/python313:latest")
	d := testutil.StartDaemon(t, testutil.Options{Languages: shippedBlock(t, "python") + "\n" + shippedBlock(t, "python3.13"), Defaults: `timeout = "30s"`})
	c := d.Client()

	var rows []string
	listed := func() bool { // once each image has said its version
		out, _, _ := d.Ctl("", "languages")
		rows = nil
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "python") {
				rows = append(rows, strings.Join(strings.Fields(line)[:3], " "))
			}
		}
		return len(rows) == 2 && strings.HasPrefix(rows[0], "python Python 3.11.") && strings.HasPrefix(rows[1], "python3.13 Python 3.13.")
	}
	waitFor(t, "sandboxctl languages listing both versions", listed)

	script := writeFile(t, "which.py", "import sys\nprint(sys.version_info[:2], __file__)")
	if out, errOut, code := d.Ctl("", "run", script); code != 0 || out != "(3, 11) /workspace/which.py\n" {
		t.Errorf("a .py file runs under the default python: %q %q", out, errOut)
	}
	if out, errOut, code := d.Ctl("", "run", "--lang", "python3.13", script); code != 0 || out != "(3, 13) /workspace/which.py\n" {
		t.Errorf("--lang python3.13: %q %q", out, errOut)
	}
	waitFor(t, "python3.13's warm runtime", func() bool {
		res, err := c.Run(context.Background(), api.RunRequest{Language: "python3.13", Code: "import sys; print(sys.version_info.minor)"})
		return err == nil && res.Warm && res.Stdout == "13\n"
	})

	id := newSession(t, c, api.SessionRequest{Language: "python3.13"})
	if res := cell(t, c, id, "main", "import sys, pandas\nx = 41\nsys.version_info.minor", 0); plain(res) != "13" {
		t.Fatalf("a python3.13 context: %q %q", plain(res), res.Stderr)
	}
	if res := cell(t, c, id, "main", "x + 1", 0); plain(res) != "42" {
		t.Errorf("the context's state: %q %q", plain(res), res.Stderr)
	}
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", "python3 -m pytest --version && git --version"}})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout+res.Stderr, "pytest") {
		t.Errorf("python3.13's tools: %v %+v", err, res)
	}
}
