// Package languages owns the configured languages and the containers they
// are run in: each language's plugin, the image its containers are made
// from (and that image's runtime version), and its warm pool. It is where
// every sandbox container is created and removed, so that each start and
// removal is counted once.
//
// It answers "which language is this name" and "give me a container of
// it"; it knows nothing of requests, policies or sessions.
package languages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/metrics"
	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// pluginCallTimeout bounds every call to a language plugin.
const pluginCallTimeout = 5 * time.Second

// Language is one configured language.
type Language struct {
	Config    config.Language
	Plugin    plugins.Language
	Info      language.Info
	baseImage string // the configured image (or the plugin's default)
	img       imageCell
	pool      *pool.Pool[*runtime.Sandbox]
	// fixedLimits is set once its OCI runtime refused to change a running
	// container's limits: lower limits then get a container of their own.
	fixedLimits atomic.Bool
	allow       egress.List // Config.Network.Allow, parsed
	warm        warmCounts
	scripts     sync.Map    // warm runtime's index -> the script name it is started for (see LearnScript)
	contexts    []*Language // Config.Contexts, resolved
}

// Name is the language's configured name.
func (l *Language) Name() string { return l.Config.Name }

// Limits are the language's ceilings.
func (l *Language) Limits() runtime.Limits { return l.Config.Limits }

// WaitingFor says what a run queued for one of its containers waits on
// now, "" when nothing in particular (see pool.WaitingFor).
func (l *Language) WaitingFor() string { return l.pool.WaitingFor() }

// Registry is every configured language, in config order.
type Registry struct {
	cfg     *config.Config
	rt      runtime.Runtime
	store   *state.Store
	metrics *metrics.Metrics
	egress  *egress.Proxy
	log     hclog.Logger

	langs   []*Language
	lookup  map[string]*Language // name, alias or extension -> language
	starts  chan struct{}        // background container creates at once
	closing context.Context      // done at Close: ends version probes and background builds
	close   context.CancelFunc
	work    sync.WaitGroup // version probes and background builds
	buildMu sync.Mutex     // one image build at a time
	probeMu sync.Mutex     // one version probe at a time
}

// Load starts the language plugins and resolves the languages' images;
// the pools start with Start.
func Load(ctx context.Context, cfg *config.Config, rt runtime.Runtime, store *state.Store, m *metrics.Metrics, gates *egress.Proxy, log hclog.Logger) (*Registry, error) {
	r := &Registry{cfg: cfg, rt: rt, store: store, metrics: m, egress: gates, log: log, lookup: map[string]*Language{},
		starts: make(chan struct{}, 2), // concurrent background creates: one per core here
	}
	r.closing, r.close = context.WithCancel(context.Background())
	for _, lc := range cfg.Languages {
		l, err := r.load(ctx, lc)
		if err != nil {
			r.closePlugins()
			return nil, err
		}
		r.langs = append(r.langs, l)
	}
	for _, l := range r.langs {
		if err := r.resolveContexts(l); err != nil {
			r.closePlugins()
			return nil, err
		}
	}
	return r, nil
}

// resolveContexts finds the languages whose contexts l's sessions run
// beside their own.
func (r *Registry) resolveContexts(l *Language) error {
	for _, name := range l.Config.Contexts {
		c, err := r.Resolve(name)
		switch {
		case err != nil:
			return fmt.Errorf("language %q: contexts: %w (in %s)", l.Name(), err, r.cfg.Path)
		case len(c.Info.ContextCommand) == 0:
			return fmt.Errorf("language %q: contexts: language %q has no contexts (its plugin declares no context command); take it out of the list in %s", l.Name(), name, r.cfg.Path)
		case c != l && !slices.Contains(l.contexts, c):
			l.contexts = append(l.contexts, c)
		}
	}
	return nil
}

