// Package sessions owns sessions: a container of one's own, taken from a
// language's warm pool (or, with a project, created with the project
// mounted), kept until it is deleted or expires. Records live in the
// state store so that a restarted sandboxd attaches to the containers
// again, or reports a session lost when its container is gone; a session
// is never recreated empty. An idle session hibernates: its workspace
// goes to an archive on disk and its container away, until the next call
// that needs it resumes it in a new one (see hibernate.go).
//
// Operations on one session run one at a time (its turn), in arrival
// order: an exec, a file transfer and a reset never overlap in one
// workspace. A context's cells are the exception: they take the
// context's own turn and run beside the rest (InContext), as a
// notebook's kernels do. What runs in a session is the request path's (see
// internal/daemon, which calls Use); this package keeps the sessions, their
// files, expiry and recovery.
package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/desktop"
	"github.com/sandboxd/sandboxd/internal/drain"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/hostmem"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/internal/projects"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/snapshots"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// janitorEvery is how often expiry is checked and usage written back.
const janitorEvery = time.Second

// Session is a session this daemon knows.
type Session struct {
	Lang   *languages.Language
	Limits runtime.Limits // its ceilings, at most the language's
	turn   chan struct{}  // holds one token: whoever has it may use sb

	mu    sync.Mutex // guards what follows
	rec   state.Session
	lease *sandbox.Lease // its container; nil while hibernated, and once lost or closed; kept while frozen
	// detached is the container of a session frozen when sandboxd
	// started, connected to once it thaws.
	detached *runtime.Container
	dirty    bool // rec changed since it was stored
	users    int  // operations using sb now
	// idleFrom restarts the idle clock after a hibernation or a freeze
	// that failed, so that the janitor tries again later.
	idleFrom    time.Time
	freezing    bool                     // a freeze is under way, in its turn
	unfreezable bool                     // its runtime cannot freeze it
	usage       []stats.SandboxUsage     // the last samples, oldest first
	cellTurns   map[string]chan struct{} // per context: see InContext
	contextLang map[string]string        // per context: the language its kernel was started in
}

// ContextLanguage is the language context name's kernel was last started
// in, "" when none was.
func (ss *Session) ContextLanguage(name string) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.contextLang[name]
}

// StartedContext notes that context name's kernel was started in
// language.
func (ss *Session) StartedContext(name, language string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.contextLang == nil {
		ss.contextLang = map[string]string{}
	}
	ss.contextLang[name] = language
}

func newSession(l *languages.Language, limits runtime.Limits, rec state.Session, lease *sandbox.Lease) *Session {
	ss := &Session{Lang: l, Limits: limits, turn: make(chan struct{}, 1), rec: rec, lease: lease}
	ss.turn <- struct{}{}
	return ss
}

// Lease is the lease on the session's container, as Use and Alongside
// give its sandbox to their callers.
func (ss *Session) Lease() *sandbox.Lease {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.lease
}

// Record is the session's record as it is now.
func (ss *Session) Record() state.Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.rec
}

// Touch marks the session used now, counting execs executions.
func (ss *Session) Touch(execs int) {
	ss.mu.Lock()
	ss.rec.LastUsedAt = time.Now().UTC()
	ss.rec.Executions += execs
	ss.dirty = true
	ss.mu.Unlock()
}

// Sessions is every session this daemon knows. Safe for concurrent use.
type Sessions struct {
	cfg       config.Sessions
	dir       string // hibernated sessions' archives
	langs     *languages.Registry
	sandboxes *sandbox.Provider
	projects  *projects.Projects
	snapshots *snapshots.Snapshots
	store     *state.Store
	gate      *drain.Gate
	log       hclog.Logger

	mu      sync.Mutex
	live    map[string]*Session      // by id, active and hibernated
	lost    map[string]state.Session // lost, kept until deleted or past their TTL
	pending int                      // sessions being created or resumed
	// records orders each session's record writes and its deletion in the
	// store (striped by id): see save and forget.
	records [64]sync.Mutex
	making  int // sessions frozen now to make room (see reserveFreezing)
	// idleSlots bounds the idle sessions hibernating at once.
	idleSlots chan struct{}
	stop      chan struct{} // ends the janitor and the usage sampler
	workers   sync.WaitGroup
}

// New returns the sessions, none yet: Recover brings back the stored ones.
// Hibernated sessions' archives are kept under stateDir/sessions.
func New(cfg config.Sessions, stateDir string, langs *languages.Registry, sandboxes *sandbox.Provider, projects *projects.Projects, snaps *snapshots.Snapshots, store *state.Store, gate *drain.Gate, log hclog.Logger) *Sessions {
	m := &Sessions{cfg: cfg, dir: filepath.Join(stateDir, "sessions"), langs: langs, sandboxes: sandboxes, projects: projects, snapshots: snaps, store: store, gate: gate, log: log,
		live: map[string]*Session{}, lost: map[string]state.Session{}, idleSlots: make(chan struct{}, hibernateParallel), stop: make(chan struct{})}
	projects.Users = m.projectUsers
	return m
}

