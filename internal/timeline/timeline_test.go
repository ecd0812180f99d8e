package timeline

import (
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/internal/stats"
)

// A sample holds what happened in its interval: counters' growth, levels
// at its end, latency percentiles; the ring keeps the last few, and Since
// gives each caller what it has not seen.
func TestSamples(t *testing.T) {
	at := time.Unix(1000, 0)
	tl := New(5*time.Second, 3)
	if h := tl.History(); h == nil {
		t.Error("an empty history's samples are nil (null on the wire)")
	}
	tl.Start(stats.Figures{Outcomes: map[string]uint64{"ok": 10}, Pools: map[string]stats.Pool{"python": {Stats: pool.Stats{Hits: 4}, WarmHits: 4}}}, at)
	seq := tl.Seq()
	st := stats.Figures{
		InFlight: 2, Sessions: 1, Outcomes: map[string]uint64{"ok": 15, "timeout": 1},
		Pools:  map[string]stats.Pool{"python": {Stats: pool.Stats{Idle: 2, Busy: 1, Hits: 9, Misses: 1}, WarmHits: 8, WarmMisses: 1}, "lua": {}},
		Egress: stats.Egress{Allowed: 3, Denied: 1},
	}
	s := tl.Add(st, []float64{50, 10, 20, 40, 30, 1000}, at.Add(5*time.Second))
	want := PoolSample{Idle: 2, Busy: 1, Hits: 5, Misses: 1}
	switch {
	case s.Seconds != 5 || s.Outcomes["ok"] != 5 || s.Outcomes["timeout"] != 1 || len(s.Outcomes) != 2:
		t.Errorf("interval and outcomes: %+v", s)
	case s.LatencyP50MS != 30 || s.LatencyP95MS != 1000:
		t.Errorf("latency p50 %v, p95 %v; want 30, 1000", s.LatencyP50MS, s.LatencyP95MS)
	case s.Pools["python"] != want || len(s.Pools) != 1:
		t.Errorf("pools: %+v; an idle language with nothing is left out", s.Pools)
	case s.WarmRuns != 4 || s.ColdRuns != 1 || s.Egress != (stats.Egress{Allowed: 3, Denied: 1}) || s.InFlight != 2:
		t.Errorf("warm %d cold %d egress %+v in flight %d", s.WarmRuns, s.ColdRuns, s.Egress, s.InFlight)
	}
	got, next := tl.Since(seq)
	if len(got) != 1 || next != seq+1 {
		t.Fatalf("Since: %d samples, next %d", len(got), next)
	}
	for i := range 4 {
		tl.Add(st, nil, at.Add(time.Duration(10+5*i)*time.Second))
	}
	if h := tl.History(); len(h) != 3 || h[0].Outcomes["ok"] != 0 || tl.Every() != 5*time.Second {
		t.Fatalf("the ring keeps the last 3, with nothing new in them: %+v", h)
	}
	if got, _ := tl.Since(next); len(got) != 3 {
		t.Fatalf("a caller behind the ring gets what it holds: %d samples", len(got))
	}
}
