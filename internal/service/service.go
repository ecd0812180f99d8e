// Package service is what sandboxd does, independent of HTTP: it resolves
// languages, asks language plugins for plans, takes warm containers from
// the pools, runs plans through the supervisor, and records executions.
//
// It owns the languages (plugin + pool per configured language) and the
// in-flight executions. It does not speak HTTP (internal/server does) nor
// Docker (runtime does).
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/metrics"
	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/policy"
	"github.com/sandboxd/sandboxd/runtime"
)

// Version is sandboxd's version, set at build time.
var Version = "dev"

// pluginCallTimeout bounds every call to a language plugin.
const pluginCallTimeout = 5 * time.Second

// Service is the running daemon minus its socket.
type Service struct {
	cfg     *config.Config
	rt      runtime.Runtime
	store   *state.Store
	log     hclog.Logger
	started time.Time

	langs  []*lang          // in config order
	lookup map[string]*lang // name, alias or extension -> language

	policies      *policy.Chain
	policyPlugins []policyPlugin // in config order

	sessMu      sync.Mutex
	sessions    map[string]*session    // live, by id
	lost        map[string]api.Session // lost, kept until deleted or past their TTL
	sessPending int                    // sessions being created
	projMu      sync.Mutex             // project files and blobs
	stop        chan struct{}          // ends the janitor
	starts      chan struct{}          // background container creates at once
	buildMu     sync.Mutex             // one image build at a time
	probeMu     sync.Mutex             // one version probe at a time

	draining   atomic.Bool
	inflight   sync.WaitGroup
	inflightN  atomic.Int64
	executions atomic.Uint64
	outcomesMu sync.Mutex
	outcomes   map[string]uint64
	records    sync.WaitGroup
	metrics    *metrics.Metrics
}

// lang is one configured language.
type lang struct {
	cfg       config.Language
	plugin    plugins.Language
	info      language.Info
	baseImage string    // the configured image (or the plugin's default)
	img       langImage // what containers are made from now
	pool      *pool.Pool[*runtime.Sandbox]
}

// New starts the language plugins, removes containers a previous run of
// this daemon left behind, and starts the warm pools.
func New(ctx context.Context, cfg *config.Config, rt runtime.Runtime, store *state.Store, log hclog.Logger) (*Service, error) {
	s := &Service{cfg: cfg, rt: rt, store: store, log: log, started: time.Now(),
		lookup: map[string]*lang{}, outcomes: map[string]uint64{},
		sessions: map[string]*session{}, lost: map[string]api.Session{}, stop: make(chan struct{}),
		starts: make(chan struct{}, 2)} // concurrent background creates: one per core here
	s.metrics = metrics.New(s, Version)
	if _, err := rt.Ping(ctx); err != nil {
		return nil, err
	}
	for _, lc := range cfg.Languages {
		l, err := s.loadLanguage(ctx, lc)
		if err != nil {
			s.closePlugins()
			return nil, err
		}
		s.langs = append(s.langs, l)
	}
	if err := s.loadPolicies(ctx); err != nil {
		s.closePlugins()
		return nil, err
	}
	if err := s.reconcile(ctx); err != nil {
		s.closePlugins()
		return nil, err
	}
	for _, l := range s.langs {
		s.startPool(l)
	}
	go s.janitor()
	go s.probeVersions()
	return s, nil
}

func (s *Service) loadLanguage(ctx context.Context, lc config.Language) (*lang, error) {
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
	proc, err := plugins.NewProcess(s.cfg.PluginDir, plugins.KindLanguage, lc.Plugin, pluginCallTimeout, s.log, env...)
	if err != nil {
		return nil, fmt.Errorf("language %q: %w", lc.Name, err)
	}
	l := &lang{cfg: lc, plugin: plugins.Language{Process: proc}}
	if l.info, err = l.plugin.Info(ctx); err != nil {
		proc.Close()
		return nil, fmt.Errorf("language %q: %w", lc.Name, err)
	}
	l.baseImage = lc.Image
	if l.baseImage == "" {
		l.baseImage = l.info.DefaultImage
	}
	if l.baseImage == "" {
		proc.Close()
		return nil, fmt.Errorf("language %q: no image: set image in its block of %s", lc.Name, s.cfg.Path)
	}
	keys := append([]string{lc.Name, l.info.Name}, l.info.Aliases...)
	keys = append(keys, l.info.Extensions...)
	for _, k := range keys {
		k = strings.ToLower(strings.TrimPrefix(k, "."))
		if other, ok := s.lookup[k]; ok && other.cfg.Name != lc.Name {
			s.log.Warn("language name claimed twice; the first block keeps it", "name", k, "kept", other.cfg.Name, "ignored", lc.Name)
			continue
		}
		s.lookup[k] = l
	}
	if lc.Limits.Disk >= lc.Limits.Memory {
		s.log.Warn("disk is not below memory: workspace files are in RAM and count toward memory, so a full workspace is killed for memory before it sees ENOSPC",
			"language", lc.Name, "memory", api.ByteSize(lc.Limits.Memory).String(), "disk", api.ByteSize(lc.Limits.Disk).String())
	}
	if err := s.resolveImage(ctx, l).err; err != nil {
		s.log.Error("runs of this language fail until its image is there", "language", lc.Name, "error", err)
	}
	return l, nil
}

