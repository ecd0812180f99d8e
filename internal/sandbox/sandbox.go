// Package sandbox owns the containers programs run in and the leases
// the daemon holds on them. For each language it keeps the image its
// containers are made from (resolved, built when missing, its runtime's
// version learnt) and its warm pool; for each container, its egress
// gate, its warm runtimes and its recycle after a run. Every sandbox
// container is created and removed here, so that each start and removal
// is counted once.
//
// A Lease is a container held for a while: one run's (Acquire, given
// back by Release) or a session's (Hold, until Remove). Lease.Run runs a Job in it
// through the supervisor's channel and returns a Result: the daemon's
// own terms in, and out. It knows nothing of requests, policies or
// sessions.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/hostmem"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/internal/metrics"
	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/runtime"
)

// Provider makes, lends and removes the containers of the configured
// languages.
type Provider struct {
	cfg     *config.Config
	rt      runtime.Runtime
	store   *state.Store
	metrics *metrics.Metrics
	egress  *egress.Proxy
	log     hclog.Logger
	langs   *languages.Registry

	kinds   []*kind
	of      map[*languages.Language]*kind
	starts  chan struct{}   // background container creates at once
	closing context.Context // done at Close: ends version probes and background builds
	close   context.CancelFunc
	work    sync.WaitGroup // version probes and background builds
	buildMu sync.Mutex     // one image build at a time
	probeMu sync.Mutex     // one version probe at a time
}

// kind is what the provider keeps of one language: its image and pool,
// and how its warm runtimes fare.
type kind struct {
	*languages.Language
	img  imageCell
	pool *pool.Pool[*runtime.Sandbox]
	// fixedLimits is set once its OCI runtime refused to change a running
	// container's limits: lower limits then get a container of their own.
	fixedLimits atomic.Bool
	warm        warmCounts
	scripts     sync.Map // warm runtime's index -> the script name it is started for (see learnScript)
}

// New resolves the languages' images; the pools start with Start.
func New(ctx context.Context, cfg *config.Config, langs *languages.Registry, rt runtime.Runtime, store *state.Store, m *metrics.Metrics, gates *egress.Proxy, log hclog.Logger) *Provider {
	p := &Provider{cfg: cfg, langs: langs, rt: rt, store: store, metrics: m, egress: gates, log: log, of: map[*languages.Language]*kind{},
		starts: make(chan struct{}, 2), // concurrent background creates: one per core here
	}
	p.closing, p.close = context.WithCancel(context.Background())
	for _, l := range langs.All() {
		k := &kind{Language: l}
		p.kinds = append(p.kinds, k)
		p.of[l] = k
		if err := p.resolveImage(ctx, k).err; err != nil && p.buildsMissing(k) {
			log.Info("the image of this language is missing; sandboxd builds it in the background", "language", l.Name(), "image", l.BaseImage())
		} else if err != nil {
			log.Error("runs of this language fail until its image is there", "language", l.Name(), "error", err)
		}
	}
	return p
}

// memoryPressure says when l's pool is to shed its idle containers past
// min_idle: when this host, which runs them, has less memory available
// than sessions.memory_low, under which frozen sessions go to disk too.
// Never for containers elsewhere (pods, a remote engine), whose hosts'
// memory sandboxd does not see.
func (p *Provider) memoryPressure(l *kind) func() bool {
	engine := cmp.Or(p.cfg.Docker.Host, os.Getenv("DOCKER_HOST")) // as the engine's client takes it
	if l.Config.Runtime == config.KubernetesRuntime || engine != "" && !strings.HasPrefix(engine, "unix://") {
		return nil
	}
	return func() bool { return hostmem.Low(p.cfg.Sessions.MemoryLow) }
}

