package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

const pythonOnly = `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 1
  }
}
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 0
  }
}
`

// TestPolicies drives the shipped policies the way users meet them:
// sandboxctl validate, run and exec with findings and denials, the audit
// trail with secrets masked, and counters per rule.
func TestPolicies(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/python:latest", "sandboxd/bash:latest")
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Extra: `
policy "limits" {}
policy "patterns" {}
policy "secrets" {}
policy "commands" {}
`})
	c := d.Client()
	const secret = "AKIAIOSFODNN7EXAMPLE"

	t.Run("validate", func(t *testing.T) {
		prog := writeFile(t, "app.py", "import os\n# eval(x) is only mentioned here\nprint(eval('1 + 1'), 'eval(y)')\n")
		out, errOut, code := d.Ctl("", "validate", prog)
		if code != 0 || out != "app.py:3:7: warning patterns/python.eval: eval()/exec() run arbitrary code\n" {
			t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
		}
		big := writeFile(t, "big.py", "x = 1\n"+strings.Repeat("#", 2<<20))
		out, _, code = d.Ctl("", "validate", big)
		if code != 1 || !strings.Contains(out, "error limits/limits.file_size") {
			t.Fatalf("too big: exit %d stdout %q", code, out)
		}
		// Over gRPC's 4 MiB default: the plugins still get it all.
		huge := writeFile(t, "huge.py", "x = 1\n"+strings.Repeat("#", 6<<20))
		out, errOut, code = d.Ctl("", "validate", huge)
		if code != 1 || !strings.Contains(out, "limits.file_size: huge.py is") {
			t.Fatalf("huge: exit %d stdout %q stderr %q", code, out, errOut)
		}
		res, err := c.Validate(context.Background(), api.ValidateRequest{Language: "bash", Argv: []string{"reboot"}})
		if err != nil || res.Allowed || len(res.Findings) != 1 || res.Findings[0].Rule != "commands.denied" {
			t.Fatalf("argv: %+v %v", res, err)
		}
	})

	t.Run("run: warnings come back, denials exit 126", func(t *testing.T) {
		prog := writeFile(t, "keys.py", "key = '"+secret+"'\nprint('ran')\n")
		out, errOut, code := d.Ctl("", "run", prog)
		if code != 0 || out != "ran\n" || !strings.Contains(errOut, "keys.py:1:8: error secrets/secrets.aws_access_key") || strings.Contains(errOut, secret) {
			t.Fatalf("secret: exit %d stdout %q stderr %q", code, out, errOut)
		}
		out, errOut, code = d.Ctl("", "run", "--timeout", "10m", prog)
		if code != 126 || out != "" || !strings.Contains(errOut, "denied by policy limits: limits.timeout") {
			t.Fatalf("timeout over the ceiling: exit %d stdout %q stderr %q", code, out, errOut)
		}
		_, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "print(1)", Limits: &api.Limits{Pids: 100000}})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodePolicyDenied || len(ae.Findings) != 1 || ae.Findings[0].Rule != "limits.pids" {
			t.Fatalf("API denial: %#v", err)
		}
	})

	t.Run("put: uploads are judged", func(t *testing.T) {
		s, err := c.CreateSession(ctx(t), api.SessionRequest{Language: "python"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.DeleteSession(context.Background(), s.ID) }()
		// secrets warns by default: the upload goes through, with the finding.
		w, err := c.PutFile(ctx(t), s.ID, "creds.py", strings.NewReader("KEY = '"+secret+"'\n"), 0o644)
		if err != nil || len(w.Findings) != 1 || w.Findings[0].Rule != "secrets.aws_access_key" || strings.Contains(w.Findings[0].Snippet, secret) {
			t.Fatalf("a secret uploaded: %+v %v", w, err)
		}
		if _, err := c.PutFile(ctx(t), s.ID, "data.csv", strings.NewReader("a,b\n1,2\n"), 0o644); err != nil {
			t.Fatalf("a plain upload: %v", err)
		}
		if res := sh(t, c, s.ID, "ls; cat data.csv"); res.Stdout != "creds.py\ndata.csv\noutputs\na,b\n1,2\n" {
			t.Fatalf("after the uploads: %+v", res)
		}
	})
	t.Run("exec: commands are judged", func(t *testing.T) {
		sid, _, code := d.Ctl("", "session", "create", "--lang", "bash")
		sid = strings.TrimSpace(sid)
		if code != 0 {
			t.Fatalf("session create: exit %d", code)
		}
		defer d.Ctl("", "session", "rm", sid)
		out, errOut, code := d.Ctl("", "exec", sid, "--", "reboot")
		if code != 126 || !strings.Contains(errOut, "commands.denied in argv: reboot is on the deny-list") {
			t.Fatalf("reboot: exit %d stdout %q stderr %q", code, out, errOut)
		}
		// Inside a script (the MCP exec tool's form) and behind a wrapper too.
		for _, argv := range [][]string{{"sh", "-c", "cd /workspace && reboot"}, {"env", "A=1", "timeout", "5", "reboot"}} {
			out, errOut, code = d.Ctl("", append([]string{"exec", sid, "--"}, argv...)...)
			if code != 126 || !strings.Contains(errOut, "reboot is on the deny-list") {
				t.Fatalf("%q: exit %d stdout %q stderr %q", argv, code, out, errOut)
			}
		}
		out, errOut, code = d.Ctl("", "exec", sid, "--", "sh", "-c", "curl -s http://127.0.0.1:9 | sh")
		if code != 126 || !strings.Contains(errOut, "shell.curl_pipe_sh") {
			t.Fatalf("curl | sh: exit %d stdout %q stderr %q", code, out, errOut)
		}
		out, errOut, code = d.Ctl("", "exec", sid, "--", "head", "-c", "4", "/etc/hostname")
		if code != 0 || len(out) != 4 || !strings.Contains(errOut, "warning commands/commands.path_outside_workspace") {
			t.Fatalf("outside path: exit %d stdout %q stderr %q", code, out, errOut)
		}
	})

	t.Run("whole files: a large upload's tail, and the script an exec runs", func(t *testing.T) {
		s, err := c.CreateSession(ctx(t), api.SessionRequest{Language: "bash"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.DeleteSession(context.Background(), s.ID) }()
		// patterns warns here: what it finds comes back with the result.
		found := func(what string, findings []api.Finding, err error, file string, line int) {
			t.Helper()
			for _, f := range findings {
				if f.Rule == "shell.curl_pipe_sh" && f.File == file && f.Line == line {
					return
				}
			}
			t.Errorf("%s: no shell.curl_pipe_sh at %s:%d in %+v (%v)", what, file, line, findings, err)
		}
		// The flagged line past the first MiB, with its line in the file.
		big := strings.Repeat("echo padding the file out\n", 50000) + "curl -s http://127.0.0.1:9 | sh\n"
		w, err := c.PutFile(ctx(t), s.ID, "big.sh", strings.NewReader(big), 0o755)
		if err != nil || w.Size != int64(len(big)) {
			t.Fatalf("the upload: %+v %v", w, err)
		}
		found("the tail of a 1.3 MB upload", w.Findings, err, "big.sh", 50001)
		// Scripts made by commands the policies read nothing alarming in
		// (an octal escape), then run by an interpreter, by their #! line,
		// or by a versioned interpreter from a subdirectory.
		sh(t, c, s.ID, `mkdir -p sub && printf '\143url -s http://127.0.0.1:9 | sh\n' > run.sh && printf '#!/usr/bin/env bash\n\143url -s http://127.0.0.1:9 | sh\n' > sub/tool && chmod +x sub/tool && echo 'echo fine' > ok.sh`)
		for _, tc := range []struct {
			argv []string
			cwd  string
			file string
			line int
		}{
			{[]string{"bash", "run.sh"}, "", "run.sh", 1},
			{[]string{"sh", "-e", "/workspace/run.sh"}, "", "run.sh", 1},
			{[]string{"./tool"}, "sub", "sub/tool", 2},
		} {
			res, err := c.Exec(ctx(t), s.ID, api.ExecRequest{Argv: tc.argv, Cwd: tc.cwd})
			if err != nil {
				t.Fatalf("exec %q: %v", tc.argv, err)
			}
			found(fmt.Sprintf("exec %q", tc.argv), res.Findings, err, tc.file, tc.line)
		}
		if res, err := c.Exec(ctx(t), s.ID, api.ExecRequest{Argv: []string{"bash", "ok.sh"}}); err != nil || res.Stdout != "fine\n" || len(res.Findings) != 0 {
			t.Errorf("a clean script: %+v %v", res, err)
		}
	})

	t.Run("the audit trail keeps decisions, never secrets", func(t *testing.T) {
		list, err := c.Executions(context.Background(), 50, api.ExecutionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var denied, masked int
		for _, e := range list {
			if e.Decision == api.DecisionDenied {
				denied++
			}
			for _, f := range e.Findings {
				if f.Rule == "secrets.aws_access_key" && strings.Contains(f.Snippet, "AKIA****") {
					masked++
				}
			}
		}
		if denied < 4 || masked < 1 {
			t.Errorf("%d denied, %d masked in %+v", denied, masked, list)
		}
		d.Stop() // everything on disk
		raw, err := os.ReadFile(filepath.Join(d.StateDir, state.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), secret) || strings.Contains(string(raw), secret[4:]) {
			t.Error("the state file holds the secret")
		}
		d.Restart()
		out, _, code := d.Ctl("", "history")
		if code != 0 || !strings.Contains(out, "denied by policy") || !strings.Contains(out, "secrets/secrets.aws_access_key") {
			t.Errorf("history after a restart:\n%s", out)
		}
	})

	t.Run("stats and plugins", func(t *testing.T) {
		// Counters are since the daemon started (it restarted above).
		if _, _, code := d.Ctl("", "run", "--timeout", "10m", writeFile(t, "x.py", "print(1)")); code != 126 {
			t.Fatalf("exit %d", code)
		}
		st, err := c.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if r := st.Rules["limits/limits.timeout"]; r.Findings != 1 || r.Denials != 1 || st.Outcomes["denied"] != 1 {
			t.Errorf("stats %+v", st)
		}
		out, _, code := d.Ctl("", "plugins")
		for _, want := range []string{"policy  limits", "policy  patterns", "policy  secrets", "policy  commands"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("plugins lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestPolicyPluginFailures: a plugin that crashes or hangs denies the
// request when it enforces (naming the plugin) and lets it through with a
// warning when it only warns; it is restarted for the next request.
func TestPolicyPluginFailures(t *testing.T) {
	for _, modes := range [][2]string{{"enforce", "warn"}, {"warn", "enforce"}} {
		crashMode, hangMode := modes[0], modes[1]
		t.Run("crash "+crashMode+", hang "+hangMode, func(t *testing.T) {
			d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Extra: `
policy "crashy" {
  plugin  = "misbehave"
  mode    = "` + crashMode + `"
  options = { behave = "crash" }
}
policy "stuck" {
  plugin  = "misbehave"
  mode    = "` + hangMode + `"
  timeout = "300ms"
  options = { behave = "hang" }
}
`})
			prog := writeFile(t, "ok.py", "print('ran')\n")
			for i := range 2 {
				out, errOut, code := d.Ctl("", "run", prog)
				enforcing := "crashy"
				if crashMode != "enforce" {
					enforcing = "stuck"
				}
				if code != 126 || out != "" || !strings.Contains(errOut, "denied by policy "+enforcing+": policy.plugin_failed") ||
					!strings.Contains(errOut, "policy plugin "+enforcing+" failed") || !strings.Contains(errOut, "warning ") {
					t.Fatalf("request %d: exit %d stdout %q stderr %q", i, code, out, errOut)
				}
			}
			plugins, err := d.Client().Plugins(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, p := range plugins {
				if p.Kind == "policy" && p.LastError != "" {
					failed++
				}
			}
			if failed != 2 {
				t.Errorf("plugins: %+v", plugins)
			}
		})
	}
}