// Request is what a new session asks for.
type Request struct {
	Language         string // "": a snapshot's
	Limits           *state.Limits
	Env              map[string]string
	TTL, IdleTimeout time.Duration // 0: the configured defaults
	Project          string        // id or name
	Network          *state.Network
	Secrets          []string
	FromSnapshot     string // id or name: the workspace it starts with
	// ClientStartsDesktop leaves a desktop language's screen to the
	// client, as E2B Desktop's SDK starts it, at the size it asks for.
	ClientStartsDesktop bool
}

// Create takes a warm container for a new session.
func (m *Sessions) Create(ctx context.Context, req Request) (*state.Session, error) {
	if aerr := m.gate.Enter(); aerr != nil {
		return nil, aerr
	}
	defer m.gate.Leave()
	var snapshot *os.File
	if req.FromSnapshot != "" {
		f, sn, aerr := m.snapshots.Open(req.FromSnapshot)
		if aerr != nil {
			return nil, aerr
		}
		defer f.Close()
		snapshot = f
		if req.Language == "" {
			req.Language = sn.Language
		}
	}
	l, aerr := m.langs.Resolve(req.Language)
	if aerr != nil {
		return nil, aerr
	}
	limits, aerr := request.Limits(l.Limits(), 0, req.Limits)
	if aerr == nil {
		aerr = request.Within(limits, l.Limits(), l.Name())
	}
	if aerr != nil {
		return nil, aerr
	}
	if aerr := request.CheckEnv(req.Env); aerr != nil {
		return nil, aerr
	}
	allow, aerr := l.Narrow(req.Network)
	if aerr != nil {
		return nil, aerr
	}
	extras, aerr := l.Extras(req.Network)
	if aerr != nil {
		return nil, aerr
	}
	secrets, aerr := m.sandboxes.Secrets(l, req.Secrets)
	if aerr != nil {
		return nil, aerr
	}
	env := req.Env
	if len(secrets) > 0 {
		env = maps.Clone(req.Env)
		if env == nil {
			env = map[string]string{}
		}
		maps.Copy(env, sandbox.SecretEnv(secrets))
	}
	ttl, idle := req.TTL, req.IdleTimeout
	if ttl == 0 {
		ttl = m.cfg.TTL
	}
	if idle == 0 {
		idle = m.cfg.IdleTimeout
	}
	if ttl < time.Second || ttl > m.cfg.MaxTTL || idle < time.Second || idle > m.cfg.MaxTTL {
		return nil, errdefs.Errorf(errdefs.Invalid, "ttl %s and idle_timeout %s must be from 1s to max_ttl %s", ttl, idle, m.cfg.MaxTTL)
	}
	var project *state.Project
	var mounts []runtime.Mount
	if req.Project != "" {
		if project, aerr = m.projects.Find(req.Project); aerr != nil {
			return nil, aerr
		}
		mounts = m.mounts(project.ID)
	}

	// Reserve a place under the ceilings before the (possibly slow) create.
	if len(mounts) == 0 {
		m.sandboxes.Expect(l) // the pool's to give, now or once there is room
	}
	if aerr := roomForThreads(); aerr != nil {
		return nil, aerr
	}
	if aerr := m.reserveFreezing(ctx); aerr != nil {
		return nil, aerr
	}
	defer m.unreserve()

	lease, err := m.sandboxes.Hold(ctx, l, limits, mounts, env)
	if err != nil {
		return nil, err
	}
	arm(lease, allow, extras, secrets)
	sb := lease.Sandbox()
	if snapshot != nil {
		if aerr := sandbox.WorkspaceOf(sb).Extract(ctx, snapshot); aerr != nil {
			lease.Remove()
			return nil, aerr
		}
	}
	if screen := l.Config.Desktop; screen != nil && !req.ClientStartsDesktop {
		if aerr := startDesktop(ctx, lease, screen, limits, env); aerr != nil {
			lease.Remove()
			return nil, aerr
		}
	}
	now := time.Now().UTC()
	rec := state.Session{
		ID: sb.Session(), Language: l.Name(), State: state.SessionActive,
		CreatedAt: now, ExpiresAt: now.Add(ttl), LastUsedAt: now, IdleTimeout: units.Duration(idle),
		Limits: request.Record(limits), Network: network(allow, req.Network), Env: env, ContainerID: sb.ID,
		Secrets: req.Secrets,
	}
	if project != nil {
		rec.Project = project.ID
	}
	if err := m.store.PutSession(rec); err != nil {
		lease.Remove()
		return nil, fmt.Errorf("storing the session: %w", err)
	}
	m.mu.Lock()
	m.live[rec.ID] = newSession(l, limits, rec, lease)
	m.mu.Unlock()
	m.log.Info("session created", "session", rec.ID, "language", l.Name(), "container_id", runtime.ShortID(sb.ID), "project", rec.Project)
	return &rec, nil
}