// ContextLanguage is the language of a context in one of l's sessions
// that asks for name: l's own ("" or l's name), or one of those its block
// lists in contexts.
func (r *Registry) ContextLanguage(l *Language, name string) (*Language, error) {
	if name == "" {
		return l, nil
	}
	c, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	if c == l || c.Config.Plugin == l.Config.Plugin {
		return l, nil // its own kernel, by its plugin's names too
	}
	if !slices.Contains(l.contexts, c) {
		return nil, errdefs.Errorf(errdefs.Invalid, "a %s session runs contexts of %s: a context of %s needs it in the contexts of language %q in sandboxd.hcl, and its interpreter in the image",
			l.Name(), strings.Join(l.ContextLanguages(), ", "), c.Name(), l.Name())
	}
	return c, nil
}

// ContextLanguages are the names of the languages whose contexts l's
// sessions run: its own, then those its block lists.
func (l *Language) ContextLanguages() []string {
	names := []string{l.Name()}
	for _, c := range l.contexts {
		names = append(names, c.Name())
	}
	return names
}

func (r *Registry) load(ctx context.Context, lc config.Language) (*Language, error) {
	var env []string
	if g := lc.Generic; g != nil {
		spec, err := json.Marshal(language.Template{
			Meta: language.Info{
				Name: lc.Name, DisplayName: g.DisplayName, Version: "hcl", Extensions: g.Extensions,
				Aliases: g.Aliases, DefaultImage: lc.Image, VersionCommand: g.VersionCommand,
			},
			MainFile: g.MainFile, Sources: g.Sources, Compile: g.Compile, Run: g.Run, Env: g.Env,
		})
		if err != nil {
			return nil, err
		}
		env = append(env, "SANDBOXD_LANGUAGE="+string(spec))
	}
	proc, err := plugins.NewProcess(r.cfg.PluginDir, plugins.KindLanguage, lc.Plugin, pluginCallTimeout, r.log, env...)
	if err != nil {
		return nil, fmt.Errorf("language %q: %w", lc.Name, err)
	}
	l := &Language{Config: lc, Plugin: plugins.Language{Process: proc}}
	if l.allow, err = egress.Parse(lc.Network.Allow); err != nil { // config checked them
		proc.Close()
		return nil, fmt.Errorf("language %q: network: %w", lc.Name, err)
	}
	if l.Info, err = l.Plugin.Info(ctx); err != nil {
		proc.Close()
		return nil, fmt.Errorf("language %q: %w", lc.Name, err)
	}
	l.baseImage = lc.Image
	if l.baseImage == "" {
		l.baseImage = l.Info.DefaultImage
	}
	if l.baseImage == "" {
		proc.Close()
		return nil, fmt.Errorf("language %q: no image: set image in its block of %s", lc.Name, r.cfg.Path)
	}
	keys := append([]string{lc.Name, l.Info.Name}, l.Info.Aliases...)
	keys = append(keys, l.Info.Extensions...)
	for _, k := range keys {
		k = strings.ToLower(strings.TrimPrefix(k, "."))
		if other, ok := r.lookup[k]; ok && other.Config.Name != lc.Name {
			say := r.log.Warn
			if other.Config.Plugin == lc.Plugin && k != strings.ToLower(lc.Name) {
				say = r.log.Debug // a second version of a plugin's language: its names stay the first block's, as meant
			}
			say("language name claimed twice; the first block keeps it", "name", k, "kept", other.Config.Name, "ignored", lc.Name)
			continue
		}
		r.lookup[k] = l
	}
	if lc.Limits.Disk >= lc.Limits.Memory {
		r.log.Warn("disk is not below memory: workspace files are in RAM and count toward memory, so a full workspace is killed for memory before it sees ENOSPC",
			"language", lc.Name, "memory", units.ByteSize(lc.Limits.Memory).String(), "disk", units.ByteSize(lc.Limits.Disk).String())
	}
	if err := r.resolveImage(ctx, l).err; err != nil && r.buildsMissing(l) {
		r.log.Info("the image of this language is missing; sandboxd builds it in the background", "language", lc.Name, "image", l.baseImage)
	} else if err != nil {
		r.log.Error("runs of this language fail until its image is there", "language", lc.Name, "error", err)
	}
	return l, nil
}

