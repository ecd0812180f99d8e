package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// away is a runtime whose removals fail while it is away; only Remove and
// Close are called.
type away struct {
	Runtime
	mu      sync.Mutex
	away    bool
	removed []string
	closed  bool
}

func (a *away) Remove(ctx context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.away {
		return ErrUnavailable
	}
	a.removed = append(a.removed, id)
	return nil
}

func (a *away) Close() error { a.closed = true; return nil }

func (a *away) set(away bool) {
	a.mu.Lock()
	a.away = away
	a.mu.Unlock()
}

func (a *away) gone() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.removed...)
}

func TestSweepRetriesFailedRemovalsOnly(t *testing.T) {
	a := &away{away: true}
	s := Sweep(a, 10*time.Millisecond, hclog.NewNullLogger())
	if err := s.Remove(context.Background(), "lost"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a removal while away: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	a.set(false)
	if err := s.Remove(context.Background(), "fine"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200 && len(a.gone()) < 2; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a few more sweeps: nothing twice
	if got := a.gone(); len(got) != 2 || got[0] != "fine" || got[1] != "lost" {
		t.Fatalf("removed %v, want fine then lost, once each", got)
	}
	a.set(true)
	_ = s.Remove(context.Background(), "at close")
	if err := s.Close(); err != nil || !a.closed {
		t.Fatalf("close: %v, runtime closed %v", err, a.closed)
	}
}

// halfway is away whose Create makes a container and then fails, as one
// does when the engine goes away between create and start.
type halfway struct{ *away }

func (h halfway) Create(ctx context.Context, spec Spec) (sb *Sandbox, err error) {
	defer RemoveOnFailure(&err, "half-made", h.Remove)
	return nil, ErrUnavailable
}

// A container a failed Create could not remove is swept once the engine
// is back.
func TestSweepTakesWhatAFailedCreateLeft(t *testing.T) {
	a := &away{away: true}
	s := Sweep(halfway{a}, 10*time.Millisecond, hclog.NewNullLogger())
	defer s.Close()
	if _, err := s.Create(context.Background(), Spec{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("create: %v", err)
	}
	a.set(false)
	for i := 0; i < 200 && len(a.gone()) == 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if got := a.gone(); len(got) != 1 || got[0] != "half-made" {
		t.Fatalf("removed %v, want the half-made container", got)
	}
}
