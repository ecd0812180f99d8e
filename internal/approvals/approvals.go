// Package approvals holds the requests a policy in mode "ask" put to a
// person: it keeps them in the store (a restart loses none), lets a
// request wait for its decision up to the approval timeout, takes the
// decisions of those the approvers let decide (never the requester's own,
// unless allowed), records the ones it refused, and expires what nobody
// decided. It knows nothing of what the requests run.
package approvals

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/state"
)

// Bounds: a client that floods requests a policy asks about cannot fill
// the list or the store.
const (
	maxPending = 256
	maxKept    = 1000 // decided approvals kept, newest; older ones go
)

// maxRefused bounds the refused decisions an approval keeps.
const maxRefused = 16

// Manager is the list of approvals. Safe for concurrent use.
type Manager struct {
	store     *state.Store
	timeout   time.Duration
	approvers principal.Approvers
	log       hclog.Logger

	mu      sync.Mutex
	all     map[string]*entry
	closing chan struct{} // closed at Close: waiters stop waiting
}

type entry struct {
	a       state.Approval
	decided chan struct{} // closed once it is no longer pending
	expiry  *time.Timer
}

// New loads the stored approvals: those still pending wait for a decision
// until their deadline as before the restart (no client waits for them
// any more), and those whose deadline passed meanwhile expire.
func New(store *state.Store, timeout time.Duration, approvers principal.Approvers, log hclog.Logger) (*Manager, error) {
	m := &Manager{store: store, timeout: timeout, approvers: approvers, log: log.Named("approvals"), all: map[string]*entry{}, closing: make(chan struct{})}
	list, bad, err := store.Approvals()
	if err != nil {
		return nil, fmt.Errorf("reading the approvals: %w", err)
	}
	for _, c := range bad {
		m.log.Error("skipping an approval that does not decode", "id", c.Key, "error", c.Err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range list {
		a.Waiting = false
		e := &entry{a: a, decided: make(chan struct{})}
		m.all[a.ID] = e
		if a.State != state.ApprovalPending {
			close(e.decided)
			continue
		}
		m.startExpiryLocked(e)
	}
	return m, nil
}

// startExpiryLocked expires e at its deadline.
func (m *Manager) startExpiryLocked(e *entry) {
	e.expiry = time.AfterFunc(time.Until(e.a.Deadline), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if e.a.State == state.ApprovalPending {
			m.endLocked(e, state.ApprovalExpired, "", fmt.Sprintf("nobody decided within %s", e.a.Deadline.Sub(e.a.Created).Round(time.Second)))
		}
	})
}

// Ask puts q (its request, findings and question) to a person and waits
// for the decision. asked is told the approval as soon as it is listed,
// so that the client can be told what it waits for. The approval comes
// back decided; a denied or expired one also as its error. A ctx that ends
// first (the client went) leaves the approval pending, to be decided and
// recorded without a client.
func (m *Manager) Ask(ctx context.Context, q state.Approval, asked func(state.Approval)) (state.Approval, error) {
	now := time.Now()
	q.ID, q.State, q.Created, q.Deadline, q.Waiting = "ap-"+state.NewID(now), state.ApprovalPending, now.UTC(), now.Add(m.timeout).UTC(), true
	e := &entry{a: q, decided: make(chan struct{})}
	m.mu.Lock()
	if n := m.pendingLocked(); n >= maxPending {
		m.mu.Unlock()
		return q, errdefs.Errorf(errdefs.ApprovalDenied, "%d requests already wait for approval: decide them (sandboxctl approvals) before asking for more", n)
	}
	m.all[e.a.ID] = e
	m.startExpiryLocked(e)
	m.saveLocked(e)
	m.pruneLocked()
	m.mu.Unlock()
	m.log.Info("a request waits for approval", "approval", q.ID, "kind", q.Kind, "language", q.Language,
		"policy", q.Question.Policy, "rule", q.Question.Rule)
	asked(q)
	gone := func() {
		m.mu.Lock()
		if e.a.State == state.ApprovalPending {
			e.a.Waiting = false
			m.saveLocked(e)
		}
		m.mu.Unlock()
	}
	select {
	case <-e.decided:
	case <-ctx.Done():
		gone()
		return q, errdefs.Errorf(errdefs.ApprovalDenied, "the client stopped waiting for approval %s", q.ID)
	case <-m.closing:
		gone()
		return q, errdefs.Errorf(errdefs.ShuttingDown, "sandboxd is stopping: approval %s stays listed, to be decided without this request", q.ID)
	}
	m.mu.Lock()
	a := e.a
	m.mu.Unlock()
	switch a.State {
	case state.ApprovalDenied:
		reason := ""
		if a.Reason != "" {
			reason = ": " + a.Reason
		}
		return a, errdefs.Errorf(errdefs.ApprovalDenied, "approval %s denied by %s%s", a.ID, a.By, reason)
	case state.ApprovalExpired:
		return a, errdefs.Errorf(errdefs.ApprovalTimeout, "approval %s: %s; it is denied", a.ID, a.Reason)
	}
	return a, nil
}

// Decide approves or denies a pending approval, as by, for reason. A
// decision by someone the approvers do not let decide it (the requester
// itself, unless allow_self) is refused, and the refusal recorded.
func (m *Manager) Decide(id string, approve bool, by state.Requester, reason string) (state.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.all[id]
	if !ok {
		return state.Approval{}, errdefs.Errorf(errdefs.NotFound, "no approval %q (sandboxctl approvals ls lists them)", id)
	}
	if e.a.State != state.ApprovalPending {
		return e.a, errdefs.Errorf(errdefs.Conflict, "approval %s is %s already (by %s)", id, e.a.State, orNobody(e.a.By))
	}
	if why := m.approvers.MayDecide(by, e.a.RequestedBy); why != "" {
		if len(e.a.Refused) < maxRefused {
			e.a.Refused = append(e.a.Refused, state.RefusedDecision{By: by, At: time.Now().UTC(), Reason: why})
			m.saveLocked(e)
		}
		m.log.Warn("a decision on an approval was refused", "approval", id, "by", principal.Describe(&by), "reason", why)
		return e.a, errdefs.Errorf(errdefs.Forbidden, "approval %s: %s", id, why)
	}
	st := state.ApprovalDenied
	if approve {
		st = state.ApprovalApproved
	}
	e.a.DecidedBy = &by
	m.endLocked(e, st, principal.Describe(&by), reason)
	m.log.Info("approval decided", "approval", id, "state", st, "by", e.a.By, "reason", reason, "client_waiting", e.a.Waiting)
	return e.a, nil
}

func orNobody(by string) string {
	if by == "" {
		return "nobody"
	}
	return by
}

// endLocked ends a pending approval in state st.
func (m *Manager) endLocked(e *entry, st, by, reason string) {
	now := time.Now().UTC()
	e.a.State, e.a.By, e.a.Reason, e.a.Decided = st, by, reason, &now
	if e.expiry != nil {
		e.expiry.Stop()
	}
	m.saveLocked(e)
	close(e.decided)
}

// saveLocked stores e as it is now.
func (m *Manager) saveLocked(e *entry) {
	if err := m.store.PutApproval(e.a); err != nil {
		m.log.Error("storing an approval failed", "approval", e.a.ID, "error", err)
	}
}

func (m *Manager) pendingLocked() int {
	n := 0
	for _, e := range m.all {
		if e.a.State == state.ApprovalPending {
			n++
		}
	}
	return n
}

// pruneLocked forgets the oldest decided approvals beyond maxKept.
func (m *Manager) pruneLocked() {
	var decided []string
	for id, e := range m.all {
		if e.a.State != state.ApprovalPending {
			decided = append(decided, id)
		}
	}
	if len(decided) <= maxKept {
		return
	}
	slices.Sort(decided) // ids sort by time
	for _, id := range decided[:len(decided)-maxKept] {
		delete(m.all, id)
		if err := m.store.DeleteApproval(id); err != nil {
			m.log.Error("forgetting an approval failed", "approval", id, "error", err)
		}
	}
}

// List returns the approvals in state which (every one when ""), newest
// first.
func (m *Manager) List(which string) []state.Approval {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []state.Approval{}
	for _, e := range m.all {
		if which == "" || e.a.State == which {
			out = append(out, e.a)
		}
	}
	slices.SortFunc(out, func(a, b state.Approval) int { return strings.Compare(b.ID, a.ID) })
	return out
}

// Get returns one approval.
func (m *Manager) Get(id string) (state.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.all[id]; ok {
		return e.a, nil
	}
	return state.Approval{}, errdefs.Errorf(errdefs.NotFound, "no approval %q (sandboxctl approvals ls lists them)", id)
}

// Close ends the waits (their requests end shutting_down) and the expiry
// timers; pending approvals stay stored, for the next start.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.closing:
	default:
		close(m.closing)
	}
	for _, e := range m.all {
		if e.expiry != nil {
			e.expiry.Stop()
		}
	}
}
