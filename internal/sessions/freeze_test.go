package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
)

// Freezing's bookkeeping (the fake runtime marks sandboxes frozen and
// stops nothing; e2e/freeze_test.go freezes real ones): a frozen session
// leaves sessions.max, a create past it freezes the least recently used,
// any use thaws, and one that cannot freeze is told so.
func TestFreezeBookkeeping(t *testing.T) {
	d, rt := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Freezes: true, Extra: "sessions {\n  max = 1\n}"})
	ctx := context.Background()
	a, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	// The create past sessions.max freezes a, the least recently used.
	b, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	got, _ := d.Sessions.Get(a.ID)
	if got.State != state.SessionFrozen || got.FrozenAt == nil || !rt.Frozen(a.ContainerID) {
		t.Fatalf("a after b's create: %+v (frozen in the runtime: %v)", got, rt.Frozen(a.ContainerID))
	}
	if c := d.Sessions.Counts(); c.Active != 1 || c.Frozen != 1 {
		t.Fatalf("counts: %+v", c)
	}
	// Using a thaws it, and freezes b to make room.
	if aerr := d.Sessions.Use(ctx, a.ID, func(*sessions.Session, *runtime.Sandbox) error { return nil }); aerr != nil {
		t.Fatal(aerr)
	}
	if got, _ := d.Sessions.Get(a.ID); got.State != state.SessionActive || rt.Frozen(a.ContainerID) {
		t.Fatalf("a after a use: %+v", got)
	}
	if got, _ := d.Sessions.Get(b.ID); got.State != state.SessionFrozen {
		t.Fatalf("b after a's thaw: %+v", got)
	}
	// Freezing twice changes nothing; a hibernated session stays so.
	if _, aerr := d.Sessions.Freeze(ctx, b.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Sessions.Pause(ctx, b.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if got, aerr := d.Sessions.Freeze(ctx, b.ID); aerr != nil || got.State != state.SessionHibernated {
		t.Fatalf("freezing a hibernated session: %+v %v", got, aerr)
	}
	// A session in use is refused, unless the freeze is E2B's.
	hold, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = d.Sessions.Alongside(ctx, a.ID, func(*sessions.Session, *runtime.Sandbox) error {
			close(hold)
			<-release
			return nil
		})
	}()
	<-hold
	if _, aerr := d.Sessions.Freeze(ctx, a.ID); !errdefs.Is(aerr, errdefs.Conflict) {
		t.Fatalf("freezing a session in use: %v", aerr)
	}
	if got, aerr := d.Sessions.FreezeInUse(ctx, a.ID); aerr != nil || got.State != state.SessionFrozen {
		t.Fatalf("freezing a session in use, as E2B's pause does: %+v %v", got, aerr)
	}
	close(release)
	if aerr := d.Sessions.Delete(a.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if c := d.Sessions.Counts(); c.Active != 0 || c.Frozen != 0 {
		t.Fatalf("counts after the delete: %+v", c)
	}
}

// A runtime that cannot freeze: the session is told so, and one idle
// hibernates at idle_timeout as before.
func TestFreezeUnsupported(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: "sessions {\n  freeze_after = \"1s\"\n}"})
	ctx := context.Background()
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Sessions.Freeze(ctx, s.ID); !errdefs.Is(aerr, errdefs.Conflict) || d.Sessions.CanFreeze(s.ID) {
		t.Fatalf("freezing where the runtime cannot: %v", aerr)
	}
	if got, _ := d.Sessions.Get(s.ID); got.State != state.SessionActive {
		t.Fatalf("after a refused freeze: %+v", got)
	}
}

// Under memory pressure (memory_low above what any host has), frozen
// sessions go to disk, and running ones stay.
func TestFrozenSessionsHibernateUnderMemoryPressure(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Freezes: true,
		Extra: "sessions {\n  memory_low = \"1000TiB\"\n  freeze_after = \"0s\"\n}"})
	ctx := context.Background()
	frozen, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	running, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Sessions.Freeze(ctx, frozen.ID); aerr != nil {
		t.Fatal(aerr)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got, _ := d.Sessions.Get(frozen.ID); got.State == state.SessionHibernated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the frozen session did not hibernate under memory pressure")
		}
	}
	if got, _ := d.Sessions.Get(running.ID); got.State != state.SessionActive {
		t.Fatalf("a running session under memory pressure: %+v", got)
	}
}

// A burst of creates past sessions.max: each makes room by freezing one
// that is running, and one that finds every running session being frozen
// by another create waits for a place instead of failing.
func TestBurstPastTheMaxFreezesAndWaits(t *testing.T) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 0
    max      = 24
  }
}`, Freezes: true, Extra: "sessions {\n  max = 2\n}"})
	ctx := context.Background()
	for range 2 {
		if _, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"}); aerr != nil {
			t.Fatal(aerr)
		}
	}
	errs := make(chan error, 12)
	for range cap(errs) {
		go func() {
			_, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
			errs <- aerr
		}()
	}
	for range cap(errs) {
		if aerr := <-errs; aerr != nil {
			t.Error(aerr)
		}
	}
	if c := d.Sessions.Counts(); c.Active > 2 || c.Active+c.Frozen != 14 {
		t.Errorf("counts: %+v", c)
	}
}
