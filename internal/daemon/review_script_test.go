package daemon_test

// From an outside review (each case failed before its fix, and stays as a regression test): an exec that runs a workspace
// script whose content the enforcing patterns policy denies, started in
// ways the policies never see that content. Each subtest is a real
// bypass: the script runs (its output comes back) where
// TestWholeFilesAreJudged's `bash run.sh` is denied.

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/errdefs"
)

// reviewFlagged is a shell script the patterns policy denies in enforce
// mode (curl | sh is an error); it prints a marker and exits before the
// download, so nothing leaves the machine.
const reviewFlagged = `printf '#!/bin/sh\necho RAN-UNJUDGED\nexit 0\n\143url -s http://127.0.0.1:9 | sh\n'`

func reviewExecOutput(t *testing.T, d *daemon.Daemon, id string, argv ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	_, aerr := d.Exec(agent, id, daemon.ExecRequest{Argv: argv}, func(stream string, data []byte) {
		out.Write(data)
	})
	return out.String(), aerr
}

func TestReviewScriptsRunUnjudged(t *testing.T) {
	d, sid := policySession(t, "policy \"patterns\" {\n  mode = \"enforce\"\n}\n")
	// The same flagged script under several names, written by a command
	// in which the policies read nothing alarming.
	setup := reviewFlagged + ` > run.sh && cp run.sh run.txt && cp run.sh run.py && cp run.sh run.js && chmod +x run.sh run.txt && ln -s run.sh link.sh`
	if _, aerr := reviewExecOutput(t, d, sid, "sh", "-c", setup); aerr != nil {
		t.Fatal(aerr)
	}
	// The control: the change's own case is denied.
	if out, aerr := reviewExecOutput(t, d, sid, "bash", "run.sh"); !errdefs.Is(aerr, errdefs.PolicyDenied) {
		t.Fatalf("control: bash run.sh: %v %q", aerr, out)
	}
	for _, tc := range []struct {
		name string
		argv []string
	}{
		// The file's extension, not the interpreter, picks the language:
		// .txt is no language (the patterns policy skips the file), .py
		// and .js are judged as python and JavaScript, never as shell.
		{"extension-txt", []string{"bash", "run.txt"}},
		{"extension-py", []string{"bash", "run.py"}},
		{"extension-js", []string{"sh", "run.js"}},
		{"shebang-txt", []string{"./run.txt"}},
		// An option that takes a value: the value is taken for the script.
		{"option-value", []string{"bash", "-o", "errexit", "run.sh"}},
		// Wrappers the commands policy reads through, scriptOf does not.
		{"env", []string{"env", "bash", "run.sh"}},
		{"timeout", []string{"timeout", "5", "bash", "run.sh"}},
		{"nice", []string{"nice", "bash", "run.sh"}},
		// The MCP exec tool's own form: every MCP exec is sh -c COMMAND.
		{"sh-c", []string{"sh", "-c", "bash run.sh"}},
		// A link in the workspace to the script (documented as not judged,
		// but the exec is then let through, not refused).
		{"link", []string{"bash", "link.sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, aerr := reviewExecOutput(t, d, sid, tc.argv...)
			if strings.Contains(out, "RAN-UNJUDGED") {
				t.Errorf("%q ran the script the patterns policy denies (err %v)", tc.argv, aerr)
			} else if !errdefs.Is(aerr, errdefs.PolicyDenied) {
				t.Logf("%q: neither denied nor ran: %v %q", tc.argv, aerr, out)
			}
		})
	}
}
