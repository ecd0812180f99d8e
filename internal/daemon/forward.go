package daemon

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/runtime"
)

// maxForwards bounds the connections forwarded into one session at once:
// each is a relay process in its sandbox (with the Go runtime's few
// threads), and the sandbox's pids, threads included, are its programs':
// a thousand connections must not leave the server none to accept them.
const maxForwards = 16

// forwardWait is how long a connection waits for one of its session's
// forwarded connections to end when all maxForwards are carried: a burst
// (a browser's, a client's pool) waits its turn, a flood is refused.
const forwardWait = 2 * time.Second

// forwards counts the connections forwarded into each session.
type forwards struct {
	mu    sync.Mutex
	n     map[string]int
	freed chan struct{} // closed and replaced whenever one ends
}

// take counts one more connection into session id, once there is room:
// false when none came within forwardWait (or ctx ended).
func (f *forwards) take(ctx context.Context, id string) bool {
	wait := time.NewTimer(forwardWait)
	defer wait.Stop()
	for {
		f.mu.Lock()
		if f.n == nil {
			f.n, f.freed = map[string]int{}, make(chan struct{})
		}
		if f.n[id] < maxForwards {
			f.n[id]++
			f.mu.Unlock()
			return true
		}
		freed := f.freed
		f.mu.Unlock()
		select {
		case <-freed:
		case <-wait.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (f *forwards) done(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[id]--; f.n[id] <= 0 {
		delete(f.n, id)
	}
	close(f.freed)
	f.freed = make(chan struct{})
}

// Forward carries one connection to port on a session's own loopback: in
// is what the client sends, out gets what the server answers, until
// either side ends it (or the session's TTL). The bytes travel over the
// supervisor's channel; the sandbox's network stays none. It returns why
// no connection was made (nothing listens there), empty when one was.
func (d *Daemon) Forward(ctx context.Context, id string, port int, in io.Reader, out func([]byte)) (string, error) {
	if port < 1 || port > 65535 {
		return "", errdefs.Errorf(errdefs.Invalid, "port %d: a number from 1 to 65535", port)
	}
	if !d.forwards.take(ctx, id) {
		return "", errdefs.Errorf(errdefs.TooManyConnections, "session %s has carried %d connections for %s: close some, or try again", id, maxForwards, forwardWait)
	}
	defer d.forwards.done(id)
	var refused string
	aerr := d.Sessions.Alongside(ctx, id, func(ss *sessions.Session, sb *runtime.Sandbox) (err error) {
		refused, err = sandbox.WorkspaceOf(sb).Forward(ctx, port, time.Until(ss.Record().ExpiresAt), in, out)
		if err != nil {
			return d.sandboxFailed("the session's sandbox", err)
		}
		return nil
	})
	return refused, aerr
}
