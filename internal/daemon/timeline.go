package daemon

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/sandboxd/sandboxd/internal/metrics"
	"github.com/sandboxd/sandboxd/internal/timeline"
)

// The timeline the dashboard charts: a sample every 5 s, the last hour.
const (
	timelineEvery = 5 * time.Second
	timelineKept  = 720
)

// Timeline is the daemon's recent past, sample by sample.
func (d *Daemon) Timeline() *timeline.Timeline { return d.timeline }

// sampleTimeline adds a sample to the timeline every timelineEvery until
// Close.
func (d *Daemon) sampleTimeline() {
	d.timeline.Start(d.Stats(), time.Now())
	go func() {
		defer close(d.timelineDone)
		t := time.NewTicker(d.timeline.Every())
		defer t.Stop()
		for {
			select {
			case <-d.timelineStop:
				return
			case now := <-t.C:
				d.timeline.Add(d.Stats(), d.records.takeLatencies(), now)
			}
		}
	}()
}

// egressCounter counts connections through the egress proxy by decision,
// for /v1/stats and the timeline, and passes every event on to the
// metrics.
type egressCounter struct {
	*metrics.Metrics
	allowed, denied atomic.Uint64
}

func (e *egressCounter) EgressConnection(language, host, decision string) {
	if decision == "allowed" {
		e.allowed.Add(1)
	} else {
		e.denied.Add(1)
	}
	e.Metrics.EgressConnection(language, host, decision)
}

// maxLatencies bounds the latencies kept for one interval of the
// timeline: past it, a uniform sample of them (reservoir sampling).
const maxLatencies = 4096

// latency keeps an execution's total time for the timeline's percentiles.
func (r *recorder) latency(ms float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencySeen++
	if len(r.latencies) < maxLatencies {
		r.latencies = append(r.latencies, ms)
	} else if i := rand.IntN(r.latencySeen); i < maxLatencies {
		r.latencies[i] = ms
	}
}

// takeLatencies returns the latencies kept since the last call.
func (r *recorder) takeLatencies() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.latencies
	r.latencies, r.latencySeen = nil, 0
	return out
}