// Start starts the warm pools, the builds of missing images if the
// config asks for them (see buildMissing) and, once the pools have
// filled, the probes of the runtimes' versions.
func (p *Provider) Start() {
	var missing [][]*kind
	if p.cfg.BuildMissingImages {
		missing = p.missingImages() // before the pools try to fill
	}
	for _, l := range p.kinds {
		l.pool = pool.New(pool.Options{
			Name: l.Config.Name, MinIdle: l.Config.Pool.MinIdle, Max: l.Config.Pool.Max,
			QueueTimeout: l.Config.Pool.QueueTimeout, Starts: p.starts, Logger: p.log,
			Pressure: p.memoryPressure(l),
		}, pool.Hooks[*runtime.Sandbox]{
			// A container joins the pool once its warm runtime, if any,
			// is ready (or has failed, and it will run programs cold).
			Create: func(ctx context.Context, waiting func(string)) (*runtime.Sandbox, error) {
				if b := l.img.buildingNow(); b != nil {
					return nil, fmt.Errorf("%w: %w", pool.ErrNotReady, images.Building(l.Config.Name, l.BaseImage(), b.Step, time.Since(b.Since)))
				}
				if err := l.img.get().err; err != nil {
					return nil, err
				}
				spec := p.spec(l)
				spec.Waiting = waiting
				sb, err := p.createFor(ctx, l, spec)
				if err == nil && l.Warm() {
					p.warmUp(ctx, l, sb)
				}
				return sb, err
			},
			Destroy: p.remove,
			Alive:   func(sb *runtime.Sandbox) bool { return sb.Alive() },
		})
	}
	p.probe()
	if len(missing) > 0 {
		p.background(func() { p.buildMissing(missing) })
	}
}

// PoolFull says whether l's pool has every container it may have busy:
// the next Take waits for one to be given back.
func (p *Provider) PoolFull(lang *languages.Language) bool {
	l := p.of[lang]
	st := l.pool.Stats()
	return st.Idle == 0 && st.Busy+st.Starting+st.Recycling >= st.Max
}

// keep is a container of l, under limits, that a session keeps: a warm
// one, or with mounts (a project's files) a new one, as mounts are fixed
// at create time. The caller removes it with Remove.
func (p *Provider) keep(ctx context.Context, lang *languages.Language, limits runtime.Limits, mounts []runtime.Mount) (*runtime.Sandbox, error) {
	l := p.of[lang]
	if err := p.ready(ctx, l); err != nil {
		return nil, err
	}
	if len(mounts) > 0 || (limits.Resized(l.Limits()) && l.fixedLimits.Load()) {
		return p.create(ctx, l, limits, mounts, "")
	}
	sb, err := l.pool.Take(ctx)
	if err != nil {
		return nil, err
	}
	return p.fit(ctx, l, sb, limits, func() { p.remove(sb) })
}

// fit gives a warm container limits below the language's: in place, or
// where its OCI runtime cannot change them (gVisor's runsc), in a new
// container made with them, after which the language's warm containers
// are never tried again. done gives sb up when it is not the one returned.
func (p *Provider) fit(ctx context.Context, l *kind, sb *runtime.Sandbox, limits runtime.Limits, done func()) (*runtime.Sandbox, error) {
	if !limits.Resized(l.Limits()) {
		return sb, nil
	}
	err := p.rt.Update(ctx, sb.ID, limits)
	if err == nil {
		return sb, nil
	}
	done()
	if !errors.Is(err, runtime.ErrFixedLimits) {
		return nil, err
	}
	l.fixedLimits.Store(true)
	return p.create(ctx, l, limits, nil, "")
}

// renew makes a new container of l for the session id: the replacement
// of one that could not be reset. The caller removes it with Remove.
func (p *Provider) renew(ctx context.Context, lang *languages.Language, limits runtime.Limits, mounts []runtime.Mount, session string) (*runtime.Sandbox, error) {
	l := p.of[lang]
	if err := p.ready(ctx, l); err != nil {
		return nil, err
	}
	return p.create(ctx, l, limits, mounts, session)
}

// create makes a container of l outside its pool, labelled with session
// ("": a fresh id).
func (p *Provider) create(ctx context.Context, l *kind, limits runtime.Limits, mounts []runtime.Mount, session string) (*runtime.Sandbox, error) {
	spec := p.spec(l)
	spec.Limits, spec.Mounts = limits, mounts
	if session != "" {
		spec.Labels[runtime.LabelSession] = session
	}
	return p.createFor(ctx, l, spec)
}