func (s *Service) startPool(l *lang) {
	l.pool = pool.New(pool.Options{
		Name: l.cfg.Name, MinIdle: l.cfg.Pool.MinIdle, Max: l.cfg.Pool.Max,
		QueueTimeout: l.cfg.Pool.QueueTimeout, Starts: s.starts, Logger: s.log,
	}, pool.Hooks[*runtime.Sandbox]{
		Create: func(ctx context.Context) (*runtime.Sandbox, error) {
			if err := l.img.get().err; err != nil {
				return nil, err
			}
			return s.createSandbox(ctx, s.spec(l))
		},
		Destroy: s.removeSandbox,
		Alive:   func(sb *runtime.Sandbox) bool { return sb.Alive() },
	})
}

// reconcile gives stored sessions their containers back (or marks them
// lost) and removes every other container labelled as this daemon's.
func (s *Service) reconcile(ctx context.Context) error {
	list, err := s.rt.List(ctx)
	if err != nil {
		return err
	}
	keep, err := s.recoverSessions(ctx, list)
	if err != nil {
		return err
	}
	return s.removeUnclaimed(ctx, list, keep)
}

// removeUnclaimed removes the containers of list not in keep.
func (s *Service) removeUnclaimed(ctx context.Context, list []runtime.Container, keep map[string]bool) error {
	for _, c := range list {
		if keep[c.ID] {
			continue
		}
		s.log.Info("removing a container no session claims", "container_id", c.ID[:12], "language", c.Language)
		if err := s.rt.Remove(ctx, c.ID); err != nil {
			return err
		}
	}
	return nil
}

// enter admits a request unless sandboxd is draining; leave ends it.
func (s *Service) enter() *api.Error {
	if s.draining.Load() {
		return apiErr(api.CodeShuttingDown, "sandboxd is shutting down; retry against the next instance")
	}
	s.inflight.Add(1)
	s.inflightN.Add(1)
	return nil
}

func (s *Service) leave() {
	s.inflightN.Add(-1)
	s.inflight.Done()
}

func runtimeLimits(l config.Limits) runtime.Limits {
	return runtime.Limits{Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids, Disk: l.Disk}
}

// Close drains: new requests are refused, running executions finish (or
// hit their deadlines), pools destroy their containers, and anything still
// labelled as ours is removed.
func (s *Service) Close(ctx context.Context) {
	s.draining.Store(true)
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("shutdown deadline reached with executions still running")
	}
	var wg sync.WaitGroup
	for _, l := range s.langs {
		wg.Add(1)
		go func(l *lang) { defer wg.Done(); l.pool.Close(ctx) }(l)
	}
	wg.Wait()
	s.records.Wait()
	close(s.stop)
	// Sessions outlive the daemon: their containers stay, their records
	// are brought up to date, and the next sandboxd attaches to them.
	s.flushSessions()
	keep := map[string]bool{}
	s.sessMu.Lock()
	for _, ss := range s.sessions {
		keep[ss.rec.ContainerID] = true
	}
	s.sessMu.Unlock()
	if list, err := s.rt.List(context.Background()); err != nil {
		s.log.Warn("final cleanup failed", "error", err)
	} else if err := s.removeUnclaimed(context.Background(), list, keep); err != nil {
		s.log.Warn("final cleanup failed", "error", err)
	}
	s.closePlugins()
}

func (s *Service) closePlugins() {
	for _, l := range s.langs {
		l.plugin.Close()
	}
	for _, p := range s.policyPlugins {
		p.plugin.Close()
	}
}

// resolve finds a language by name, alias or extension.
func (s *Service) resolve(name string) (*lang, *api.Error) {
	if name == "" {
		return nil, apiErr(api.CodeInvalidRequest, "language is required; one of: %s", s.languageNames())
	}
	l, ok := s.lookup[strings.ToLower(strings.TrimPrefix(name, "."))]
	if !ok {
		return nil, apiErr(api.CodeUnknownLanguage, "no language %q; available: %s", name, s.languageNames())
	}
	return l, nil
}

