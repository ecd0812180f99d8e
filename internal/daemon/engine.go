package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/runtime"
)

// Engine health as a monitor sees it: probed, not inferred from the last
// request that failed, and never older than probeFresh plus probeTimeout
// (5 s): a stopped engine turns health degraded, and one back turns it ok,
// within that, with no run needed to find out.
const (
	probeFresh   = 2 * time.Second // a probe this recent answers for the engine
	probeTimeout = 3 * time.Second // an engine slower than this is not healthy
)

// engineProbe caches the engine's answer to a ping. One probe runs at a
// time; a health check that finds it running waits for its answer.
type engineProbe struct {
	ping func(context.Context) (runtime.EngineInfo, error)
	now  func() time.Time

	mu   sync.Mutex
	at   time.Time
	info runtime.EngineInfo
	err  error
}

func newEngineProbe(ping func(context.Context) (runtime.EngineInfo, error)) *engineProbe {
	return &engineProbe{ping: ping, now: time.Now}
}

// get returns the engine's health, probing it again if the last answer
// is older than probeFresh.
func (p *engineProbe) get(ctx context.Context) (runtime.EngineInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && p.now().Sub(p.at) < probeFresh {
		return p.info, p.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	p.info, p.err = p.ping(ctx)
	p.at = p.now()
	return p.info, p.err
}
