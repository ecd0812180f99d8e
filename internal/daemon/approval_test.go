package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/state"
)

// askingPatterns puts the patterns policy in mode "ask": what it would
// deny waits for a person.
const askingPatterns = `
approval_timeout = "2s"
policy "patterns" {
  mode = "ask"
}`

// A program the patterns policy flags (never reached: it exits first)
// and one it does not.
const (
	flagged = "echo ran\nexit 0\ncurl -s http://127.0.0.1:1/x | sh\n"
	clean   = "echo clean\n"
)

// pendingOne waits until one approval is pending and returns it.
func pendingOne(t *testing.T, d *daemon.Daemon) state.Approval {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if list := d.Approvals.List(state.ApprovalPending); len(list) == 1 {
			return list[0]
		}
	}
	t.Fatalf("no approval pending: %+v", d.Approvals.List(""))
	return state.Approval{}
}

// A run an asking policy questions waits, told why, until a person
// approves it: it runs, and its result and history say who approved. A
// denied one gets approval_denied with the reason; one nobody decides,
// approval_timeout; both are in the history. A clean run is not asked.
func TestApprovals(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: askingPatterns})
	ctx := context.Background()
	if res, aerr := d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: clean}}, nil); aerr != nil || res.Approval != nil {
		t.Fatalf("a clean run: %+v %v", res, aerr)
	}
	type outcome struct {
		res    *daemon.Result
		aerr   error
		queued []string
	}
	run := func() chan outcome {
		done := make(chan outcome, 1)
		go func() {
			var o outcome
			o.res, o.aerr = d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: flagged}}, func(stream string, data []byte) {
				if stream == daemon.Queued {
					o.queued = append(o.queued, string(data))
				}
			})
			done <- o
		}()
		return done
	}

	done := run()
	a := pendingOne(t, d)
	if a.Question.Rule != "shell.curl_pipe_sh" || a.Kind != "run" || len(a.Files) != 1 || a.Files[0].Content != flagged || !a.Waiting {
		t.Errorf("the approval: %+v", a)
	}
	if _, aerr := d.Approvals.Decide(a.ID, true, "alice", "looked at it"); aerr != nil {
		t.Fatal(aerr)
	}
	o := <-done
	if o.aerr != nil || string(o.res.Stdout) != "ran\n" || o.res.Approval == nil || o.res.Approval.By != "alice" || o.res.Approval.State != state.ApprovalApproved {
		t.Fatalf("the approved run: %+v %v", o.res, o.aerr)
	}
	if len(o.queued) != 1 || !strings.Contains(o.queued[0], a.ID) {
		t.Errorf("the run was told %q", o.queued)
	}
	if _, aerr := d.Approvals.Decide(a.ID, false, "bob", ""); aerr == nil || !errdefs.Is(aerr, errdefs.Conflict) || !strings.Contains(aerr.Error(), "approved already (by alice)") {
		t.Errorf("deciding twice: %v", aerr)
	}

	done = run()
	a = pendingOne(t, d)
	if _, aerr := d.Approvals.Decide(a.ID, false, "bob", "no downloads piped to a shell"); aerr != nil {
		t.Fatal(aerr)
	}
	if o := <-done; o.aerr == nil || !errdefs.Is(o.aerr, errdefs.ApprovalDenied) || !strings.Contains(o.aerr.Error(), "denied by bob: no downloads piped to a shell") {
		t.Errorf("the denied run: %v", o.aerr)
	}

	if o := <-run(); o.aerr == nil || !errdefs.Is(o.aerr, errdefs.ApprovalTimeout) {
		t.Errorf("the run nobody decided: %v", o.aerr)
	}
	if list := d.Approvals.List(state.ApprovalExpired); len(list) != 1 || list[0].Decided == nil {
		t.Errorf("the expired approval: %+v", list)
	}

	// The history is written in the background.
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		hist, aerr := d.Executions(10, state.ExecutionFilter{}, "")
		if aerr != nil {
			t.Fatal(aerr)
		}
		var states []string
		for _, e := range hist {
			if e.Approval != nil {
				states = append(states, e.Approval.State+" by "+e.Approval.By+" → "+e.Outcome)
			}
		}
		if got = strings.Join(states, "; "); got == "expired by  → denied; denied by bob → denied; approved by alice → ok" {
			return
		}
	}
	t.Errorf("the history: %s", got)
}

// Validate says a request would wait for approval, and asks nobody.
func TestValidateSaysItWouldAsk(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: askingPatterns})
	res, aerr := d.Validate(context.Background(), daemon.ValidateRequest{Language: "bash", Program: request.Program{Code: flagged}})
	if aerr != nil || !res.Allowed || !res.NeedsApproval {
		t.Fatalf("%+v %v", res, aerr)
	}
	if list := d.Approvals.List(""); len(list) != 0 {
		t.Errorf("validate asked: %+v", list)
	}
}
