package wire

import (
	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/stats"
)

// Language is a language as the wire shows it.
func Language(e sandbox.Entry) api.Language {
	return api.Language{
		Name: e.Name, DisplayName: e.DisplayName, Aliases: e.Aliases, Extensions: e.Extensions,
		Image: e.Image, BaseImage: e.BaseImage, Packages: e.Packages, ImagePresent: e.ImagePresent,
		Version: e.Version, Plugin: e.Plugin, Runtime: e.Runtime, Limits: APILimits(e.Limits),
		Network: api.Network{Allow: e.Allow}, Contexts: e.Contexts, ContextLanguages: e.ContextLanguages, Desktop: e.Desktop, Hibernation: e.Hibernation,
		Instructions: e.Instructions, Pool: PoolStats(e.Pool),
		Building: ptr(e.Building, func(b sandbox.Building) api.ImageBuilding { return api.ImageBuilding(b) }),
		Error:    e.Error,
	}
}

// PoolStats are a language's pool figures as the wire shows them.
func PoolStats(s stats.Pool) api.PoolStats {
	return api.PoolStats{
		Idle: s.Idle, IdleUsed: s.IdleUsed, Busy: s.Busy, Recycling: s.Recycling, Starting: s.Starting,
		Removing: s.Removing, Waiting: s.Waiting, StartingFor: s.StartingFor,
		Target: s.Target, MinIdle: s.MinIdle, Max: s.Max,
		Hits: s.Hits, Reused: s.Reused, Misses: s.Misses, Created: s.Created, Recycled: s.Recycled,
		Retired: s.Retired, Trimmed: s.Trimmed, Destroyed: s.Destroyed, Failures: s.Failures, LastError: s.LastError,
		Warm: s.Warm, WarmHits: s.WarmHits, WarmMisses: s.WarmMisses, WarmFailures: s.WarmFailures,
	}
}
