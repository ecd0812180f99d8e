package approvals

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/state"
)

// alice decides in these tests, a person on the socket, what an agent
// (another uid) asks.
var (
	alice = state.Requester{Via: principal.ViaSocket, UID: new(uint32(1000)), User: "alice"}
	agent = state.Requester{Via: principal.ViaSocket, UID: new(uint32(2000)), User: "agent"}
)

// A pending approval whose client went survives a restart, still
// decidable, with no client waiting; one whose deadline passes while the
// daemon is down has expired when it comes back.
func TestPendingApprovalsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	store, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(store, time.Hour, principal.Approvers{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	ask := func(m *Manager) string {
		ctx, cancel := context.WithCancel(context.Background())
		var id string
		_, aerr := m.Ask(ctx, state.Approval{Kind: "run", Language: "bash", RequestedBy: &agent}, func(a state.Approval) { id = a.ID; cancel() })
		if aerr == nil || id == "" {
			t.Fatalf("a client that went: %v", aerr)
		}
		return id
	}
	kept := ask(m)
	m.timeout = 50 * time.Millisecond
	lapsed := ask(m)
	m.Close()
	store.Close()
	time.Sleep(100 * time.Millisecond) // past the second one's deadline, while down

	store, err = state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err = New(store, time.Hour, principal.Approvers{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if a, aerr := m.Get(kept); aerr != nil || a.State != state.ApprovalPending || a.Waiting {
		t.Errorf("the kept one: %+v %v", a, aerr)
	}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if a, _ := m.Get(lapsed); a.State == state.ApprovalExpired {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the lapsed one: %+v", a)
		}
	}
	if a, aerr := m.Decide(kept, true, alice, ""); aerr != nil || a.State != state.ApprovalApproved || a.By != "alice (uid 1000)" {
		t.Errorf("deciding after the restart: %+v %v", a, aerr)
	}
}

// A flood of questions stops at maxPending: the rest are denied at once.
func TestPendingApprovalsAreBounded(t *testing.T) {
	store, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err := New(store, time.Hour, principal.Approvers{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nobody waits: each stays pending
	for range maxPending {
		m.Ask(ctx, state.Approval{Kind: "run"}, func(state.Approval) {})
	}
	if _, aerr := m.Ask(ctx, state.Approval{Kind: "run"}, func(state.Approval) { t.Error("listed past the bound") }); aerr == nil || !errdefs.Is(aerr, errdefs.ApprovalDenied) {
		t.Errorf("one past the bound: %v", aerr)
	}
	if n := len(m.List(state.ApprovalPending)); n != maxPending {
		t.Errorf("%d pending", n)
	}
}
