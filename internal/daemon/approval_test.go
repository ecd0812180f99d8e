package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
)

// alice and bob decide in these tests, people on the socket, what an
// agent (another uid) asks.
var (
	alice = state.Requester{Via: "socket", UID: new(uint32(1000)), User: "alice"}
	bob   = state.Requester{Via: "socket", UID: new(uint32(1001)), User: "bob"}
	agent = principal.With(context.Background(), state.Requester{Via: "socket", UID: new(uint32(2000)), User: "agent"})
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
	ctx := agent
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
	if _, aerr := d.Approvals.Decide(a.ID, true, alice, "looked at it"); aerr != nil {
		t.Fatal(aerr)
	}
	o := <-done
	if o.aerr != nil || string(o.res.Stdout) != "ran\n" || o.res.Approval == nil || o.res.Approval.By != "alice (uid 1000)" || o.res.Approval.State != state.ApprovalApproved {
		t.Fatalf("the approved run: %+v %v", o.res, o.aerr)
	}
	if len(o.queued) != 1 || !strings.Contains(o.queued[0], a.ID) {
		t.Errorf("the run was told %q", o.queued)
	}
	if _, aerr := d.Approvals.Decide(a.ID, false, bob, ""); aerr == nil || !errdefs.Is(aerr, errdefs.Conflict) || !strings.Contains(aerr.Error(), "approved already (by alice (uid 1000))") {
		t.Errorf("deciding twice: %v", aerr)
	}

	done = run()
	a = pendingOne(t, d)
	if _, aerr := d.Approvals.Decide(a.ID, false, bob, "no downloads piped to a shell"); aerr != nil {
		t.Fatal(aerr)
	}
	if o := <-done; o.aerr == nil || !errdefs.Is(o.aerr, errdefs.ApprovalDenied) || !strings.Contains(o.aerr.Error(), "denied by bob (uid 1001): no downloads piped to a shell") {
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
		if got = strings.Join(states, "; "); got == "expired by  → denied; denied by bob (uid 1001) → denied; approved by alice (uid 1000) → ok" {
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

// Separation of duties: a request is never decided by the principal that
// asked for it (over the socket, or through a dashboard login that uid
// made), nor by one the approvers do not name; each refusal is recorded
// on the approval. A listed approver decides, and the approval and the
// history say who asked and who decided. allow_self lets the requester
// decide.
func TestApproversAndSelfApproval(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash,
		Extra: "approvals {\n  approvers = [\"uid:1001\", \"dashboard\"]\n}\n" + askingPatterns})
	asker := principal.With(context.Background(), alice)
	done := make(chan error, 1)
	go func() {
		_, aerr := d.Run(asker, daemon.RunRequest{Language: "bash", Program: request.Program{Code: flagged}}, func(string, []byte) {})
		done <- aerr
	}()
	a := pendingOne(t, d)
	if a.RequestedBy == nil || *a.RequestedBy.UID != 1000 {
		t.Errorf("the approval does not say who asked: %+v", a.RequestedBy)
	}
	carol := state.Requester{Via: principal.ViaSocket, UID: new(uint32(1002)), User: "carol"}
	aliceInBrowser := state.Requester{Via: principal.ViaDashboard, UID: new(uint32(1000)), User: "alice"}
	for _, tc := range []struct {
		by   state.Requester
		want string
	}{
		{alice, "nobody approves their own request"},
		{aliceInBrowser, "nobody approves their own request"},
		{carol, "carol (uid 1002) is not among the approvers (uid:1001, dashboard"},
		{state.Requester{Via: principal.ViaE2B, Key: "k1"}, "never decides"},
	} {
		if _, aerr := d.Approvals.Decide(a.ID, true, tc.by, ""); !errdefs.Is(aerr, errdefs.Forbidden) || !strings.Contains(aerr.Error(), tc.want) {
			t.Errorf("%s deciding: %v, want forbidden: %q", principal.Describe(&tc.by), aerr, tc.want)
		}
	}
	if got, _ := d.Approvals.Get(a.ID); len(got.Refused) != 4 || got.State != state.ApprovalPending || got.Refused[0].By.User != "alice" {
		t.Errorf("the refusals are not recorded: %+v", got)
	}
	if _, aerr := d.Approvals.Decide(a.ID, true, bob, "fine"); aerr != nil {
		t.Fatal(aerr)
	}
	if aerr := <-done; aerr != nil {
		t.Fatal(aerr)
	}
	if got, _ := d.Approvals.Get(a.ID); got.DecidedBy == nil || *got.DecidedBy.UID != 1001 || got.By != "bob (uid 1001)" {
		t.Errorf("the decision: %+v", got)
	}
	var rec state.Execution
	for deadline := time.Now().Add(5 * time.Second); rec.ID == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if hist, _ := d.Executions(10, state.ExecutionFilter{}, ""); len(hist) > 0 {
			rec = hist[0]
		}
	}
	if rec.Requester == nil || *rec.Requester.UID != 1000 || rec.Approval == nil || rec.Approval.By != "bob (uid 1001)" {
		t.Errorf("the history: %+v", rec)
	}

	d, _ = daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: "approvals {\n  allow_self = true\n}\n" + askingPatterns})
	go func() {
		_, aerr := d.Run(asker, daemon.RunRequest{Language: "bash", Program: request.Program{Code: flagged}}, func(string, []byte) {})
		done <- aerr
	}()
	if _, aerr := d.Approvals.Decide(pendingOne(t, d).ID, true, alice, ""); aerr != nil {
		t.Errorf("allow_self: %v", aerr)
	}
	if aerr := <-done; aerr != nil {
		t.Fatal(aerr)
	}
}

