// Package stats holds the figures sandboxd reports about itself, in the
// daemon's own types: counters since its start and levels now (pools,
// sessions, executions in flight), policy rules' counts, plugins' health
// and sessions' sandboxes' use. /v1/stats, /metrics and the timeline read
// them; internal/wire shows them on the wire. It computes nothing.
package stats

import (
	"time"

	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/policy"
	"github.com/sandboxd/sandboxd/runtime"
)

// Figures are the daemon's counters since its start, and its levels now.
type Figures struct {
	Uptime     time.Duration
	Executions uint64
	InFlight   int64
	Outcomes   map[string]uint64 // ok, nonzero, timeout, oom, error, denied
	Pools      map[string]Pool   // by language
	Rules      map[string]policy.RuleStats
	// Sessions by state: active, hibernated, lost.
	Sessions, SessionsFrozen, SessionsHibernated, SessionsLost int
	Egress                                                     Egress
}

// Pool are a language's pool figures, with its warm runtime's: the runs
// it served (WarmHits), those that could have been warm and were not
// (WarmMisses), and the warm runtimes that failed to start.
type Pool struct {
	pool.Stats
	Warm                               bool
	WarmHits, WarmMisses, WarmFailures uint64
}

// Egress counts connections through the egress proxy by decision.
type Egress struct {
	Allowed, Denied uint64
}

// Plugin is the health of a plugin's process, with its version. Each
// language or policy block of sandboxd.hcl has a process of its own, so
// two blocks that name one plugin (python and python3.11) report two:
// Block tells them apart.
type Plugin struct {
	plugins.Health
	Version string
	Block   string // the language or policy block the process serves
}

// SandboxUsage is one sample of what a session's sandbox uses.
type SandboxUsage struct {
	At time.Time
	// CPUSeconds is the CPU time its processes used since its container
	// started; CPUPercent, of one CPU, since the sample before.
	CPUSeconds, CPUPercent float64
	MemoryBytes            int64 // less the page cache it could drop
	Processes              int   // the supervisor not counted
	WorkspaceBytes         int64
	TmpBytes               int64
	// Bytes through the egress proxy since its container started.
	NetworkSentBytes, NetworkReceivedBytes int64
}

// SessionUsage is what a session's sandbox uses now and did over the last
// minutes.
type SessionUsage struct {
	Session, Language string
	Limits            runtime.Limits // what the figures are bounded by
	// Now is sampled for the request; nil while the session hibernates.
	Now *SandboxUsage
	// Series is the last few minutes, oldest first, a sample every Every
	// while the session is awake.
	Series []SandboxUsage
	Every  time.Duration
}

// Health is how the daemon is: "ok", or "degraded" with its problems.
type Health struct {
	Status    string
	Version   string
	Uptime    time.Duration
	Engine    runtime.EngineInfo
	EngineErr error // the engine did not answer
	Plugins   []Plugin
	Problems  []string
}
