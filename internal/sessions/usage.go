package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/runtime"
)

// What a session's sandbox uses is sampled every usageEvery while it is
// awake, and the last usageKept samples (five minutes) are kept in memory:
// enough for a sparkline and `sandboxctl session top`, little enough that
// a thousand sessions cost a few megabytes.
const (
	usageEvery = 2 * time.Second
	usageKept  = 150
	// A sample taken in the background may wait sampleTimeout; one a
	// client asks for, askTimeout: a sandbox whose program keeps every
	// core busy (gVisor's kernel shares them) can take seconds to answer,
	// and the client wants the figure, not an error.
	sampleTimeout = 2 * time.Second
	askTimeout    = 10 * time.Second
	// usageParallel bounds the sandboxes asked at once.
	usageParallel = 8
)

// Metrics is what a session's sandbox uses now and did over the last
// minutes. Asking neither wakes a hibernated session nor keeps one from
// idling.
func (m *Sessions) Metrics(ctx context.Context, id string) (*stats.SessionUsage, error) {
	ss, aerr := m.find(id)
	if aerr != nil {
		return nil, aerr
	}
	out := &stats.SessionUsage{Session: id, Language: ss.Lang.Name(), Limits: ss.Limits, Every: usageEvery}
	if sb := ss.running(); sb != nil {
		now, err := m.sample(ctx, ss, sb, askTimeout)
		if err != nil {
			return nil, fmt.Errorf("reading what session %s uses: %w", id, err)
		}
		out.Now = &now
	}
	ss.mu.Lock()
	out.Series = append([]stats.SandboxUsage{}, ss.usage...)
	ss.mu.Unlock()
	return out, nil
}

// Usage is the latest sample of every awake session, by language: what
// Prometheus is told, summed, so that its series stay few.
func (m *Sessions) Usage() map[string][]stats.SandboxUsage {
	out := map[string][]stats.SandboxUsage{}
	for _, ss := range m.all() {
		ss.mu.Lock()
		if n := len(ss.usage); n > 0 && ss.lease != nil && ss.rec.State == state.SessionActive {
			out[ss.Lang.Name()] = append(out[ss.Lang.Name()], ss.usage[n-1])
		}
		ss.mu.Unlock()
	}
	return out
}

// sampleAll adds a sample to every awake session's series.
func (m *Sessions) sampleAll(ctx context.Context) {
	slots := make(chan struct{}, usageParallel)
	var wg sync.WaitGroup
	for _, ss := range m.all() {
		sb := ss.running()
		if sb == nil {
			continue
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			u, err := m.sample(ctx, ss, sb, sampleTimeout)
			if err != nil {
				return // a sandbox that does not answer now is left out
			}
			ss.mu.Lock()
			ss.usage = append(ss.usage, u)
			if len(ss.usage) > usageKept {
				ss.usage = append(ss.usage[:0], ss.usage[len(ss.usage)-usageKept:]...)
			}
			ss.mu.Unlock()
		}()
	}
	wg.Wait()
}

// sample asks the session's supervisor what the sandbox uses, and its
// egress gate what went through it; the CPU share is against the
// session's last sample.
func (m *Sessions) sample(ctx context.Context, ss *Session, sb *runtime.Sandbox, timeout time.Duration) (stats.SandboxUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := sandbox.WorkspaceOf(sb).Usage(ctx)
	if err != nil {
		return stats.SandboxUsage{}, err
	}
	if ls := ss.Lease(); ls.Sandbox() == sb && ls.Gate() != nil {
		u.NetworkSentBytes, u.NetworkReceivedBytes = ls.Gate().Transferred()
	}
	ss.mu.Lock()
	if n := len(ss.usage); n > 0 {
		prev := ss.usage[n-1]
		if dt := u.At.Sub(prev.At).Seconds(); dt > 0 && u.CPUSeconds >= prev.CPUSeconds {
			u.CPUPercent = 100 * (u.CPUSeconds - prev.CPUSeconds) / dt
		}
	}
	ss.mu.Unlock()
	return u, nil
}

// quietCPU is the CPU share (percent of one CPU) under which a sandbox
// is quiet: an idle interpreter or server, not a job at work.
const quietCPU = 10.0

// quiet says whether the sandbox was measured quiet all through the last
// window before now: a session unused but at work in the background (a
// build, a training run) is not frozen. A sandbox too busy to answer its
// samples (they are left out) is not known to be quiet: the last sample
// must be recent, and the window hold half the samples it should. ss.mu
// is held.
func (ss *Session) quiet(now time.Time, window time.Duration) bool {
	window = min(window, usageKept*usageEvery*4/5) // what the series keeps, less samples missed
	n := len(ss.usage)
	if n == 0 || now.Sub(ss.usage[0].At) < window || now.Sub(ss.usage[n-1].At) > 3*usageEvery {
		return false
	}
	seen := 0
	for i := n - 1; i >= 0 && now.Sub(ss.usage[i].At) <= window; i-- {
		if ss.usage[i].CPUPercent >= quietCPU {
			return false
		}
		seen++
	}
	return seen >= max(1, int(window/usageEvery)/2)
}

// running returns the session's sandbox, or nil while it is frozen or
// hibernated, or once it is gone. It is not counted as in use: a sample never stands in
// the way of a pause, and one that a pause or a close cuts short fails
// and is left out.
func (ss *Session) running() *runtime.Sandbox {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if sb := ss.lease.Sandbox(); sb != nil && ss.rec.State == state.SessionActive && !ss.freezing && sb.Alive() {
		return sb
	}
	return nil
}

// all is every live session.
func (m *Sessions) all() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Session, 0, len(m.live))
	for _, ss := range m.live {
		out = append(out, ss)
	}
	return out
}