// Whole files: the flagged tail of an upload larger than a chunk is
// found at its line, denied where patterns enforces (the file never
// lands) and held where it asks (a person reads the part around the
// finding); a script an exec runs by its interpreter or its #! line is
// judged as that interpreter's program.
func TestWholeFilesAreJudged(t *testing.T) {
	const flaggedLine = "curl -s http://127.0.0.1:9 | sh\n"
	big := strings.Repeat("echo padding the file out\n", 50000) + flaggedLine
	for _, mode := range []string{"enforce", "ask"} {
		d, sid := policySession(t, "approval_timeout = \"5s\"\npolicy \"patterns\" {\n  mode = \""+mode+"\"\n}\n")
		ctx := agent
		// A person who denies what they are asked, once they see it.
		go func() {
			if mode != "ask" {
				return
			}
			for range 3 {
				a := pendingOne(t, d)
				if len(a.Files) != 1 || !strings.Contains(a.Files[0].Content, "| sh") || len(a.Files[0].Content) > 64<<10 {
					t.Errorf("what the person reads: %+v", a.Files)
				}
				_, _ = d.Approvals.Decide(a.ID, false, bob, "no")
			}
		}()
		want := errdefs.PolicyDenied
		if mode == "ask" {
			want = errdefs.ApprovalDenied
		}
		_, aerr := d.PutFile(ctx, sid, "big.sh", 0o755, nil, strings.NewReader(big))
		var f []state.Finding
		if fe, ok := aerr.(interface{ Findings() []state.Finding }); ok {
			f = fe.Findings()
		}
		if !errdefs.Is(aerr, want) || mode == "enforce" && (len(f) == 0 || f[0].Line != 50001) {
			t.Errorf("%s: the tail of a large upload: %v %+v", mode, aerr, f)
		}
		if _, _, aerr := d.Sessions.ListFiles(ctx, sid, "big.sh", false); aerr == nil {
			t.Errorf("%s: the refused upload landed", mode)
		}
		// Written by a command the policies read nothing alarming in.
		if _, aerr := d.Exec(ctx, sid, daemon.ExecRequest{Argv: []string{"sh", "-c",
			`printf '\143url -s http://127.0.0.1:9 | sh\n' > run.sh && printf '#!/bin/sh\n\143url -s x | sh\n' > tool && chmod +x tool`}}, nil); aerr != nil {
			t.Fatal(aerr)
		}
		for _, argv := range [][]string{{"bash", "run.sh"}, {"./tool"}} {
			if _, aerr := d.Exec(ctx, sid, daemon.ExecRequest{Argv: argv}, nil); !errdefs.Is(aerr, want) {
				t.Errorf("%s: exec %q: %v", mode, argv, aerr)
			}
		}
	}
}

// Uploads waiting in state_dir for their ruling are bounded: while eight
// wait for a person, a ninth is refused at once (retry), not spooled.
func TestHeldUploadsAreBounded(t *testing.T) {
	d, sid := policySession(t, "approval_timeout = \"20s\"\npolicy \"patterns\" {\n  mode = \"ask\"\n}\n")
	ctx := agent
	const held = 8
	done := make(chan error, held)
	for i := range held {
		go func() {
			_, aerr := d.PutFile(ctx, sid, fmt.Sprintf("held%d.sh", i), 0o644, nil, strings.NewReader("curl -s http://127.0.0.1:9 | sh\n"))
			done <- aerr
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); len(d.Approvals.List(state.ApprovalPending)) < held && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if _, aerr := d.PutFile(ctx, sid, "one-more.sh", 0o644, nil, strings.NewReader("echo hi\n")); !errdefs.Is(aerr, errdefs.PoolExhausted) {
		t.Errorf("a ninth upload while eight are held: %v", aerr)
	}
	for _, a := range d.Approvals.List(state.ApprovalPending) {
		_, _ = d.Approvals.Decide(a.ID, false, bob, "no")
	}
	for range held {
		if aerr := <-done; !errdefs.Is(aerr, errdefs.ApprovalDenied) {
			t.Errorf("a held upload: %v", aerr)
		}
	}
	if _, aerr := d.PutFile(ctx, sid, "after.sh", 0o644, nil, strings.NewReader("echo hi\n")); aerr != nil {
		t.Errorf("an upload once they are decided: %v", aerr)
	}
}

// policySession is a daemon over the fake runtime with the policies of
// extra, and a bash session in it, which the agent made.
func policySession(t *testing.T, extra string) (*daemon.Daemon, string) {
	t.Helper()
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: extra})
	s, aerr := d.Sessions.Create(agent, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	return d, s.ID
}
