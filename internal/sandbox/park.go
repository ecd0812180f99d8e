package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/runtime"
)

// Idle pool containers under gVisor are frozen once they have waited
// parkAfter (parked): a gVisor sandbox's sentry spends about 4% of a core
// idle, a frozen one none, and a thaw as one leaves the pool takes about
// 2 ms, which a steady stream of runs never pays. Under runc an idle
// container spends no CPU: it waits running.

// parkAfter is how long an idle container waits running before it parks.
const parkAfter = 2 * time.Second

// parking is an idle container's way to its freeze.
type parking struct {
	timer  *time.Timer
	mu     sync.Mutex // held by the freeze: a thaw waits for it
	frozen bool
	left   bool // it left the pool: no freeze
}

// parks says whether l's idle containers are frozen while they wait.
func (l *kind) parks() bool { return l.Config.Runtime == "runsc" }

// park has sb, about to wait idle in l's pool, frozen after parkAfter,
// where l's containers park. A container that cannot freeze waits
// running.
func (p *Provider) park(l *kind, sb *runtime.Sandbox) {
	if !l.parks() {
		return
	}
	pk := &parking{}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.timer = time.AfterFunc(parkAfter, func() {
		pk.mu.Lock()
		defer pk.mu.Unlock()
		if pk.left {
			return
		}
		sb.Froze()
		if err := p.freeze(p.closing, sb); err != nil {
			sb.Thawed()
			p.log.Debug("an idle container could not be frozen; it waits running", "container_id", runtime.ShortID(sb.ID), "error", err)
			return
		}
		pk.frozen = true
	})
	p.parked.Store(sb, pk)
}

// unpark has sb leave its pool running: its freeze is called off, or it
// is thawed.
func (p *Provider) unpark(ctx context.Context, sb *runtime.Sandbox) error {
	v, parked := p.parked.LoadAndDelete(sb)
	if !parked {
		return nil
	}
	pk := v.(*parking)
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.timer.Stop()
	pk.left = true
	if !pk.frozen {
		return nil
	}
	if err := p.Thaw(ctx, sb.ID); err != nil {
		return err
	}
	sb.Thawed()
	return nil
}
