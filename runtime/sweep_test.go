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
