package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
)

// Regression tests from an outside review of freezing.

func newBash(t *testing.T, d *daemon.Daemon) *state.Session {
	t.Helper()
	s, aerr := d.Sessions.Create(context.Background(), sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	return s
}

// A session deleted while its freeze waits for the engine stays deleted:
// the freeze does not store its record again.
func TestReviewDeleteDuringFreeze(t *testing.T) {
	d, rt := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Freezes: true, Extra: "sessions {\n  max = 2\n}"})
	s := newBash(t, d)
	entered, release := make(chan struct{}), make(chan struct{})
	rt.OnFreeze = func(string) { close(entered); <-release }
	done := make(chan error)
	go func() { _, err := d.Sessions.Freeze(context.Background(), s.ID); done <- err }()
	<-entered
	if err := d.Sessions.Delete(s.ID); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	stored, _, _ := d.Store().Sessions()
	for _, rec := range stored {
		if rec.ID == s.ID {
			t.Errorf("the deleted session is back in the store, %q", rec.State)
		}
	}
}

// A frozen session that cannot hibernate (no room) stays frozen: it does
// not run past sessions.max.
func TestReviewFailedHibernateOfFrozen(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Freezes: true, Extra: "sessions {\n  max = 1\n  max_hibernated = 0\n}"})
	a := newBash(t, d)
	if _, aerr := d.Sessions.Freeze(context.Background(), a.ID); aerr != nil {
		t.Fatal(aerr)
	}
	newBash(t, d)
	if _, aerr := d.Sessions.Pause(context.Background(), a.ID); aerr == nil {
		t.Fatal("a pause with max_hibernated = 0 succeeded")
	}
	if c := d.Sessions.Counts(); c.Active != 1 || c.Frozen != 1 {
		t.Errorf("counts after the failed pause: %+v", c)
	}
}

// Under memory pressure with no room to hibernate, frozen sessions stay
// frozen.
func TestReviewMemoryPressureWithoutRoom(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Freezes: true,
		Extra: "sessions {\n  max = 1\n  max_hibernated = 0\n  memory_low = \"1000TiB\"\n}"})
	for range 3 {
		newBash(t, d) // each create past max = 1 freezes the one before
	}
	time.Sleep(3 * time.Second)
	if c := d.Sessions.Counts(); c.Active != 1 || c.Frozen != 2 {
		t.Errorf("after 3 s of memory pressure: %+v", c)
	}
}

// max_frozen = 0 freezes nothing: an idle session is not frozen, so not
// hibernated before idle_timeout either.
func TestReviewMaxFrozenZero(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Freezes: true, Extra: "sessions {\n  max_frozen = 0\n  freeze_after = \"1s\"\n  idle_timeout = \"10m\"\n}"})
	s := newBash(t, d)
	time.Sleep(4 * time.Second)
	if g, _ := d.Sessions.Get(s.ID); g.State != state.SessionActive {
		t.Errorf("idle_timeout 10m, max_frozen 0: %s after 4 s", g.State)
	}
	if d.Sessions.CanFreeze(s.ID) {
		t.Error("CanFreeze with max_frozen = 0")
	}
}
