// Package drain is the daemon's admission gate: requests enter and leave
// it, and shutdown closes it, then waits for the requests inside.
package drain

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/sandboxd/sandboxd/internal/errdefs"
)

// Gate admits requests until it closes. The zero value is open.
type Gate struct {
	closed   atomic.Bool
	inflight sync.WaitGroup
	n        atomic.Int64
}

// Enter admits a request, or refuses it once the gate is closed; an
// admitted request calls Leave when done.
func (g *Gate) Enter() error {
	if g.closed.Load() {
		return errdefs.Errorf(errdefs.ShuttingDown, "sandboxd is shutting down; retry against the next instance")
	}
	g.inflight.Add(1)
	g.n.Add(1)
	return nil
}

// Leave ends an admitted request.
func (g *Gate) Leave() {
	g.n.Add(-1)
	g.inflight.Done()
}

// InFlight counts the requests inside.
func (g *Gate) InFlight() int64 { return g.n.Load() }

// Closing reports whether the gate refuses requests.
func (g *Gate) Closing() bool { return g.closed.Load() }

// Close refuses new requests and waits for those inside, until ctx ends;
// it reports whether they all left.
func (g *Gate) Close(ctx context.Context) bool {
	g.closed.Store(true)
	done := make(chan struct{})
	go func() { g.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