// List lists live and lost sessions, oldest first.
func (m *Sessions) List() []state.Session {
	m.mu.Lock()
	out := make([]state.Session, 0, len(m.live)+len(m.lost))
	for _, ss := range m.live {
		out = append(out, ss.Record())
	}
	for _, rec := range m.lost {
		out = append(out, rec)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// Get returns one session.
func (m *Sessions) Get(id string) (*state.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ss, ok := m.live[id]; ok {
		rec := ss.Record()
		return &rec, nil
	}
	if rec, ok := m.lost[id]; ok {
		return &rec, nil
	}
	return nil, noSession(id)
}

// Census counts sessions by state.
type Census struct {
	Active, Frozen, Hibernated, Lost int
	HibernatedBytes                  int64 // their archives'
}

// Counts are the sessions by state.
func (m *Sessions) Counts() Census {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.census()
}

// census counts the sessions by state; m.mu is held.
func (m *Sessions) census() Census {
	c := Census{Lost: len(m.lost)}
	for _, ss := range m.live {
		ss.mu.Lock()
		switch h := ss.rec.Hibernation; {
		case h != nil:
			c.Hibernated++
			c.HibernatedBytes += h.Bytes
		case ss.rec.State == state.SessionFrozen:
			c.Frozen++
		default:
			c.Active++
		}
		ss.mu.Unlock()
	}
	return c
}

// reserve takes a place for one more running session under
// sessions.max, or says why there is none. Frozen and hibernated sessions
// do not count; lost ones do: they hold state until deleted or expired,
// so create-and-kill loops cannot grow it without bound.
func (m *Sessions) reserve() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.census()
	if c.Active+c.Lost+m.pending >= m.cfg.Max {
		return errdefs.Errorf(errdefs.TooManySessions, "%d sessions are running or lost (%d lost), the most sandboxd.hcl allows (sessions.max); freeze one (sandboxctl session freeze), delete one, or wait for one to go idle", m.cfg.Max, c.Lost)
	}
	m.pending++
	return nil
}

func (m *Sessions) unreserve() {
	m.mu.Lock()
	m.pending--
	m.mu.Unlock()
}

// projectUsers lists the live sessions that mount a project.
func (m *Sessions) projectUsers(project string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, ss := range m.live {
		if ss.rec.Project == project {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func noSession(id string) error {
	return errdefs.Errorf(errdefs.NotFound, "no session %q: it was deleted, expired, or never existed (sandboxctl session ls)", id)
}

// Delete ends a session and removes its container at once. A running exec
// in it is killed with the container.
func (m *Sessions) Delete(id string) error {
	m.mu.Lock()
	ss, ok := m.live[id]
	delete(m.live, id)
	_, wasLost := m.lost[id]
	delete(m.lost, id)
	m.mu.Unlock()
	if !ok && !wasLost {
		return noSession(id)
	}
	if err := m.forget(id); err != nil {
		m.log.Error("forgetting a session failed", "session", id, "error", err)
	}
	m.dropArchive(id)
	if ss != nil {
		m.close(ss, "deleted")
	}
	return nil
}

// close removes a session's container, running or checkpointed; it has
// left m.live.
func (m *Sessions) close(ss *Session, why string) {
	ss.mu.Lock()
	lease, id, stopped := ss.lease, ss.rec.ID, ""
	if lease == nil && (ss.rec.Hibernation != nil || ss.detached != nil) {
		stopped = ss.rec.ContainerID // checkpointed, or frozen since the start
	}
	ss.lease = nil
	ss.mu.Unlock()
	switch {
	case lease != nil:
		m.log.Info("session closed", "session", id, "why", why, "container_id", runtime.ShortID(lease.Sandbox().ID))
		lease.Remove()
	case stopped != "":
		m.log.Info("session closed", "session", id, "why", why, "container_id", runtime.ShortID(stopped))
		m.sandboxes.RemoveStopped(ss.Lang, stopped)
	}
}

// Use runs fn with the session's sandbox, after the operations ahead of
// it. A supervisor that dies meanwhile makes the session lost.
func (m *Sessions) Use(ctx context.Context, id string, fn func(ss *Session, sb *runtime.Sandbox) error) error {
	return m.use(ctx, id, true, fn)
}

// Alongside is Use without the session's turn: for an operation that may
// last (an interactive terminal) and must not hold up the others, which
// the supervisor runs side by side.
func (m *Sessions) Alongside(ctx context.Context, id string, fn func(ss *Session, sb *runtime.Sandbox) error) error {
	return m.use(ctx, id, false, fn)
}

// InContext is Alongside for a cell of the session's context name: a
// context's cells run one at a time, in arrival order, and beside
// everything else (files, terminals, other contexts' cells), as a
// notebook's kernels do.
func (m *Sessions) InContext(ctx context.Context, id, name string, fn func(ss *Session, sb *runtime.Sandbox) error) error {
	return m.Alongside(ctx, id, func(ss *Session, sb *runtime.Sandbox) error {
		turn := ss.contextTurn(name)
		select {
		case <-turn:
		case <-ctx.Done():
			return errdefs.Errorf(errdefs.Invalid, "gave up waiting for context %s's previous cell: %v", name, ctx.Err())
		}
		defer func() { turn <- struct{}{} }()
		return fn(ss, sb)
	})
}

// contextTurn is the turn of the session's context name.
func (ss *Session) contextTurn(name string) chan struct{} {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cellTurns == nil {
		ss.cellTurns = map[string]chan struct{}{}
	}
	turn := ss.cellTurns[name]
	if turn == nil {
		turn = make(chan struct{}, 1)
		turn <- struct{}{}
		ss.cellTurns[name] = turn
	}
	return turn
}

func (m *Sessions) use(ctx context.Context, id string, turn bool, fn func(ss *Session, sb *runtime.Sandbox) error) error {
	if aerr := m.gate.Enter(); aerr != nil {
		return aerr
	}
	defer m.gate.Leave()
	ss, aerr := m.find(id)
	if aerr != nil {
		return aerr
	}
	if turn {
		if aerr := m.take(ctx, ss); aerr != nil {
			return aerr
		}
		defer func() { ss.turn <- struct{}{} }()
	}
	sb, aerr := m.awake(ctx, ss, turn)
	if aerr != nil {
		return aerr
	}
	defer func() {
		ss.mu.Lock()
		ss.users--
		ss.mu.Unlock()
	}()
	if !sb.Alive() {
		// A sandbox that is gone goes to fn as it is: a reset renews it,
		// anything else fails, and the session is lost below.
		again, err := m.reconnect(ss, sb)
		if errors.Is(err, runtime.ErrUnavailable) {
			return errdefs.Errorf(errdefs.RuntimeUnavailable, "session %s's sandbox cannot be reached now (%v); it is kept, retry later", id, err)
		}
		if again != nil {
			sb = again
		}
	}
	ss.Touch(0)
	aerr = fn(ss, sb)
	ss.Touch(0)
	ss.mu.Lock()
	sb = ss.lease.Sandbox() // fn may have renewed it
	ss.mu.Unlock()
	if sb != nil && !sb.Alive() {
		m.revive(ss, sb) // for the next operation
		ss.mu.Lock()
		lost, why := ss.rec.State == state.SessionLost, ss.rec.Error
		ss.mu.Unlock()
		if k := errdefs.KindOf(aerr); lost && aerr != nil && (k == errdefs.Internal || k == errdefs.RuntimeUnavailable) {
			// The operation failed because the sandbox went (the engine
			// lost it, or its connection to it): say so.
			return errdefs.Errorf(errdefs.SessionLost, "session %s was lost during the operation: %s; delete it and create a new one", id, why)
		}
	}
	return aerr
}

// find returns a live session, or why there is none.
func (m *Sessions) find(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec, lost := m.lost[id]; lost {
		return nil, errdefs.Errorf(errdefs.SessionLost, "session %s was lost: %s; delete it and create a new one", id, rec.Error)
	}
	if ss, ok := m.live[id]; ok {
		return ss, nil
	}
	return nil, noSession(id)
}

// take waits for the session's turn.
func (m *Sessions) take(ctx context.Context, ss *Session) error {
	select {
	case <-ss.turn:
		return nil
	case <-ctx.Done():
		return errdefs.Errorf(errdefs.Invalid, "gave up waiting for the session's previous operation: %v", ctx.Err())
	}
}

// awake returns the session's sandbox, counted as in use (the caller
// ends that), resuming the session first when it is hibernated, or
// thawing it when it is frozen, in its turn: taken here unless the caller
// has it.
func (m *Sessions) awake(ctx context.Context, ss *Session, haveTurn bool) (*runtime.Sandbox, error) {
	for {
		ss.mu.Lock()
		sb, id, hibernated, frozen := ss.lease.Sandbox(), ss.rec.ID, ss.rec.Hibernation != nil, ss.rec.State == state.SessionFrozen || ss.freezing
		running := sb != nil && !frozen
		if running {
			ss.users++ // a hibernation under way now stops short of removing it
		}
		ss.mu.Unlock()
		switch {
		case running:
			return sb, nil
		case !hibernated && !frozen:
			return nil, noSession(id) // closed while we waited
		}
		if !haveTurn {
			if aerr := m.take(ctx, ss); aerr != nil {
				return nil, aerr
			}
		}
		wake := m.resume
		if frozen {
			wake = m.thaw
		}
		aerr := wake(ctx, ss)
		if !haveTurn {
			ss.turn <- struct{}{}
		}
		if aerr != nil {
			return nil, aerr
		}
	}
}

// reviveTimeout bounds one try to reconnect to a session's sandbox.
const reviveTimeout = 15 * time.Second

// revive connects again to the sandbox of a session whose channel to it
// dropped; it makes the session lost when the runtime says the sandbox is
// gone, and leaves it for the janitor's next try when the runtime cannot
// be reached: a pod runs on while its cluster's API server restarts.
func (m *Sessions) revive(ss *Session, sb *runtime.Sandbox) {
	_, err := m.reconnect(ss, sb)
	switch {
	case err == nil:
	case errors.Is(err, runtime.ErrUnavailable):
		m.log.Debug("a session's sandbox cannot be reached; trying again", "session", ss.rec.ID, "error", err)
	default:
		m.MarkLost(ss, fmt.Sprintf("its container stopped answering (%v): %v", sb.Err(), err))
	}
}

// reconnect connects again to sb, the session's sandbox, and makes the
// new connection the session's.
func (m *Sessions) reconnect(ss *Session, sb *runtime.Sandbox) (*runtime.Sandbox, error) {
	ctx, cancel := context.WithTimeout(context.Background(), reviveTimeout)
	defer cancel()
	lease := ss.Lease()
	if lease.Sandbox() != sb {
		return current(ss, sb), nil // renewed, hibernated, closed or connected again meanwhile
	}
	again, err := lease.Reconnect(ctx)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	if ss.lease != lease {
		ss.mu.Unlock()
		return current(ss, sb), nil // changed while it connected: the session's is what counts
	}
	ss.lease = again
	ss.mu.Unlock()
	m.log.Info("session reconnected", "session", ss.rec.ID, "container_id", runtime.ShortID(sb.ID), "dropped", sb.Err())
	return again.Sandbox(), nil
}

// current is the session's sandbox when it is still sb's container,
// connected again by another caller; nil otherwise.
func current(ss *Session, sb *runtime.Sandbox) *runtime.Sandbox {
	if now := ss.Lease().Sandbox(); now != nil && now.ID == sb.ID && now.Alive() {
		return now
	}
	return nil
}

// reviveDropped tries again the idle sessions whose channel dropped.
func (m *Sessions) reviveDropped() {
	m.mu.Lock()
	var dropped []*Session
	for _, ss := range m.live {
		ss.mu.Lock()
		if sb := ss.lease.Sandbox(); sb != nil && !sb.Alive() {
			dropped = append(dropped, ss)
		}
		ss.mu.Unlock()
	}
	m.mu.Unlock()
	for _, ss := range dropped {
		if rec := ss.Record(); rec.State == state.SessionFrozen {
			continue // its thaw connects again
		}
		select {
		case <-ss.turn: // idle; while it is tried, the turn stays taken
			go func() {
				defer func() { ss.turn <- struct{}{} }()
				sb := ss.Lease().Sandbox()
				if sb != nil && !sb.Alive() {
					m.revive(ss, sb)
				}
			}()
		default: // in use: the operation tries it itself
		}
	}
}

// MarkLost turns a session whose container died (or cannot be trusted any
// more) into a lost one, and removes the container.
func (m *Sessions) MarkLost(ss *Session, why string) {
	m.mu.Lock()
	if m.live[ss.rec.ID] != ss {
		m.mu.Unlock()
		return
	}
	delete(m.live, ss.rec.ID)
	ss.mu.Lock()
	ss.rec.State, ss.rec.Error = state.SessionLost, why
	rec := ss.rec
	ss.mu.Unlock()
	m.lost[rec.ID] = rec
	m.mu.Unlock()
	m.log.Warn("session lost", "session", rec.ID, "why", why)
	if _, err := m.save(ss); err != nil {
		m.log.Error("storing a lost session failed", "session", rec.ID, "error", err)
	}
	m.close(ss, "lost")
}

// mounts are what a session of project (if any) has mounted.
func (m *Sessions) mounts(project string) []runtime.Mount {
	if project == "" {
		return nil
	}
	return []runtime.Mount{{Source: m.projects.Dir(project), Target: runtime.Workspace + "/project_files", ReadOnly: true}}
}

// Reset ends every process of a session and empties its workspace (but
// project_files), leaving it usable. When the sandbox cannot do it (what
// the program left behind defeats it, or the sandbox is gone), the session
// gets a new container instead.
func (m *Sessions) Reset(ctx context.Context, id string) (*state.Session, error) {
	aerr := m.Use(ctx, id, func(ss *Session, sb *runtime.Sandbox) error {
		if err := sandbox.WorkspaceOf(sb).Reset(ctx); err != nil {
			return m.renew(ctx, ss, sb, err)
		}
		return nil
	})
	if aerr != nil {
		return nil, aerr
	}
	return m.Get(id)
}

// renew gives a session a new container in place of sb, which failed to
// reset for why; the session is lost when none can be made.
func (m *Sessions) renew(ctx context.Context, ss *Session, sb *runtime.Sandbox, why error) error {
	rec := ss.Record()
	old := ss.Lease()
	if old.Sandbox() != sb {
		return noSession(rec.ID) // deleted or lost meanwhile
	}
	fresh, err := old.Renew(ctx, ss.Limits, m.mounts(rec.Project), rec.ID)
	if err != nil {
		m.MarkLost(ss, fmt.Sprintf("reset failed (%v), and no new container could be made: %v", why, err))
		return errdefs.Errorf(errdefs.SessionLost, "reset failed, the session is lost: %v; %v", why, err)
	}
	m.rearm(fresh, rec, ss.Lang)
	ss.mu.Lock()
	if ss.lease != old {
		ss.mu.Unlock()
		fresh.Remove()
		return noSession(rec.ID)
	}
	ss.lease, ss.rec.ContainerID = fresh, fresh.Sandbox().ID
	ss.mu.Unlock()
	if rec, err = m.save(ss); err != nil {
		m.log.Error("storing a session's new container failed", "session", rec.ID, "error", err)
	}
	m.log.Warn("session reset with a new container", "session", rec.ID, "why", why,
		"old_container_id", runtime.ShortID(sb.ID), "container_id", runtime.ShortID(fresh.Sandbox().ID))
	old.Remove()
	return nil
}

// MaxTTL is the longest a session may be given to live (sessions.max_ttl).
func (m *Sessions) MaxTTL() time.Duration { return m.cfg.MaxTTL }

// Expire sets a session to end ttl from now (at most max_ttl), whether it
// is used meanwhile or not: it does not hibernate before.
func (m *Sessions) Expire(id string, ttl time.Duration) (*state.Session, error) {
	if ttl < time.Second || ttl > m.cfg.MaxTTL {
		return nil, errdefs.Errorf(errdefs.Invalid, "a session's time left must be from 1s to max_ttl %s, not %s", m.cfg.MaxTTL, ttl)
	}
	ss, aerr := m.find(id)
	if aerr != nil {
		return nil, aerr
	}
	ss.mu.Lock()
	ss.rec.ExpiresAt = time.Now().UTC().Add(ttl)
	ss.rec.IdleTimeout = units.Duration(m.cfg.MaxTTL)
	ss.mu.Unlock()
	rec, err := m.save(ss)
	if err != nil {
		return nil, fmt.Errorf("storing the session: %w", err)
	}
	return &rec, nil
}

// SetNetwork changes what a session's sandbox may reach, within its
// language's ceiling (nil: all of it), from the next connection on (an
// execution running meanwhile included); the record keeps it, across
// restarts too.
func (m *Sessions) SetNetwork(ctx context.Context, id string, req *state.Network) (*state.Session, error) {
	aerr := m.Alongside(ctx, id, func(ss *Session, sb *runtime.Sandbox) error {
		list, aerr := ss.Lang.Narrow(req)
		if aerr != nil {
			return aerr
		}
		extras, aerr := ss.Lang.Extras(req)
		if aerr != nil {
			return aerr
		}
		if g := ss.Lease().Gate(); g != nil {
			shape(g, list, extras)
		}
		ss.mu.Lock()
		before := ss.rec.Network.Allow
		ss.rec.Network = network(list, req)
		ss.mu.Unlock()
		rec, err := m.save(ss)
		if err != nil {
			m.log.Error("storing a session's network failed", "session", id, "error", err)
		}
		m.log.Info("a session's network changed", "session", id, "from", before, "to", rec.Network.Allow)
		return nil
	})
	if aerr != nil {
		return nil, aerr
	}
	return m.Get(id)
}

// network is a session's record of its network: the allow-list it got,
// and the deny list and proxy it asked for.
func network(allow egress.List, asked *state.Network) state.Network {
	n := state.Network{Allow: append([]string{}, allow.Strings()...)} // [] rather than null: nothing allowed
	if asked != nil {
		n.Deny, n.Except, n.Proxy = asked.Deny, asked.Except, asked.Proxy
	}
	return n
}

// shape sets what a gate lets through, at once: its allow-list, deny
// list and proxy.
func shape(g *egress.Gate, list egress.List, x languages.Extras) {
	g.SetPolicy(list, x.Deny, x.Except, x.Socks)
}

// arm sets what a session's sandbox may reach, and the secrets its
// requests may carry there.
func arm(lease *sandbox.Lease, list egress.List, x languages.Extras, secrets []egress.Secret) {
	if g := lease.Gate(); g != nil {
		shape(g, list, x)
		g.SetSecrets(secrets)
	}
}

// rearm is arm for a session's sandbox made or connected again: what its
// record says. A record whose deny list or proxy the configuration no
// longer takes reaches nothing, rather than reaching more than it asked.
func (m *Sessions) rearm(lease *sandbox.Lease, rec state.Session, l *languages.Language) {
	allow := storedAllow(rec, l)
	x, aerr := l.Extras(&rec.Network)
	if aerr != nil {
		m.log.Warn("a session's network no longer fits sandboxd.hcl: it reaches nothing until set again", "session", rec.ID, "error", aerr)
		allow, x = nil, languages.Extras{}
	}
	arm(lease, allow, x, m.sandboxes.StoredSecrets(rec.Secrets, rec.Env))
}

// storedAllow is a session record's allow-list, less what its language
// no longer allows (the configuration may have changed since).
func storedAllow(rec state.Session, l *languages.Language) egress.List {
	var list egress.List
	for _, e := range rec.Network.Allow {
		if r, err := egress.ParseRule(e); err == nil && (egress.List{r}).Within(l.Egress()) == "" {
			list = append(list, r)
		}
	}
	return list
}

// Start starts the janitor, which expires sessions and writes their
// records back to the store, and the sampler of what their sandboxes use.
func (m *Sessions) Start() {
	m.every(janitorEvery, func(now time.Time) {
		m.expire(now)
		m.reviveDropped()
		m.flush()
	})
	ctx, cancel := context.WithCancel(context.Background())
	m.every(usageEvery, func(time.Time) { m.sampleAll(ctx) })
	go func() { <-m.stop; cancel() }()
}

// every calls fn each period until Close.
func (m *Sessions) every(period time.Duration, fn func(now time.Time)) {
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case now := <-t.C:
				fn(now)
			}
		}
	}()
}

// Close stops the janitor and brings the records up to date. Sessions
// outlive the daemon: their containers stay, and the next sandboxd
// attaches to them. It returns those containers' ids.
func (m *Sessions) Close() map[string]bool {
	close(m.stop)
	m.workers.Wait()
	m.flush()
	keep := map[string]bool{}
	m.mu.Lock()
	for _, ss := range m.live {
		keep[ss.rec.ContainerID] = true
	}
	m.mu.Unlock()
	return keep
}

// expire ends sessions past their TTL, and hibernates (or ends, as
// on_idle says) those idle too long; it freezes those unused and quiet
// for freeze_after, and hibernates the longest frozen past max_frozen. A
// session in use is left until its operation ends.
func (m *Sessions) expire(now time.Time) {
	m.mu.Lock()
	var due, idle, freeze []*Session
	var frozen []*Session // idle and frozen, for max_frozen
	frozenNow := m.census().Frozen
	for id, ss := range m.live {
		ss.mu.Lock()
		rec, users, idleFrom, unfreezable := ss.rec, ss.users, ss.idleFrom, ss.unfreezable
		quiet := ss.quiet(now, m.cfg.FreezeAfter)
		ss.mu.Unlock()
		ttl := now.After(rec.ExpiresAt)
		idleFor := now.Sub(rec.LastUsedAt)
		if since := now.Sub(idleFrom); since < idleFor {
			idleFor = since
		}
		idleOut := idleFor > time.Duration(rec.IdleTimeout)
		toFreeze := rec.State == state.SessionActive && m.cfg.FreezeAfter > 0 && idleFor > m.cfg.FreezeAfter && quiet && !unfreezable &&
			frozenNow+len(freeze) < m.cfg.MaxFrozen
		if rec.State == state.SessionFrozen && users == 0 {
			frozen = append(frozen, ss)
		}
		if !ttl && (rec.Hibernation != nil || users > 0 || !idleOut && !toFreeze) {
			continue
		}
		select {
		case <-ss.turn: // idle: it is ours now, and stays taken
			switch {
			case ttl || idleOut && m.cfg.OnIdle == config.OnIdleEnd:
				delete(m.live, id)
				due = append(due, ss)
			case idleOut:
				idle = append(idle, ss)
			default:
				freeze = append(freeze, ss)
			}
		default:
		}
	}
	var expiredLost []string
	for id, rec := range m.lost {
		if now.After(rec.ExpiresAt) {
			delete(m.lost, id)
			expiredLost = append(expiredLost, id)
		}
	}
	m.mu.Unlock()
	for _, id := range expiredLost {
		_ = m.forget(id)
		m.dropArchive(id)
	}
	for _, ss := range due {
		rec := ss.Record()
		why := "idle timeout"
		if now.After(rec.ExpiresAt) {
			why = "ttl"
		}
		if err := m.forget(rec.ID); err != nil {
			m.log.Error("forgetting an expired session failed", "session", rec.ID, "error", err)
		}
		m.dropArchive(rec.ID)
		m.close(ss, "expired: "+why)
	}
	for _, ss := range idle {
		go m.hibernateIdle(ss)
	}
	for _, ss := range freeze {
		go m.freezeIdle(ss)
	}
	// Past max_frozen, or under memory pressure, the longest frozen go to
	// disk.
	over := len(frozen) + len(freeze) - m.cfg.MaxFrozen
	if hostmem.Low(m.cfg.MemoryLow) {
		over = max(over, hibernateParallel)
	}
	for _, ss := range longestFrozen(frozen, over) {
		go m.hibernateIdle(ss)
	}
}

// longestFrozen takes the turns of the n longest frozen of frozen whose
// turns are free, and returns them.
func longestFrozen(frozen []*Session, n int) []*Session {
	slices.SortFunc(frozen, func(a, b *Session) int { return frozenAt(a).Compare(frozenAt(b)) })
	var out []*Session
	for _, ss := range frozen {
		if len(out) >= n {
			break
		}
		select {
		case <-ss.turn:
			out = append(out, ss)
		default:
		}
	}
	return out
}

func frozenAt(ss *Session) time.Time {
	if at := ss.Record().FrozenAt; at != nil {
		return *at
	}
	return time.Time{}
}

// flush stores the sessions whose usage changed.
func (m *Sessions) flush() {
	m.mu.Lock()
	var dirty []*Session
	for _, ss := range m.live {
		ss.mu.Lock()
		if ss.dirty {
			dirty = append(dirty, ss)
		}
		ss.mu.Unlock()
	}
	m.mu.Unlock()
	for _, ss := range dirty {
		if rec, err := m.save(ss); err != nil {
			m.log.Error("storing a session failed", "session", rec.ID, "error", err)
		}
	}
}

// save stores ss's record as it is now, and returns it. A session's
// saves are in order, each of the record as it was when its turn came:
// a flush that copied a record before a freeze changed it and wrote it
// after the freeze's own write left the session stored active, and a
// restart thawed it (1 of 200 frozen sessions, in the bench). A session
// deleted or expired meanwhile is not written back (see forget).
func (m *Sessions) save(ss *Session) (state.Session, error) {
	order := m.recordOrder(ss.Record().ID)
	order.Lock()
	defer order.Unlock()
	ss.mu.Lock()
	rec := ss.rec
	ss.dirty = false
	ss.mu.Unlock()
	if !m.stored(ss, rec) {
		return rec, nil
	}
	err := m.store.PutSession(rec)
	if err != nil {
		ss.mu.Lock()
		ss.dirty = true // the janitor's flush tries again
		ss.mu.Unlock()
	}
	return rec, err
}

// stored says whether ss's record rec belongs in the store: ss is live,
// or lost and not yet deleted.
func (m *Sessions) stored(ss *Session, rec state.Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, lost := m.lost[rec.ID]; lost {
		return rec.State == state.SessionLost
	}
	return m.live[rec.ID] == ss
}

// forget deletes a session's record, which has left m.live and m.lost. It
// waits for a save under way, whose write would otherwise come after the
// deletion and bring the session back at the next start.
func (m *Sessions) forget(id string) error {
	order := m.recordOrder(id)
	order.Lock()
	defer order.Unlock()
	return m.store.DeleteSession(id)
}

// recordOrder is the lock that orders id's record writes.
func (m *Sessions) recordOrder(id string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(id))
	return &m.records[h.Sum32()%uint32(len(m.records))]
}

