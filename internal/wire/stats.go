package wire

import (
	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/internal/timeline"
	"github.com/sandboxd/sandboxd/policy"
)

// SessionUsage is a session's use as the wire shows it.
func SessionUsage(u stats.SessionUsage) api.SessionMetrics {
	return api.SessionMetrics{Session: u.Session, Language: u.Language, Limits: APILimits(u.Limits),
		Now: ptr(u.Now, SandboxUsage), Series: All(u.Series, SandboxUsage), Every: api.Duration(u.Every)}
}

// SandboxUsage is a sample of a sandbox's use as the wire shows it.
func SandboxUsage(u stats.SandboxUsage) api.SandboxUsage { return api.SandboxUsage(u) }

// Stats are the daemon's figures as the wire shows them.
func Stats(f stats.Figures) api.Stats {
	return api.Stats{
		Uptime: api.Duration(f.Uptime), Executions: f.Executions, InFlight: f.InFlight, Outcomes: f.Outcomes,
		Pools:    values(f.Pools, PoolStats),
		Rules:    values(f.Rules, func(r policy.RuleStats) api.RuleStats { return api.RuleStats(r) }),
		Sessions: f.Sessions, SessionsLost: f.SessionsLost, SessionsHibernated: f.SessionsHibernated, SessionsFrozen: f.SessionsFrozen,
		Egress: api.EgressCounts(f.Egress),
	}
}

// Sample is a timeline's sample as the wire shows it.
func Sample(s timeline.Sample) api.StatsSample {
	return api.StatsSample{
		At: s.At, Seconds: s.Seconds, Outcomes: s.Outcomes, LatencyP50MS: s.LatencyP50MS, LatencyP95MS: s.LatencyP95MS,
		InFlight: s.InFlight, Sessions: s.Sessions,
		Pools:    values(s.Pools, func(p timeline.PoolSample) api.PoolSample { return api.PoolSample(p) }),
		WarmRuns: s.WarmRuns, ColdRuns: s.ColdRuns, Egress: api.EgressCounts(s.Egress),
	}
}

// Plugin is a plugin's health as the wire shows it.
func Plugin(p stats.Plugin) api.Plugin {
	return api.Plugin{
		Kind: string(p.Kind), Name: p.Name, Path: p.Path, Version: p.Version,
		Running: p.Running, Restarts: p.Restarts, LastError: p.LastError, RetryAt: p.RetryAt,
	}
}

// values maps every value of m, keeping nil nil.
func values[K comparable, V, W any](m map[K]V, f func(V) W) map[K]W {
	if m == nil {
		return nil
	}
	out := make(map[K]W, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}

// Health is the daemon's health as the wire shows it.
func Health(h stats.Health) api.Health {
	out := api.Health{Status: h.Status, Version: h.Version, Uptime: api.Duration(h.Uptime),
		Plugins: All(h.Plugins, Plugin), Problems: h.Problems}
	if h.EngineErr != nil {
		out.Docker = api.DockerHealth{Error: h.EngineErr.Error()}
	} else {
		out.Docker = api.DockerHealth{OK: true, Version: h.Engine.Version, APIVersion: h.Engine.APIVersion, Runtime: h.Engine.Runtime}
	}
	return out
}