// Start starts the warm pools, the builds of missing images if the
// config asks for them (see buildMissing) and, once the pools have
// filled, the probes of the runtimes' versions.
func (r *Registry) Start() {
	var missing [][]*Language
	if r.cfg.BuildMissingImages {
		missing = r.missingImages() // before the pools try to fill
	}
	for _, l := range r.langs {
		l.pool = pool.New(pool.Options{
			Name: l.Config.Name, MinIdle: l.Config.Pool.MinIdle, Max: l.Config.Pool.Max,
			QueueTimeout: l.Config.Pool.QueueTimeout, Starts: r.starts, Logger: r.log,
		}, pool.Hooks[*runtime.Sandbox]{
			// A container joins the pool once its warm runtime, if any,
			// is ready (or has failed, and it will run programs cold).
			Create: func(ctx context.Context, waiting func(string)) (*runtime.Sandbox, error) {
				if b := l.img.buildingNow(); b != nil {
					return nil, fmt.Errorf("%w: %w", pool.ErrNotReady, images.Building(l.Config.Name, l.baseImage, b.Step, time.Since(b.Since)))
				}
				if err := l.img.get().err; err != nil {
					return nil, err
				}
				spec := r.spec(l)
				spec.Waiting = waiting
				sb, err := r.createFor(ctx, l, spec)
				if err == nil && l.Warm() {
					r.warmUp(ctx, l, sb)
				}
				return sb, err
			},
			Destroy: r.Remove,
			Alive:   func(sb *runtime.Sandbox) bool { return sb.Alive() },
		})
	}
	r.probe()
	if len(missing) > 0 {
		r.background(func() { r.buildMissing(missing) })
	}
}

// Resolve finds a language by name, alias or extension.
func (r *Registry) Resolve(name string) (*Language, error) {
	if name == "" {
		return nil, errdefs.Errorf(errdefs.Invalid, "language is required; one of: %s", r.names())
	}
	l, ok := r.lookup[strings.ToLower(strings.TrimPrefix(name, "."))]
	if !ok {
		return nil, errdefs.Errorf(errdefs.UnknownLanguage, "no language %q; available: %s", name, r.names())
	}
	return l, nil
}

// PoolFull says whether l's pool has every container it may have busy:
// the next Take waits for one to be given back.
func (r *Registry) PoolFull(l *Language) bool {
	st := l.pool.Stats()
	return st.Idle == 0 && st.Busy+st.Starting+st.Recycling >= st.Max
}

// Lookup is Resolve without the error: the language a stored record names.
func (r *Registry) Lookup(name string) (*Language, bool) {
	l, ok := r.lookup[name]
	return l, ok
}