// Recover runs at start: each stored session gets its container back if it
// still runs and its supervisor answers; otherwise it is lost. Records that
// do not decode are skipped and reported. Containers are attached to in
// parallel, a few at a time. It returns the containers that stay.
func (m *Sessions) Recover(ctx context.Context, containers []runtime.Container) (map[string]bool, error) {
	stored, corrupt, err := m.store.Sessions()
	if err != nil {
		return nil, fmt.Errorf("reading sessions: %w", err)
	}
	for _, c := range corrupt {
		m.log.Error("skipped a session record that does not decode; its container, if any, is removed", "key", c.Key, "error", c.Err)
	}
	byID := map[string]runtime.Container{}
	for _, c := range containers {
		byID[c.ID] = c
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		keep = map[string]bool{}
		now  = time.Now()
		slot = make(chan struct{}, recoverParallel)
	)
	for _, rec := range stored {
		if now.After(rec.ExpiresAt) {
			_ = m.store.DeleteSession(rec.ID)
			continue
		}
		if c, ok := byID[rec.ContainerID]; ok && rec.State == state.SessionFrozen && !c.Paused {
			// Thawed, and the crash came before the record said so: it is
			// attached to as an active one.
			rec.State, rec.FrozenAt = state.SessionActive, nil
		}
		if rec.State != state.SessionActive {
			mu.Lock() // the attaches below write the same maps
			switch rec.State {
			case state.SessionFrozen:
				if why := m.recoverFrozen(rec, byID[rec.ContainerID]); why != "" {
					m.loseAtStart(rec, why)
				} else {
					keep[rec.ContainerID] = true
				}
			case state.SessionHibernated:
				m.recoverHibernated(rec)
				if rec.ContainerID != "" {
					keep[rec.ContainerID] = true // checkpointed
				}
			default:
				m.lost[rec.ID] = rec
			}
			mu.Unlock()
			continue
		}
		wg.Add(1)
		slot <- struct{}{}
		go func() {
			defer func() { <-slot; wg.Done() }()
			l, lease, why := m.reattach(ctx, rec, byID)
			mu.Lock()
			defer mu.Unlock()
			if why != "" {
				m.loseAtStart(rec, why)
				return
			}
			limits := request.KeptLimits(l.Limits(), rec.Limits)
			m.live[rec.ID] = newSession(l, limits, rec, lease)
			keep[rec.ContainerID] = true
			m.log.Info("session recovered", "session", rec.ID, "container_id", runtime.ShortID(rec.ContainerID))
		}()
	}
	wg.Wait()
	m.pruneArchives()
	return keep, nil
}

