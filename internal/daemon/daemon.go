// Package daemon is sandboxd without its socket: it wires the languages,
// sandboxes, sessions, projects, policies and the state store together,
// and owns the request path (run.go): resolve → plan → limits → judge →
// lease → run → release → record. It does not speak HTTP (internal/server
// does) nor Docker (runtime does), and holds no container of its own:
// internal/sandbox owns containers and their leases, sessions own
// sessions. Its requests and results are its own types (result.go):
// internal/wire maps the API's to them.
package daemon

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/approvals"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/drain"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/internal/metrics"
	"github.com/sandboxd/sandboxd/internal/projects"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/snapshots"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/internal/timeline"
	"github.com/sandboxd/sandboxd/policy"
	"github.com/sandboxd/sandboxd/runtime"
)

// Version is sandboxd's version, set at build time.
var Version = "dev"

// Daemon is the running daemon minus its socket.
type Daemon struct {
	cfg     *config.Config
	rt      runtime.Runtime
	engine  *engineProbe
	store   *state.Store
	log     hclog.Logger
	started time.Time
	gate    drain.Gate

	Languages *languages.Registry
	Sandboxes *sandbox.Provider
	Sessions  *sessions.Sessions
	Projects  *projects.Projects
	Snapshots *snapshots.Snapshots
	Metrics   *metrics.Metrics
	policies  *policy.Chain
	records   *recorder
	egress    *egress.Proxy
	Approvals *approvals.Manager
	forwards  forwards
	egressed  *egressCounter

	spools       chan struct{} // uploads in state_dir waiting for their ruling (maxSpooled)
	timeline     *timeline.Timeline
	timelineStop chan struct{}
	timelineDone chan struct{}

	// sweeping removes what a previous run left (see reconcile); Close
	// stops it and waits.
	stopSweep context.CancelFunc
	swept     chan struct{}
}

// New starts the plugins, gives stored sessions their containers back,
// starts the warm pools, and removes in the background every other
// container a previous run of this daemon left behind. A start that fails closes what it
// had opened, and nothing else.
func New(ctx context.Context, cfg *config.Config, rt runtime.Runtime, store *state.Store, log hclog.Logger) (_ *Daemon, err error) {
	var opened []func() // closed in reverse if a later step fails
	defer func() {
		for i := len(opened) - 1; err != nil && i >= 0; i-- {
			opened[i]()
		}
	}()
	d := &Daemon{cfg: cfg, rt: rt, engine: newEngineProbe(rt.Ping), store: store, log: log, started: time.Now(), spools: make(chan struct{}, maxSpooled),
		timeline: timeline.New(timelineEvery, timelineKept), timelineStop: make(chan struct{}), timelineDone: make(chan struct{})}
	d.Metrics = metrics.New(d, Version)
	d.egressed = &egressCounter{Metrics: d.Metrics}
	d.records = &recorder{store: store, log: log, metrics: d.Metrics, outcomes: map[string]uint64{}}
	if _, err := rt.Ping(ctx); err != nil {
		return nil, err
	}
	roots, err := upstreamRoots(cfg.EgressCAFile)
	if err != nil {
		return nil, err
	}
	if d.egress, err = egress.New(egress.Options{Dir: filepath.Join(cfg.StateDir, "egress"), Events: d.egressed, Log: log,
		CAFile: cfg.EgressCAFile, Roots: roots}); err != nil {
		return nil, err
	}
	if d.Languages, err = languages.Load(ctx, cfg, log); err != nil {
		return nil, err
	}
	opened = append(opened, d.Languages.Close)
	d.Sandboxes = sandbox.New(ctx, cfg, d.Languages, rt, store, d.Metrics, d.egress, log)
	opened = append(opened, func() { d.Sandboxes.Close(ctx) })
	if d.policies, err = policy.Load(ctx, cfg.Policies, cfg.PluginDir, log); err != nil {
		return nil, err
	}
	opened = append(opened, d.policies.Close)
	if d.Approvals, err = approvals.New(store, cfg.ApprovalTimeout, cfg.Approvers, log); err != nil {
		return nil, err
	}
	opened = append(opened, d.Approvals.Close)
	d.Projects = projects.New(cfg.StateDir, store, cfg.Sessions.MaxTransfer, cfg.Projects)
	d.Snapshots = snapshots.New(cfg.StateDir, store, cfg.Snapshots)
	d.Sessions = sessions.New(cfg.Sessions, cfg.StateDir, d.Languages, d.Sandboxes, d.Projects, d.Snapshots, store, &d.gate, log)
	unclaimed, err := d.reconcile(ctx)
	if err != nil {
		return nil, err
	}
	d.Sandboxes.Start()
	d.Sessions.Start()
	d.sweep(unclaimed)
	d.sampleTimeline()
	return d, nil
}

