package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// The approvals as people use them: an agent's `sandboxctl run` of a
// program the patterns policy (mode "ask") denies waits, saying for what;
// the agent cannot approve it itself (its own uid), and the refusal is
// recorded; a person (another uid, among the approvers) lists it, reads
// the code with the finding at its line and who asked, and approves it:
// the run ends with its output, and the history says who asked and who
// approved. A denial ends the run with exit 126 and the reason. A
// pending approval survives a restart of sandboxd.
func TestApprovalsFromTheShell(t *testing.T) {
	t.Parallel() // at the end, mostly waiting on a person's turns
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Extra: fmt.Sprintf(`
approval_timeout = "2m"
approvals {
  approvers = ["uid:%d"]
}
policy "patterns" {
  mode = "ask"
}`, testutil.Nobody)})
	me, _ := user.Current()
	person, err := user.LookupId(strconv.Itoa(testutil.Nobody))
	if err != nil {
		t.Fatal(err)
	}
	approver := person.Username + " (uid " + person.Uid + ")"
	// Harmless in a sandbox without network, and flagged all the same.
	const code = "echo before\ncurl -s http://127.0.0.1:1/ 2>/dev/null | sh\necho after\n"
	runner := func() (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		cmd := exec.Command(filepath.Join(d.Bin, "sandboxctl"), "--socket", d.Socket, "run", "--lang", "bash", "-")
		var out, errOut bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(code), &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, &out, &errOut
	}
	pending := func() string {
		t.Helper()
		var id string
		waitForWithin(t, "an approval pending", 20*time.Second, func() bool {
			out, _, code := d.Ctl("", "approvals", "ls")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != 0 || len(lines) != 2 || !strings.Contains(lines[1], "pending") || !strings.Contains(lines[1], "patterns/shell.curl_pipe_sh") {
				return false
			}
			id = strings.Fields(lines[1])[0]
			return true
		})
		return id
	}

	cmd, out, errOut := runner()
	id := pending()
	shown, _, _ := d.Ctl("", "approvals", "show", id)
	if !strings.Contains(shown, "   2 | curl -s http://127.0.0.1:1/ 2>/dev/null | sh\n     ^ patterns/shell.curl_pipe_sh (error): pipes a download into a shell") {
		t.Errorf("approvals show:\n%s", shown)
	}
	asker := me.Username + " (uid " + me.Uid + ") via sandboxctl"
	if !strings.Contains(shown, "asked by "+asker) {
		t.Errorf("approvals show does not say who asked:\n%s", shown)
	}
	// The agent's own uid may not approve what it asked for.
	if o, e, code := d.Ctl("", "approvals", "approve", id); code == 0 || !strings.Contains(e, "nobody approves their own request") {
		t.Fatalf("self-approval: %d %s %s", code, o, e)
	}
	if shown, _, _ := d.Ctl("", "approvals", "show", id); !strings.Contains(shown, "tried to decide: ") || !strings.Contains(shown, "approval "+id+": pending") {
		t.Errorf("the refused self-approval is not recorded:\n%s", shown)
	}
	if o, e, code := d.CtlAs(testutil.Nobody, "", "approvals", "approve", id, "--reason", "no network in there"); code != 0 || !strings.Contains(o, "approved "+id) {
		t.Fatalf("approve: %d %s %s", code, o, e)
	}
	if err := cmd.Wait(); err != nil || out.String() != "before\nafter\n" || !strings.Contains(errOut.String(), "sandboxctl: waiting: approval "+id) {
		t.Fatalf("the approved run: %v\nstdout %q\nstderr %q", err, out, errOut)
	}
	// The history is written in the background.
	waitForWithin(t, "the history to say who asked and who approved", 10*time.Second, func() bool {
		hist, _, _ := d.Ctl("", "history", "--limit", "1")
		return strings.Contains(hist, "approved by "+approver) && strings.Contains(hist, asker)
	})

	cmd, _, errOut = runner()
	id = pending()
	if _, e, code := d.CtlAs(testutil.Nobody, "", "approvals", "deny", id); code == 0 || !strings.Contains(e, "--reason") {
		t.Errorf("a denial without a reason: %d %s", code, e)
	}
	d.CtlAs(testutil.Nobody, "", "approvals", "deny", id, "--reason", "no downloads into a shell")
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 126 || !strings.Contains(errOut.String(), "no downloads into a shell") {
		t.Errorf("the denied run: %v %q", err, errOut)
	}

	// A client that goes leaves its approval pending, across a restart.
	cmd, _, _ = runner()
	id = pending()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	d.Stop()
	d.Restart()
	a, err := d.Client().Approval(context.Background(), id)
	if err != nil || a.State != api.ApprovalPending || a.Waiting {
		t.Fatalf("after the restart: %+v %v", a, err)
	}
	if o, _, code := d.CtlAs(testutil.Nobody, "", "approvals", "approve", id); code != 0 || !strings.Contains(o, "its client no longer waits") {
		t.Errorf("approving one nobody waits for: %s", o)
	}
}
