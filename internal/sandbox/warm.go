package sandbox

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/stats"
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

// warmStands says whether one of l's warm runtimes stands in for argv, as
// the plugin made it or renamed (see learnScript).
func (l *kind) warmStands(argv []string) bool {
	for i, w := range l.Info.Warm {
		if standsFor(w.Stands, argv) || standsFor(l.named(i, w).Stands, argv) {
			return true
		}
	}
	return false
}

func standsFor(stands, argv []string) bool {
	return len(argv) >= len(stands) && slices.Equal(argv[:len(stands)], stands)
}

// A warm runtime takes its script's name when it starts: python3 main.py
// runs main.py, whatever it is told later. One-shot runs that name their
// script otherwise (analysis.py, quiz.js) rename the pool's runtimes:
// containers warmed after such a run, new or recycled, stand in for the
// name it used, so a stream of runs of one name runs warm from about its
// second run. Sessions send code as the plugin's main file; their runtimes
// keep the plugin's names.

// learnScript is warmStands for a one-shot run's step: one that names
// another script, of the same directory and extension, in place of a warm
// runtime's has that runtime started for its name from now on.
func (l *kind) learnScript(argv []string) bool {
	for i, w := range l.Info.Warm {
		n := len(w.Stands)
		if w.Exact || n == 0 || len(argv) < n || !slices.Equal(argv[:n-1], w.Stands[:n-1]) {
			continue
		}
		if name, own := argv[n-1], w.Stands[n-1]; name != own && renamable(own, name) {
			l.scripts.Store(i, name)
			return true
		} else if name == own {
			l.scripts.Delete(i)
			return true
		}
	}
	return l.warmStands(argv)
}

// renamable says whether name is a script that may stand where own does:
// a file of the same directory and extension, not an option.
func renamable(own, name string) bool {
	return filepath.Ext(own) != "" && filepath.Ext(name) == filepath.Ext(own) &&
		filepath.Dir(name) == filepath.Dir(own) && !strings.HasPrefix(filepath.Base(name), "-")
}

// named is l's i-th warm runtime, w, for the script name runs use now.
func (l *kind) named(i int, w language.Warm) language.Warm {
	v, ok := l.scripts.Load(i)
	if !ok {
		return w
	}
	own, name := w.Stands[len(w.Stands)-1], v.(string)
	rename := func(argv []string) []string {
		out := slices.Clone(argv)
		for j, a := range out {
			if a == own {
				out[j] = name
			}
		}
		return out
	}
	w.Command, w.Stands = rename(w.Command), rename(w.Stands)
	return w
}

// warmUp starts l's warm runtimes in a container of its pool, for the
// script names one-shot runs use now, and waits until they are ready. One
// that fails is counted and logged; the steps it stands in for then start
// cold. They are isolated as one-shot runs' steps are (a session that
// takes the container starts its first program cold).
func (p *Provider) warmUp(ctx context.Context, l *kind, sb *runtime.Sandbox) {
	for _, w := range p.poolWarms(l) {
		res, err := sb.Warm(ctx, w)
		p.warmed(l, sb, res, err)
	}
}

// poolWarms are the requests that start l's warm runtimes in a container
// of its pool (see warmUp).
func (p *Provider) poolWarms(l *kind) []supervisor.WarmRequest {
	out := make([]supervisor.WarmRequest, len(l.Info.Warm))
	for i, w := range l.Info.Warm {
		out[i] = warmRequest(l.named(i, w), nil, supervisor.IsolateProgram)
	}
	return out
}

// warmRequest starts w for runs with env on top of the plugin's, isolated
// as the runs it stands in for are (see supervisor.Isolation).
func warmRequest(w language.Warm, env map[string]string, iso supervisor.Isolation) supervisor.WarmRequest {
	files := make([]supervisor.File, 0, len(w.Files))
	for name, content := range w.Files {
		files = append(files, supervisor.File{Path: language.WarmDir + "/" + name, Data: []byte(content)})
	}
	return supervisor.WarmRequest{
		Argv: w.Command, Stands: w.Stands, Env: runtime.EnvList(w.Env, env), Hook: runtime.EnvList(w.HookEnv),
		Files: files, Exact: w.Exact, Forks: w.Forks, Isolate: iso, TimeoutMS: warmReadyTimeout.Milliseconds(),
	}
}

// warmed counts and logs how a warm runtime's start in sb went: res and
// err as Sandbox.Warm gives them.
func (p *Provider) warmed(l *kind, sb *runtime.Sandbox, res supervisor.FileResult, err error) {
	if err == nil && res.Error != "" {
		err = errdefs.New(errdefs.Internal, res.Error)
	}
	if err != nil && !sb.Alive() {
		return // removed meanwhile (a session's end): nothing failed
	}
	if err != nil {
		l.warm.failures.Add(1)
		p.metrics.WarmStart(l.Name(), false)
		p.log.Warn("a warm runtime failed; its container runs programs cold", "language", l.Name(),
			"container_id", runtime.ShortID(sb.ID), "error", err)
		return
	}
	p.metrics.WarmStart(l.Name(), true)
}

// rewarm starts a session's next warm runtime, for runs with its env and
// the plugin's script names, after one was used or missed.
func (p *Provider) rewarm(l *kind, sb *runtime.Sandbox, env map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), warmReadyTimeout+5*time.Second)
	defer cancel()
	for _, w := range l.Info.Warm {
		res, err := sb.Warm(ctx, warmRequest(w, env, supervisor.IsolateSession))
		p.warmed(l, sb, res, err)
	}
}

// warmRun counts how a run that a warm runtime could have run went: by it,
// or cold, and why.
func (p *Provider) warmRun(l *kind, warm bool, missed string) {
	if warm {
		l.warm.hits.Add(1)
	} else {
		l.warm.misses.Add(1)
	}
	p.metrics.WarmRun(l.Name(), warm, missed)
}

// poolStats are l's pool figures.
func (l *kind) poolStats() stats.Pool {
	return stats.Pool{Stats: l.pool.Stats(), Warm: l.Warm(),
		WarmHits: l.warm.hits.Load(), WarmMisses: l.warm.misses.Load(), WarmFailures: l.warm.failures.Load()}
}
