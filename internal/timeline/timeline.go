// Package timeline keeps the daemon's recent past for the dashboard's
// charts: a bounded ring of samples, one per interval, each what the
// daemon did in it (executions by outcome, their latency, pools' use,
// warm and cold starts, egress connections), so that a page opened now
// draws the last hour at once and the event stream extends it.
package timeline

import (
	"slices"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/internal/stats"
)

// Sample is what the daemon did over one interval: counts are of that
// interval, levels are at its end.
type Sample struct {
	At      time.Time // the interval's end
	Seconds float64
	// Outcomes counts the executions that ended in it, by outcome;
	// LatencyP50MS and LatencyP95MS are of their total times.
	Outcomes                   map[string]uint64
	LatencyP50MS, LatencyP95MS float64
	InFlight                   int64
	Sessions                   int
	// Pools are the languages' pools that held or served containers.
	Pools map[string]PoolSample
	// WarmRuns ran in a runtime started ahead; ColdRuns could have, but
	// started as usual.
	WarmRuns, ColdRuns uint64
	Egress             stats.Egress
}

// PoolSample is a pool over one interval: idle and busy at its end, the
// requests it served warm (hits) and those that waited for a create.
type PoolSample struct {
	Idle, Busy   int
	Hits, Misses uint64
}

// Timeline is the ring. Safe for concurrent use.
type Timeline struct {
	every time.Duration
	keep  int

	mu      sync.Mutex
	samples []Sample      // oldest first, at most keep
	seq     uint64        // samples taken so far
	last    stats.Figures // the figures at the last sample
	lastAt  time.Time
}

// New returns a timeline of keep samples, one every every.
func New(every time.Duration, keep int) *Timeline {
	return &Timeline{every: every, keep: keep}
}

// Every is the interval between samples.
func (t *Timeline) Every() time.Duration { return t.every }

// Start begins the interval that the first Add ends.
func (t *Timeline) Start(st stats.Figures, now time.Time) {
	t.mu.Lock()
	t.last, t.lastAt = st, now
	t.mu.Unlock()
}

// Add ends an interval at now: st are the daemon's figures then (their
// counters since its start), latencies the total times (ms) of the
// executions that ended in it.
func (t *Timeline) Add(st stats.Figures, latencies []float64, now time.Time) Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.last
	s := Sample{
		At: now.UTC(), Seconds: now.Sub(t.lastAt).Seconds(), InFlight: st.InFlight, Sessions: st.Sessions,
		Outcomes: map[string]uint64{}, Pools: map[string]PoolSample{},
		Egress: stats.Egress{Allowed: since(st.Egress.Allowed, prev.Egress.Allowed), Denied: since(st.Egress.Denied, prev.Egress.Denied)},
	}
	for o, n := range st.Outcomes {
		if d := since(n, prev.Outcomes[o]); d > 0 {
			s.Outcomes[o] = d
		}
	}
	s.LatencyP50MS, s.LatencyP95MS = percentile(latencies, 0.50), percentile(latencies, 0.95)
	for lang, p := range st.Pools {
		was := prev.Pools[lang]
		ps := PoolSample{Idle: p.Idle, Busy: p.Busy, Hits: since(p.Hits, was.Hits), Misses: since(p.Misses, was.Misses)}
		s.WarmRuns += since(p.WarmHits, was.WarmHits)
		s.ColdRuns += since(p.WarmMisses, was.WarmMisses)
		if ps != (PoolSample{}) {
			s.Pools[lang] = ps
		}
	}
	t.samples = append(t.samples, s)
	if len(t.samples) > t.keep {
		t.samples = slices.Delete(t.samples, 0, len(t.samples)-t.keep)
	}
	t.seq++
	t.last, t.lastAt = st, now
	return s
}

// Since returns the samples taken after the first seq, and the count to
// ask with next time; a caller that fell behind the ring gets what it
// still holds.
func (t *Timeline) Since(seq uint64) ([]Sample, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := int(min(t.seq-min(seq, t.seq), uint64(len(t.samples))))
	out := make([]Sample, n) // never nil: [] on the wire
	copy(out, t.samples[len(t.samples)-n:])
	return out, t.seq
}

// Seq is the count of samples taken so far: Since(Seq()) is what comes
// next.
func (t *Timeline) Seq() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seq
}

// History is every sample kept, oldest first.
func (t *Timeline) History() []Sample {
	samples, _ := t.Since(0)
	return samples
}

// since is a counter's growth; a counter that went back (a pool made
// anew by a configuration reload) counts from zero.
func since(now, before uint64) uint64 {
	if now < before {
		return now
	}
	return now - before
}

// percentile is the nearest-rank percentile of values (sorted here); 0
// for none.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	i := int(p*float64(len(values))+0.5) - 1
	return values[max(0, min(i, len(values)-1))]
}