func (r *Registry) names() string {
	names := make([]string, len(r.langs))
	for i, l := range r.langs {
		names[i] = l.Config.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Acquire takes a container of l for one run, under limits. release ends
// the run: a container whose run ended cleanly (the program and all it
// started ended, the sandbox intact) is recycled for another run (see
// recycle); any other is removed.
func (r *Registry) Acquire(ctx context.Context, l *Language, limits runtime.Limits) (sb *runtime.Sandbox, release func(clean bool), err error) {
	if err := r.ready(ctx, l); err != nil {
		return nil, nil, err
	}
	if limits.Resized(l.Limits()) && l.fixedLimits.Load() {
		sb, err = r.create(ctx, l, limits, nil, "")
	} else if sb, err = l.pool.Acquire(ctx); err == nil {
		warm := sb
		if sb, err = r.fit(ctx, l, warm, limits, func() { l.pool.Release(warm) }); sb == warm {
			lowered := limits.Resized(l.Limits())
			return sb, func(clean bool) {
				if !clean {
					r.metrics.Recycled(l.Name(), "run")
					l.pool.Release(sb)
					return
				}
				l.pool.Recycle(sb, func(ctx context.Context, sb *runtime.Sandbox) bool {
					return r.recycle(ctx, l, sb, lowered)
				})
			}, nil
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return sb, func(bool) { r.Remove(sb) }, nil
}

// recycleTimeout bounds making a container fresh after a run.
const recycleTimeout = 10 * time.Second

// recycle makes sb, which has just served a run cleanly, fresh for the
// next: its limits back to the language's if the run lowered them, every
// process ended and every writable place emptied, then checked against
// what the supervisor saw when the container was new, and the warm
// runtimes started again. It says whether sb may serve another run; one
// that has served max_runs, or that anything of this failed for, is
// retired.
func (r *Registry) recycle(ctx context.Context, l *Language, sb *runtime.Sandbox, lowered bool) bool {
	ctx, cancel := context.WithTimeout(ctx, recycleTimeout)
	defer cancel()
	sb.Runs++
	retire := func(why string, err error) bool {
		r.metrics.Recycled(l.Name(), why)
		if err != nil {
			r.log.Warn("a container could not be made fresh after a run; it is retired", "language", l.Name(),
				"container_id", runtime.ShortID(sb.ID), "runs", sb.Runs, "error", err)
		}
		return false
	}
	if gate := r.Gate(sb); gate != nil {
		gate.Allow(nil)
	}
	switch {
	case sb.Runs >= l.Config.Pool.MaxRuns:
		return retire("max_runs", nil)
	case !sb.Alive():
		return retire("gone", nil)
	}
	if lowered {
		if err := r.rt.Update(ctx, sb.ID, l.Limits()); err != nil {
			return retire("limits", err)
		}
	}
	// The warm runtimes start again in the same round trip.
	var warms []supervisor.WarmRequest
	if l.Warm() {
		warms = r.poolWarms(l)
	}
	res, err := sb.File(ctx, supervisor.OpRecycle, supervisor.FileRequest{Path: ".", Warm: warms}, nil, nil)
	switch {
	case err != nil:
		return retire("gone", err)
	case res.Error != "":
		return retire("not_fresh", errors.New(res.Error))
	}
	for i := range warms {
		warm := supervisor.FileResult{Error: "the supervisor did not say how the warm runtime started"}
		if len(res.WarmErrors) == len(warms) {
			warm.Error = res.WarmErrors[i]
		}
		r.warmed(l, sb, warm, nil)
	}
	r.metrics.Recycled(l.Name(), "kept")
	return true
}

// Take is a container of l, under limits, that a session keeps: a warm
// one, or with mounts (a project's files) a new one, as mounts are fixed
// at create time. The caller removes it with Remove.
func (r *Registry) Take(ctx context.Context, l *Language, limits runtime.Limits, mounts []runtime.Mount) (*runtime.Sandbox, error) {
	if err := r.ready(ctx, l); err != nil {
		return nil, err
	}
	if len(mounts) > 0 || (limits.Resized(l.Limits()) && l.fixedLimits.Load()) {
		return r.create(ctx, l, limits, mounts, "")
	}
	sb, err := l.pool.Take(ctx)
	if err != nil {
		return nil, err
	}
	return r.fit(ctx, l, sb, limits, func() { r.Remove(sb) })
}

// fit gives a warm container limits below the language's: in place, or
// where its OCI runtime cannot change them (gVisor's runsc), in a new
// container made with them, after which the language's warm containers
// are never tried again. done gives sb up when it is not the one returned.
func (r *Registry) fit(ctx context.Context, l *Language, sb *runtime.Sandbox, limits runtime.Limits, done func()) (*runtime.Sandbox, error) {
	if !limits.Resized(l.Limits()) {
		return sb, nil
	}
	err := r.rt.Update(ctx, sb.ID, limits)
	if err == nil {
		return sb, nil
	}
	done()
	if !errors.Is(err, runtime.ErrFixedLimits) {
		return nil, err
	}
	l.fixedLimits.Store(true)
	return r.create(ctx, l, limits, nil, "")
}

// Renew makes a new container of l for the session id: the replacement
// of one that could not be reset. The caller removes it with Remove.
func (r *Registry) Renew(ctx context.Context, l *Language, limits runtime.Limits, mounts []runtime.Mount, session string) (*runtime.Sandbox, error) {
	if err := r.ready(ctx, l); err != nil {
		return nil, err
	}
	return r.create(ctx, l, limits, mounts, session)
}

// create makes a container of l outside its pool, labelled with session
// ("": a fresh id).
func (r *Registry) create(ctx context.Context, l *Language, limits runtime.Limits, mounts []runtime.Mount, session string) (*runtime.Sandbox, error) {
	spec := r.spec(l)
	spec.Limits, spec.Mounts = limits, mounts
	if session != "" {
		spec.Labels[runtime.LabelSession] = session
	}
	return r.createFor(ctx, l, spec)
}

// spec is what a language's containers are made from; each gets a fresh
// session id label, the id it will have if a session takes it.
func (r *Registry) spec(l *Language) runtime.Spec {
	return runtime.Spec{
		Language: l.Config.Name,
		Image:    l.img.get().ref,
		Runtime:  l.Config.Runtime,
		Limits:   l.Config.Limits,
		Labels:   map[string]string{runtime.LabelSession: state.RandomID(8)},
	}
}

// Create creates and starts a container; every container sandboxd starts
// comes through here.
func (r *Registry) Create(ctx context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	began := time.Now()
	sb, err := r.rt.Create(ctx, spec)
	r.metrics.ContainerStarted(spec.Language, time.Since(began), err)
	return sb, err
}

// Remove removes a container; every removal of a sandbox comes through
// here.
func (r *Registry) Remove(sb *runtime.Sandbox) {
	err := r.rt.Remove(context.Background(), sb.ID)
	if err != nil {
		r.log.Warn("removing a sandbox failed", "container_id", runtime.ShortID(sb.ID), "error", err)
	}
	r.metrics.ContainerRemoved(sb.Language, err)
	r.closeGate(sb.Labels)
}

// closeGate closes the egress gate of the container labelled labels.
func (r *Registry) closeGate(labels map[string]string) {
	if key := labels[runtime.LabelEgress]; key != "" && r.egress != nil {
		r.egress.Close(key)
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
	Hibernation         string   // what a hibernated session keeps: "memory" or "workspace"
	Instructions        string
	Pool                stats.Pool
	Building            *Building // set while sandboxd builds its image
	Error               string    // e.g. the image is missing, and how to build it
}

// List describes the languages, in config order.
func (r *Registry) List(ctx context.Context) []Entry {
	out := make([]Entry, 0, len(r.langs))
	for _, l := range r.langs {
		_ = r.ready(ctx, l)
		st := l.img.get()
		entry := Entry{
			Name: l.Config.Name, DisplayName: l.Info.DisplayName,
			Aliases: l.Info.Aliases, Extensions: l.Info.Extensions,
			Image: st.ref, BaseImage: l.baseImage, Packages: l.Config.Packages, ImagePresent: st.id != "",
			Version: st.version, Plugin: l.Config.Plugin, Runtime: l.Config.Runtime, Limits: l.Config.Limits,
			Allow: l.allow.Strings(), Contexts: len(l.Info.ContextCommand) > 0, ContextLanguages: l.ContextLanguages()[1:],
			Hibernation: r.hibernation(ctx, l), Instructions: l.instructions(),
			Pool: l.poolStats(), Building: l.img.buildingNow(),
		}
		if entry.Building == nil && st.err != nil {
			entry.Error = st.err.Error()
		}
		out = append(out, entry)
	}
	return out
}

// Pools reports every language's pool figures.
func (r *Registry) Pools() map[string]stats.Pool {
	out := make(map[string]stats.Pool, len(r.langs))
	for _, l := range r.langs {
		out[l.Config.Name] = l.poolStats()
	}
	return out
}

// All is every language, in config order.
func (r *Registry) All() []*Language { return r.langs }

// Close destroys the warm containers (waiting for the busy ones to be
// released, until ctx ends), stops the probes and the plugins.
func (r *Registry) Close(ctx context.Context) {
	var wg sync.WaitGroup
	for _, l := range r.langs {
		wg.Add(1)
		go func() { defer wg.Done(); l.pool.Close(ctx) }()
	}
	wg.Wait()
	r.close()
	r.work.Wait()
	r.closePlugins()
}

func (r *Registry) closePlugins() {
	for _, l := range r.langs {
		l.Plugin.Close()
	}
}
