package languages

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// warmReadyTimeout bounds the wait for a warm runtime to load; a
// container whose runtime is not ready by then is used cold.
const warmReadyTimeout = 20 * time.Second

// warmCounts are a language's warm-runtime figures.
type warmCounts struct {
	hits, misses, failures atomic.Uint64
}

// Warm says whether l's programs are run by runtimes started ahead.
func (l *Language) Warm() bool { return len(l.Info.Warm) > 0 && l.Config.Warm }

// WarmStands says whether one of l's warm runtimes stands in for argv.
func (l *Language) WarmStands(argv []string) bool {
	for _, w := range l.Info.Warm {
		if len(argv) >= len(w.Stands) && slices.Equal(argv[:len(w.Stands)], w.Stands) {
			return true
		}
	}
	return false
}

// warmUp starts l's warm runtimes in sb for runs with env on top of the
// plugin's, and waits until they are ready. One that fails is counted and
// logged; the steps it stands in for then start cold.
func (r *Registry) warmUp(ctx context.Context, l *Language, sb *runtime.Sandbox, env map[string]string) {
	for _, w := range l.Info.Warm {
		r.warmOne(ctx, l, sb, w, env)
	}
}

func (r *Registry) warmOne(ctx context.Context, l *Language, sb *runtime.Sandbox, w language.Warm, env map[string]string) {
	files := make([]supervisor.File, 0, len(w.Files))
	for name, content := range w.Files {
		files = append(files, supervisor.File{Path: language.WarmDir + "/" + name, Data: []byte(content)})
	}
	res, err := sb.Warm(ctx, supervisor.WarmRequest{
		Argv: w.Command, Stands: w.Stands, Env: request.EnvList(w.Env, env), Hook: request.EnvList(w.HookEnv),
		Files: files, Exact: w.Exact, TimeoutMS: warmReadyTimeout.Milliseconds(),
	})
	if err == nil && res.Error != "" {
		err = &api.Error{Code: api.CodeInternal, Message: res.Error}
	}
	if err != nil && !sb.Alive() {
		return // removed meanwhile (a session's end): nothing failed
	}
	if err != nil {
		l.warm.failures.Add(1)
		r.metrics.WarmStart(l.Name(), false)
		r.log.Warn("a warm runtime failed; its container runs programs cold", "language", l.Name(),
			"container_id", runtime.ShortID(sb.ID), "error", err)
		return
	}
	r.metrics.WarmStart(l.Name(), true)
}

// Rewarm starts a session's next warm runtime, for runs with its env,
// after one was used or missed.
func (r *Registry) Rewarm(l *Language, sb *runtime.Sandbox, env map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), warmReadyTimeout+5*time.Second)
	defer cancel()
	r.warmUp(ctx, l, sb, env)
}

// Warmed counts how a run that a warm runtime could have run went: by it,
// or cold, and why.
func (r *Registry) Warmed(l *Language, warm bool, missed string) {
	if warm {
		l.warm.hits.Add(1)
	} else {
		l.warm.misses.Add(1)
	}
	r.metrics.WarmRun(l.Name(), warm, missed)
}

// warmStats fills in a pool's warm-runtime figures.
func (l *Language) warmStats(p *api.PoolStats) {
	p.Warm = l.Warm()
	p.WarmHits, p.WarmMisses, p.WarmFailures = l.warm.hits.Load(), l.warm.misses.Load(), l.warm.failures.Load()
}