func (s *Service) languageNames() string {
	names := make([]string, len(s.langs))
	for i, l := range s.langs {
		names[i] = l.cfg.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Languages lists the configured languages with their images, runtime
// versions and pool figures.
func (s *Service) Languages(ctx context.Context) []api.Language {
	out := make([]api.Language, 0, len(s.langs))
	for _, l := range s.langs {
		_ = s.ready(ctx, l)
		st := l.img.get()
		entry := api.Language{
			Name: l.cfg.Name, DisplayName: l.info.DisplayName,
			Aliases: l.info.Aliases, Extensions: l.info.Extensions,
			Image: st.ref, BaseImage: l.baseImage, Packages: l.cfg.Packages, ImagePresent: st.id != "",
			Version: st.version, Plugin: l.cfg.Plugin, Limits: apiLimits(l.cfg.Limits), Pool: l.pool.Stats(),
		}
		if st.err != nil {
			entry.Error = st.err.Error()
		}
		out = append(out, entry)
	}
	return out
}

// Plugins reports every plugin's health, language plugins first.
func (s *Service) Plugins() []api.Plugin {
	out := make([]api.Plugin, 0, len(s.langs)+len(s.policyPlugins))
	entry := func(p *plugins.Process, version string) api.Plugin {
		h := p.Health()
		return api.Plugin{
			Kind: string(h.Kind), Name: h.Name, Path: h.Path, Version: version,
			Running: h.Running, Restarts: h.Restarts, LastError: h.LastError, RetryAt: h.RetryAt,
		}
	}
	for _, l := range s.langs {
		out = append(out, entry(l.plugin.Process, l.info.Version))
	}
	for _, p := range s.policyPlugins {
		out = append(out, entry(p.plugin.Process, p.info.Version))
	}
	return out
}

// Health checks the engine and the plugins.
func (s *Service) Health(ctx context.Context) api.Health {
	h := api.Health{Status: "ok", Version: Version, Uptime: api.Duration(time.Since(s.started)), Plugins: s.Plugins()}
	if info, err := s.rt.Ping(ctx); err != nil {
		h.Docker = api.DockerHealth{Error: err.Error()}
		h.Problems = append(h.Problems, "docker: "+err.Error())
	} else {
		h.Docker = api.DockerHealth{OK: true, Version: info.Version, APIVersion: info.APIVersion, Runtime: info.Runtime}
	}
	for _, p := range h.Plugins {
		if !p.RetryAt.IsZero() {
			h.Problems = append(h.Problems, fmt.Sprintf("plugin %s: %s", p.Name, p.LastError))
		}
	}
	if s.draining.Load() {
		h.Problems = append(h.Problems, "shutting down")
	}
	if len(h.Problems) > 0 {
		h.Status = "degraded"
	}
	return h
}

// Stats reports counters since start.
func (s *Service) Stats() api.Stats {
	st := api.Stats{
		Uptime: api.Duration(time.Since(s.started)), Executions: s.executions.Load(),
		InFlight: s.inflightN.Load(), Outcomes: map[string]uint64{}, Pools: map[string]api.PoolStats{},
		Rules: s.policies.Stats(),
	}
	s.outcomesMu.Lock()
	for k, v := range s.outcomes {
		st.Outcomes[k] = v
	}
	s.outcomesMu.Unlock()
	for _, l := range s.langs {
		st.Pools[l.cfg.Name] = l.pool.Stats()
	}
	s.sessMu.Lock()
	st.Sessions, st.SessionsLost = len(s.sessions), len(s.lost)
	s.sessMu.Unlock()
	return st
}

// Metrics serves the Prometheus exposition.
func (s *Service) Metrics() http.Handler { return s.metrics.Handler() }

// Executions lists recorded executions, newest first.
func (s *Service) Executions(limit int, language, before string) ([]api.Execution, *api.Error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	list, err := s.store.Executions(limit, language, before)
	if err != nil {
		return nil, apiErr(api.CodeInvalidRequest, "%v", err)
	}
	return list, nil
}

func apiErr(code, format string, args ...any) *api.Error {
	return &api.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorFor maps internal errors to API errors.
func errorFor(err error) *api.Error {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, language.ErrInvalidProgram):
		return apiErr(api.CodeInvalidRequest, "%v", err)
	case errors.Is(err, plugins.ErrUnavailable):
		return apiErr(api.CodePluginUnavailable, "%v", err)
	case errors.Is(err, pool.ErrExhausted):
		return apiErr(api.CodePoolExhausted, "%v", err)
	case errors.Is(err, pool.ErrClosed):
		return apiErr(api.CodeShuttingDown, "sandboxd is shutting down; retry against the next instance")
	case errors.Is(err, runtime.ErrImageMissing):
		return apiErr(api.CodeImageMissing, "%v", err)
	case errors.Is(err, runtime.ErrUnavailable):
		return apiErr(api.CodeRuntimeUnavailable, "%v", err)
	}
	return apiErr(api.CodeInternal, "%v", err)
}