// loseAtStart records a stored session lost at start for why. The caller
// holds what guards the maps.
func (m *Sessions) loseAtStart(rec state.Session, why string) {
	rec.State, rec.Error = state.SessionLost, why
	m.lost[rec.ID] = rec
	m.log.Warn("session lost", "session", rec.ID, "why", why)
	if err := m.store.PutSession(rec); err != nil {
		m.log.Error("storing a lost session failed", "session", rec.ID, "error", err)
	}
}

// recoverParallel is how many session containers Recover attaches to at once.
const recoverParallel = 8

// reattach gets a stored session's container back, or says why not.
func (m *Sessions) reattach(ctx context.Context, rec state.Session, byID map[string]runtime.Container) (*languages.Language, *sandbox.Lease, string) {
	l, known := m.langs.Lookup(rec.Language)
	c, found := byID[rec.ContainerID]
	switch {
	case !known:
		return nil, nil, "its language " + rec.Language + " is no longer configured"
	case !found || !c.Running && !c.Paused:
		return nil, nil, "its container was gone when sandboxd restarted"
	case c.Paused: // a crash came between its freeze and its record
		if err := m.sandboxes.Thaw(ctx, c.ID); err != nil {
			return nil, nil, "its container could not be thawed when sandboxd restarted: " + err.Error()
		}
		c.Paused, c.Running = false, true
	}
	lease, err := m.sandboxes.Attach(ctx, l, c, rec.Env)
	if err != nil {
		return nil, nil, "its container did not answer when sandboxd restarted: " + err.Error()
	}
	m.rearm(lease, rec, l)
	return l, lease, ""
}

// startDesktop starts a desktop session's screen (the image's
// desktop-start), and returns once it answers.
func startDesktop(ctx context.Context, lease *sandbox.Lease, screen *config.Desktop, limits runtime.Limits, env map[string]string) error {
	job := sandbox.Job{Steps: []language.Step{{Name: "desktop", Argv: desktop.Start(screen.Width, screen.Height)}}, Env: runtime.EnvList(env)}
	res, err := lease.Run(ctx, job, limits, nil)
	if err == nil && (res.ExitCode != 0 || res.Error != "") {
		err = fmt.Errorf("exit %d: %s%s", res.ExitCode, res.Error, bytes.TrimSpace(res.Stderr))
	}
	if err != nil {
		return errdefs.Errorf(errdefs.Internal, "the session's desktop did not start (%s in its image): %v", desktop.StartCommand, err)
	}
	return nil
}
