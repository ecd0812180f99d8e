// Package drain is the daemon's admission gate: requests enter and leave
// it, and shutdown closes it, then waits for the requests inside.
package drain

import (
	"context"
	"sync"

	"github.com/sandboxd/sandboxd/internal/errdefs"
)

// Gate admits requests until it closes. The zero value is open.
type Gate struct {
	mu     sync.Mutex
	closed bool
	n      int64
	empty  chan struct{} // closed when the gate is closed and n is 0
}

// Enter admits a request, or refuses it once the gate is closed; an
// admitted request calls Leave when done.
func (g *Gate) Enter() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errdefs.Errorf(errdefs.ShuttingDown, "sandboxd is shutting down; retry against the next instance")
	}
	g.n++
	return nil
}

// Leave ends an admitted request.
func (g *Gate) Leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	g.signal()
}

// signal closes empty once the last request has left a closed gate.
func (g *Gate) signal() {
	if g.closed && g.n == 0 && g.empty != nil {
		select {
		case <-g.empty:
		default:
			close(g.empty)
		}
	}
}

// InFlight counts the requests inside.
func (g *Gate) InFlight() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// Closing reports whether the gate refuses requests.
func (g *Gate) Closing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Close refuses new requests and waits for those inside, until ctx ends;
// it reports whether they all left. It may be called more than once.
func (g *Gate) Close(ctx context.Context) bool {
	g.mu.Lock()
	g.closed = true
	if g.empty == nil {
		g.empty = make(chan struct{})
	}
	g.signal()
	empty := g.empty
	g.mu.Unlock()
	select {
	case <-empty:
		return true
	case <-ctx.Done():
		return false
	}
}
