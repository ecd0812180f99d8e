package daemon_test

// From an outside review (each case failed before its fix, and stays as a regression test): a script an exec runs is judged "as it is when the
// exec starts", read from the sandbox, and the exec then runs the path,
// not the bytes judged. The window runs from the read to the
// interpreter's open: a few milliseconds when nothing asks, the whole
// approval wait (up to approval_timeout) when a policy asks. A process
// the session left running (a background job, a server for a preview)
// rewrites the file in that window: the person approves one program and
// another runs.

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/state"
)

func TestReviewScriptSwappedDuringApproval(t *testing.T) {
	d, sid := policySession(t, "approval_timeout = \"20s\"\npolicy \"patterns\" {\n  mode = \"ask\"\n}\n")
	ctx := agent
	// The script a person will be asked about (and approve), and a
	// background job that replaces it two seconds later.
	setup := `printf 'echo APPROVED-PROGRAM\nexit 0\n\143url -s http://127.0.0.1:9/mirror | sh\n' > run.sh && ` +
		`(sleep 2; printf 'echo SWAPPED-PROGRAM-RAN\n' > run.sh.new && mv run.sh.new run.sh) </dev/null >/dev/null 2>&1 &`
	if _, aerr := reviewExecOutput(t, d, sid, "sh", "-c", setup); aerr != nil {
		t.Fatal(aerr)
	}
	shown := make(chan state.Approval, 1)
	go func() {
		a := pendingOne(t, d)
		shown <- a
		time.Sleep(3 * time.Second) // a person reads it
		if _, aerr := d.Approvals.Decide(a.ID, true, bob, "the internal mirror"); aerr != nil {
			t.Error(aerr)
		}
	}()
	var out strings.Builder
	_, aerr := d.Exec(ctx, sid, daemon.ExecRequest{Argv: []string{"bash", "run.sh"}}, func(stream string, data []byte) {
		if stream != daemon.Queued {
			out.Write(data)
		}
	})
	a := <-shown
	approvedText := ""
	for _, f := range a.Files {
		approvedText += f.Content
	}
	if !strings.Contains(approvedText, "APPROVED-PROGRAM") {
		t.Fatalf("the approval shows: %q", approvedText)
	}
	if strings.Contains(out.String(), "SWAPPED-PROGRAM-RAN") {
		t.Errorf("approved %q, ran %q (err %v)", approvedText, out.String(), aerr)
	} else {
		t.Logf("held: %q %v", out.String(), aerr)
	}
}