// upstreamRoots are the CAs the egress proxy verifies a host by where it
// speaks TLS itself (to write a secret): the bundle sandboxes trust, or
// the host's when that is the image's own.
func upstreamRoots(caFile string) (*x509.CertPool, error) {
	if caFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("network.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("network.ca_file %s holds no PEM certificate", caFile)
	}
	return pool, nil
}

// reconcile gives stored sessions their containers back (or marks them
// lost) and returns every other container labelled as this daemon's.
func (d *Daemon) reconcile(ctx context.Context) ([]runtime.Container, error) {
	list, err := d.rt.List(ctx)
	if err != nil {
		return nil, err
	}
	keep, err := d.Sessions.Recover(ctx, list)
	if err != nil {
		return nil, err
	}
	var unclaimed []runtime.Container
	for _, c := range list {
		if !keep[c.ID] {
			unclaimed = append(unclaimed, c)
		}
	}
	d.egress.Prune() // the sockets of those containers, before any new one's
	if left, _ := filepath.Glob(filepath.Join(d.cfg.StateDir, SpoolPrefix+"*")); len(left) > 0 {
		for _, f := range left { // uploads a crash left while they were judged
			_ = os.Remove(f)
		}
	}
	if _, corrupt, err := d.store.Projects(); err == nil {
		for _, c := range corrupt {
			d.log.Error("skipped a project record that does not decode", "key", c.Key, "error", c.Err)
		}
	}
	return unclaimed, nil
}

// sweep removes the containers no session claimed at start, in the
// background: a killed daemon's warm pools took 14-22 s to remove (132
// containers), and the daemon served only after. One at a time, to leave
// the host to the sessions' first calls and the pools' refill (four at
// a time, those calls took 163 ms p99 among 100 frozen sessions).
func (d *Daemon) sweep(unclaimed []runtime.Container) {
	ctx, stop := context.WithCancel(context.Background())
	d.stopSweep, d.swept = stop, make(chan struct{})
	go func() {
		defer close(d.swept)
		if err := runtime.RemoveUnclaimed(ctx, d.rt, unclaimed, nil, 1, d.log); err != nil && ctx.Err() == nil {
			// Left for the next start (or the operator): serving goes on.
			d.log.Error("some containers no session claims could not be removed", "error", err)
		}
	}()
}

// Store is the daemon's state store, for the listeners that keep records
// of their own beside its (internal/e2b).
func (d *Daemon) Store() *state.Store { return d.store }

// Draining says whether Close has begun.
func (d *Daemon) Draining() bool { return d.gate.Closing() }

// finalCleanupTimeout bounds Close's last sweep of containers left over
// (and half the shutdown_timeout does).
const finalCleanupTimeout = 20 * time.Second