// spec is what a language's containers are made from; each gets a fresh
// session id label, the id it will have if a session takes it.
func (p *Provider) spec(l *kind) runtime.Spec {
	img := l.img.get()
	return runtime.Spec{
		Language:    l.Config.Name,
		Image:       img.ref,
		WorkspaceAt: img.workspaceAt,
		Runtime:     l.Config.Runtime,
		Limits:      l.Config.Limits,
		Labels:      map[string]string{runtime.LabelSession: state.RandomID(8)},
	}
}

// start creates and starts a container; every container sandboxd starts
// comes through here.
func (p *Provider) start(ctx context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	began := time.Now()
	sb, err := p.rt.Create(ctx, spec)
	p.metrics.ContainerStarted(spec.Language, time.Since(began), err)
	return sb, err
}

// remove removes a container; every removal of a sandbox comes through
// here.
func (p *Provider) remove(sb *runtime.Sandbox) {
	err := p.rt.Remove(context.Background(), sb.ID)
	if err != nil {
		p.log.Warn("removing a sandbox failed", "container_id", runtime.ShortID(sb.ID), "error", err)
	}
	p.metrics.ContainerRemoved(sb.Language, err)
	p.closeGate(sb.Labels)
}

// closeGate closes the egress gate of the container labelled labels.
func (p *Provider) closeGate(labels map[string]string) {
	if key := labels[runtime.LabelEgress]; key != "" && p.egress != nil {
		p.egress.Close(key)
	}
}

// Entry describes a configured language: its plugin's description, its
// image and runtime version, its ceilings and network, and its pool.
type Entry struct {
	Name, DisplayName   string
	Aliases, Extensions []string
	Image, BaseImage    string // what its containers run: BaseImage, or BaseImage with Packages
	Packages            []string
	ImagePresent        bool
	Version             string // the runtime's, as the image reports it; empty until known
	Plugin, Runtime     string
	Limits              runtime.Limits
	Allow               []string // the most its sandboxes may reach
	Contexts            bool     // sessions may keep its interpreters
	ContextLanguages    []string // other languages whose contexts its sessions run
	Desktop             string   // its sessions' screen, WIDTHxHEIGHT; "" for none
	Hibernation         string   // what a hibernated session keeps: "memory" or "workspace"
	Instructions        string
	Pool                stats.Pool
	Building            *Building // set while sandboxd builds its image
	Error               string    // e.g. the image is missing, and how to build it
}

// List describes the languages, in config order.
func (p *Provider) List(ctx context.Context) []Entry {
	out := make([]Entry, 0, len(p.kinds))
	for _, l := range p.kinds {
		_ = p.ready(ctx, l)
		st := l.img.get()
		entry := Entry{
			Name: l.Config.Name, DisplayName: l.Info.DisplayName,
			Aliases: l.Info.Aliases, Extensions: l.Info.Extensions,
			Image: st.ref, BaseImage: l.BaseImage(), Packages: l.Config.Packages, ImagePresent: st.id != "",
			Version: st.version, Plugin: l.Config.Plugin, Runtime: l.Config.Runtime, Limits: l.Config.Limits,
			Allow: l.Egress().Strings(), Contexts: len(l.Info.ContextCommand) > 0, ContextLanguages: l.ContextLanguages()[1:],
			Hibernation: p.hibernation(ctx, l), Instructions: l.Instructions(),
			Pool: l.poolStats(), Building: l.img.buildingNow(),
		}
		if d := l.Config.Desktop; d != nil {
			entry.Desktop = fmt.Sprintf("%dx%d", d.Width, d.Height)
		}
		if entry.Building == nil && st.err != nil {
			entry.Error = st.err.Error()
		}
		out = append(out, entry)
	}
	return out
}

// Pools reports every language's pool figures.
func (p *Provider) Pools() map[string]stats.Pool {
	out := make(map[string]stats.Pool, len(p.kinds))
	for _, l := range p.kinds {
		out[l.Config.Name] = l.poolStats()
	}
	return out
}

// Close destroys the warm containers (waiting for the busy ones to be
// released, until ctx ends) and stops the builds and probes.
func (p *Provider) Close(ctx context.Context) {
	var wg sync.WaitGroup
	for _, l := range p.kinds {
		if l.pool == nil {
			continue // a start that failed before Start
		}
		wg.Add(1)
		go func() { defer wg.Done(); l.pool.Close(ctx) }()
	}
	wg.Wait()
	p.close()
	p.work.Wait()
}
