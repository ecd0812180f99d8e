package sessions

import (
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/stats"
)

// A sandbox whose samples all failed over the window (too busy to answer
// them) is not known to be quiet (outside review).
func TestReviewQuietWithoutRecentSamples(t *testing.T) {
	now := time.Now()
	ss := &Session{usage: []stats.SandboxUsage{
		{At: now.Add(-60 * time.Second), CPUPercent: 0.1},
		{At: now.Add(-58 * time.Second), CPUPercent: 0.1},
	}}
	if ss.quiet(now, 30*time.Second) {
		t.Error("quiet with no sample in the window")
	}
	for at := now.Add(-40 * time.Second); !at.After(now); at = at.Add(2 * time.Second) {
		ss.usage = append(ss.usage, stats.SandboxUsage{At: at, CPUPercent: 0.5})
	}
	if !ss.quiet(now, 30*time.Second) {
		t.Error("not quiet with quiet samples all through the window")
	}
}