// Close drains: new requests are refused, running executions finish (or
// hit their deadlines), pools destroy their containers, and anything still
// labelled as ours but a session's is removed.
func (d *Daemon) Close(ctx context.Context) {
	d.Approvals.Close() // requests waiting for a person would hold the drain
	if !d.gate.Close(ctx) {
		d.log.Warn("shutdown deadline reached with executions still running")
	}
	d.Sandboxes.Close(ctx)
	d.Languages.Close()
	d.records.wait()
	close(d.timelineStop)
	<-d.timelineDone
	keep := d.Sessions.Close()
	d.stopSweep() // what it has not removed, the sweep below does
	<-d.swept
	// Bounded, so that an engine slow to remove one container cannot hold
	// the exit: what is left is removed by the next start's reconcile.
	sweep := finalCleanupTimeout
	if half := d.cfg.ShutdownTimeout / 2; half > 0 && half < sweep {
		sweep = half
	}
	cleanup, cancel := context.WithTimeout(context.Background(), sweep)
	defer cancel()
	if list, err := d.rt.List(cleanup); err != nil {
		d.log.Warn("final cleanup failed", "error", err)
	} else if err := runtime.RemoveUnclaimed(cleanup, d.rt, list, keep, 4, d.log); err != nil {
		d.log.Warn("final cleanup failed", "error", err)
	}
	d.policies.Close()
}

// Plugins reports the health of every block's plugin process, language
// blocks first.
func (d *Daemon) Plugins() []stats.Plugin {
	var out []stats.Plugin
	for _, l := range d.Languages.All() {
		out = append(out, stats.Plugin{Health: l.Plugin.Process.Health(), Version: l.Info.Version, Block: l.Config.Name})
	}
	// policy.Load made one plugin per block of cfg.Policies, in its order.
	for i, p := range d.policies.Plugins() {
		out = append(out, stats.Plugin{Health: p.Health(), Version: p.Version, Block: d.cfg.Policies[i].Name})
	}
	return out
}

// Health checks the engine (see engineProbe) and the plugins.
func (d *Daemon) Health(ctx context.Context) stats.Health {
	h := stats.Health{Status: "ok", Version: Version, Uptime: time.Since(d.started), Plugins: d.Plugins()}
	if h.Engine, h.EngineErr = d.engine.get(ctx); h.EngineErr != nil {
		h.Problems = append(h.Problems, "docker: "+h.EngineErr.Error())
	}
	for _, p := range h.Plugins {
		if !p.RetryAt.IsZero() {
			h.Problems = append(h.Problems, fmt.Sprintf("plugin %s: %s", p.Name, p.LastError))
		}
	}
	if d.gate.Closing() {
		h.Problems = append(h.Problems, "shutting down")
	}
	if len(h.Problems) > 0 {
		h.Status = "degraded"
	}
	return h
}

// Stats reports counters since start.
func (d *Daemon) Stats() stats.Figures {
	st := stats.Figures{
		Uptime: time.Since(d.started), InFlight: d.gate.InFlight(),
		Pools: d.Sandboxes.Pools(), Rules: d.policies.Stats(),
	}
	st.Executions, st.Outcomes = d.records.counts()
	c := d.Sessions.Counts()
	st.Sessions, st.SessionsFrozen, st.SessionsHibernated, st.SessionsLost = c.Active, c.Frozen, c.Hibernated, c.Lost
	st.Egress.Allowed, st.Egress.Denied = d.egressed.allowed.Load(), d.egressed.denied.Load()
	return st
}

// Secrets lists the secret blocks, names and hosts only.
func (d *Daemon) Secrets() []Secret {
	out := []Secret{}
	for name, s := range d.cfg.Secrets {
		out = append(out, Secret{Name: name, Hosts: s.Hosts.Strings(), Header: s.Header, Query: s.Query})
	}
	slices.SortFunc(out, func(a, b Secret) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SessionUsage implements metrics.Figures.
func (d *Daemon) SessionUsage() map[string][]stats.SandboxUsage { return d.Sessions.Usage() }

// Executions lists recorded executions, newest first.
func (d *Daemon) Executions(limit int, filter state.ExecutionFilter, before string) ([]state.Execution, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	list, err := d.store.Executions(limit, filter, before)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Invalid, "%v", err)
	}
	return list, nil
}

// BuildImages builds the images of the named languages (every language
// when none is named); progress receives the builds' output.
func (d *Daemon) BuildImages(ctx context.Context, languages []string, progress func(image, line string)) ([]images.Built, error) {
	if aerr := d.gate.Enter(); aerr != nil {
		return nil, aerr
	}
	defer d.gate.Leave()
	return d.Sandboxes.Build(ctx, languages, progress)
}
