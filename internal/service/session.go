package service

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Sessions. A session owns one container, taken from the warm pool (or,
// with a project, created with the project mounted), until it is deleted
// or expires. Its record lives in bbolt so that a restarted sandboxd
// attaches to the container again, or reports the session lost when the
// container is gone; it is never recreated empty.
//
// Operations on one session run one at a time (turn), in arrival order:
// an exec, a file transfer and a reset never overlap in one workspace.

// janitorEvery is how often expiry is checked and usage written back.
const janitorEvery = time.Second

// session is a session this daemon knows.
type session struct {
	lang   *lang
	limits config.Limits
	turn   chan struct{} // holds one token: whoever has it may use sb

	mu    sync.Mutex // guards what follows
	rec   api.Session
	sb    *runtime.Sandbox // nil once lost or closed
	dirty bool             // rec changed since it was stored
}

func (ss *session) snapshot() api.Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.rec
}

// CreateSession takes a warm container for a new session.
func (s *Service) CreateSession(ctx context.Context, req api.SessionRequest) (*api.Session, *api.Error) {
	if aerr := s.enter(); aerr != nil {
		return nil, aerr
	}
	defer s.leave()
	l, aerr := s.resolve(req.Language)
	if aerr != nil {
		return nil, aerr
	}
	limits, aerr := effectiveLimits(l.cfg.Name, l.cfg.Limits, 0, req.Limits)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkEnv(req.Env); aerr != nil {
		return nil, aerr
	}
	sc := s.cfg.Sessions
	ttl, idle := time.Duration(req.TTL), time.Duration(req.IdleTimeout)
	if ttl == 0 {
		ttl = sc.TTL
	}
	if idle == 0 {
		idle = sc.IdleTimeout
	}
	if ttl < time.Second || ttl > sc.MaxTTL || idle < time.Second || idle > sc.MaxTTL {
		return nil, apiErr(api.CodeInvalidRequest, "ttl %s and idle_timeout %s must be from 1s to max_ttl %s", ttl, idle, sc.MaxTTL)
	}
	var project *api.Project
	if req.Project != "" {
		if project, aerr = s.findProject(req.Project); aerr != nil {
			return nil, aerr
		}
	}

	// Reserve a place under the ceiling before the (possibly slow) create.
	s.sessMu.Lock()
	if len(s.sessions)+s.sessPending >= sc.Max {
		s.sessMu.Unlock()
		return nil, apiErr(api.CodeTooManySessions, "%d sessions are open, the most sandboxd.hcl allows (sessions.max); delete one or wait for one to expire", sc.Max)
	}
	s.sessPending++
	s.sessMu.Unlock()
	defer func() {
		s.sessMu.Lock()
		s.sessPending--
		s.sessMu.Unlock()
	}()

	sb, err := s.sessionSandbox(ctx, l, project)
	if err != nil {
		return nil, errorFor(err)
	}
	if lowered(limits, l.cfg.Limits) {
		if err := s.rt.Update(ctx, sb.ID, runtimeLimits(limits)); err != nil {
			s.removeSandbox(sb)
			return nil, errorFor(err)
		}
	}
	now := time.Now().UTC()
	rec := api.Session{
		ID: sb.Session(), Language: l.cfg.Name, State: api.SessionActive,
		CreatedAt: now, ExpiresAt: now.Add(ttl), LastUsedAt: now, IdleTimeout: api.Duration(idle),
		Limits: apiLimits(limits), Env: req.Env, ContainerID: sb.ID,
	}
	if project != nil {
		rec.Project = project.ID
	}
	if err := s.store.PutSession(rec); err != nil {
		s.removeSandbox(sb)
		return nil, apiErr(api.CodeInternal, "storing the session: %v", err)
	}
	ss := &session{lang: l, limits: limits, turn: make(chan struct{}, 1), rec: rec, sb: sb}
	ss.turn <- struct{}{}
	s.sessMu.Lock()
	s.sessions[rec.ID] = ss
	s.sessMu.Unlock()
	s.log.Info("session created", "session", rec.ID, "language", l.cfg.Name, "container_id", sb.ID[:12], "project", rec.Project)
	return &rec, nil
}

// sessionSandbox is a warm container from the pool, or for a project a new
// one with the project's files mounted (mounts are fixed at create time).
func (s *Service) sessionSandbox(ctx context.Context, l *lang, project *api.Project) (*runtime.Sandbox, error) {
	if err := s.ready(ctx, l); err != nil {
		return nil, err
	}
	if project == nil {
		return l.pool.Take(ctx)
	}
	spec := s.spec(l)
	spec.Mounts = []runtime.Mount{{Source: s.projectDir(project.ID), Target: runtime.Workspace + "/project_files", ReadOnly: true}}
	return s.createSandbox(ctx, spec)
}

// spec is what a language's containers are made from; each gets a fresh
// session id label, the id it will have if a session takes it.
func (s *Service) spec(l *lang) runtime.Spec {
	return runtime.Spec{
		Language: l.cfg.Name,
		Image:    l.img.get().ref,
		Limits:   runtimeLimits(l.cfg.Limits),
		Labels:   map[string]string{runtime.LabelSession: state.RandomID(8)},
	}
}

func (s *Service) removeSandbox(sb *runtime.Sandbox) {
	err := s.rt.Remove(context.Background(), sb.ID)
	if err != nil {
		s.log.Warn("removing a sandbox failed", "container_id", sb.ID[:12], "error", err)
	}
	s.metrics.ContainerRemoved(sb.Language, err)
}

// createSandbox creates and starts a container; every container sandboxd
// starts comes through here.
func (s *Service) createSandbox(ctx context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	began := time.Now()
	sb, err := s.rt.Create(ctx, spec)
	s.metrics.ContainerStarted(spec.Language, time.Since(began), err)
	return sb, err
}

// Sessions lists live and lost sessions, oldest first.
func (s *Service) Sessions() []api.Session {
	s.sessMu.Lock()
	out := make([]api.Session, 0, len(s.sessions)+len(s.lost))
	for _, ss := range s.sessions {
		out = append(out, ss.snapshot())
	}
	for _, rec := range s.lost {
		out = append(out, rec)
	}
	s.sessMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// Session returns one session.
func (s *Service) Session(id string) (*api.Session, *api.Error) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if ss, ok := s.sessions[id]; ok {
		rec := ss.snapshot()
		return &rec, nil
	}
	if rec, ok := s.lost[id]; ok {
		return &rec, nil
	}
	return nil, noSession(id)
}

func noSession(id string) *api.Error {
	return apiErr(api.CodeNotFound, "no session %q: it was deleted, expired, or never existed (sandboxctl session ls)", id)
}

// DeleteSession ends a session and removes its container at once. A
// running exec in it is killed with the container.
func (s *Service) DeleteSession(id string) *api.Error {
	s.sessMu.Lock()
	ss, ok := s.sessions[id]
	delete(s.sessions, id)
	_, wasLost := s.lost[id]
	delete(s.lost, id)
	s.sessMu.Unlock()
	if !ok && !wasLost {
		return noSession(id)
	}
	if err := s.store.DeleteSession(id); err != nil {
		s.log.Error("forgetting a session failed", "session", id, "error", err)
	}
	if ss != nil {
		s.closeSession(ss, "deleted")
	}
	return nil
}

// closeSession removes a session's container; it has left s.sessions.
func (s *Service) closeSession(ss *session, why string) {
	ss.mu.Lock()
	sb := ss.sb
	ss.sb = nil
	ss.mu.Unlock()
	if sb != nil {
		s.log.Info("session closed", "session", ss.rec.ID, "why", why, "container_id", sb.ID[:12])
		s.removeSandbox(sb)
	}
}

// use runs fn with the session's sandbox, after the operations ahead of it.
// A supervisor that dies meanwhile makes the session lost.
func (s *Service) use(ctx context.Context, id string, fn func(ss *session, sb *runtime.Sandbox) *api.Error) *api.Error {
	if aerr := s.enter(); aerr != nil {
		return aerr
	}
	defer s.leave()
	s.sessMu.Lock()
	ss, ok := s.sessions[id]
	rec, lost := s.lost[id]
	s.sessMu.Unlock()
	if lost {
		return apiErr(api.CodeSessionLost, "session %s was lost: %s; delete it and create a new one", id, rec.Error)
	}
	if !ok {
		return noSession(id)
	}
	select {
	case <-ss.turn:
	case <-ctx.Done():
		return apiErr(api.CodeInvalidRequest, "gave up waiting for the session's previous operation: %v", ctx.Err())
	}
	defer func() { ss.turn <- struct{}{} }()
	ss.mu.Lock()
	sb := ss.sb
	ss.mu.Unlock()
	if sb == nil {
		return noSession(id) // closed while we waited
	}
	s.touch(ss, 0)
	aerr := fn(ss, sb)
	s.touch(ss, 0)
	if !sb.Alive() {
		s.markLost(ss, fmt.Sprintf("its container stopped answering (%v)", sb.Err()))
	}
	return aerr
}

// touch marks the session used now, counting execs executions.
func (s *Service) touch(ss *session, execs int) {
	ss.mu.Lock()
	ss.rec.LastUsedAt = time.Now().UTC()
	ss.rec.Executions += execs
	ss.dirty = true
	ss.mu.Unlock()
}

// markLost turns a session whose container died into a lost one.
func (s *Service) markLost(ss *session, why string) {
	s.sessMu.Lock()
	if s.sessions[ss.rec.ID] != ss {
		s.sessMu.Unlock()
		return
	}
	delete(s.sessions, ss.rec.ID)
	ss.mu.Lock()
	ss.rec.State, ss.rec.Error = api.SessionLost, why
	rec := ss.rec
	ss.mu.Unlock()
	s.lost[rec.ID] = rec
	s.sessMu.Unlock()
	s.log.Warn("session lost", "session", rec.ID, "why", why)
	if err := s.store.PutSession(rec); err != nil {
		s.log.Error("storing a lost session failed", "session", rec.ID, "error", err)
	}
	s.closeSession(ss, "lost")
}

// Exec runs a command or a program in a session's workspace.
func (s *Service) Exec(ctx context.Context, id string, req api.ExecRequest, out OutputFunc) (*api.RunResult, *api.Error) {
	received := time.Now()
	var res *api.RunResult
	aerr := s.use(ctx, id, func(ss *session, sb *runtime.Sandbox) *api.Error {
		if req.Limits != nil && (req.Limits.Memory != 0 || req.Limits.CPUs != 0 || req.Limits.Pids != 0) {
			return apiErr(api.CodeInvalidRequest, "memory, cpus and pids are the session's: set them when creating it")
		}
		plan, stdin, dir, aerr := s.execPlan(ctx, ss.lang, req)
		if aerr != nil {
			return aerr
		}
		cwd := dir
		if cwd == "" {
			cwd = runtime.Workspace
		}
		j := judgement{kind: "exec", lang: ss.lang, argv: req.Argv, cwd: cwd, timeout: req.Timeout, limits: req.Limits, session: id}
		if len(req.Argv) == 0 {
			j.files, j.entry = plan.Files, req.Entry
		}
		decision, aerr := s.judge(ctx, j)
		if aerr != nil {
			return aerr
		}
		limits, aerr := effectiveLimits("session "+id, ss.limits, req.Timeout, req.Limits)
		if aerr != nil {
			return aerr
		}
		started := time.Now()
		col := &collector{out: out}
		env := envList(plan.Env, ss.rec.Env, req.Env)
		exec, stage, err := runSteps(ctx, sb, plan, stdin, env, limits, dir, false, col)
		finished := time.Now()
		if err != nil {
			s.count(ss.lang.cfg.Name, "exec", "error", nil)
			return errorFor(fmt.Errorf("the session's sandbox failed during the execution: %w", err))
		}
		if exec.Survivors > 0 {
			s.markLost(ss, fmt.Sprintf("%d processes survived the kill at the deadline", exec.Survivors))
		}
		res = &api.RunResult{ID: state.NewID(received), Language: ss.lang.cfg.Name, Session: id, Findings: decision.Findings, Decision: api.DecisionAllowed}
		fillResult(res, exec, stage, col, limits)
		res.Timings = api.Timings{QueueMS: ms(started.Sub(received)), RunMS: ms(finished.Sub(started)), TotalMS: ms(finished.Sub(received))}
		s.touch(ss, 1)
		s.count(ss.lang.cfg.Name, "exec", outcome(res), &res.Timings)
		s.record(res, "exec", limits, received)
		return nil
	})
	return res, aerr
}

// execPlan turns an exec request into steps: argv as it is, or a program
// planned by the session's language plugin. It returns the stdin and the
// working directory too.
func (s *Service) execPlan(ctx context.Context, l *lang, req api.ExecRequest) (plan language.Plan, stdin []byte, dir string, aerr *api.Error) {
	if req.Cwd != "" {
		cwd, aerr := sessionPath(req.Cwd)
		if aerr != nil {
			return plan, nil, "", apiErr(api.CodeInvalidRequest, "cwd: %s", aerr.Message)
		}
		if cwd != "." {
			dir = path.Join(runtime.Workspace, cwd)
		}
	}
	switch {
	case len(req.Argv) > 0 && (req.Code != "" || len(req.Files) > 0):
		return plan, nil, "", apiErr(api.CodeInvalidRequest, "send either argv (a command) or code/files (a program), not both")
	case len(req.Argv) > 0:
		stdin, aerr := decodeInput(req.Argv, req.Env, req.Stdin, req.StdinEncoding)
		if aerr != nil {
			return plan, nil, "", aerr
		}
		plan = language.Plan{Steps: []language.Step{{Name: "run", Argv: req.Argv}}}
		return plan, stdin, dir, nil
	}
	prog, aerr := decodeProgram(api.RunRequest{
		Code: req.Code, Files: req.Files, Entry: req.Entry, Args: req.Args, Env: req.Env,
		Stdin: req.Stdin, StdinEncoding: req.StdinEncoding,
	})
	if aerr != nil {
		return plan, nil, "", apiErr(api.CodeInvalidRequest, "%s (or send argv to run a command)", aerr.Message)
	}
	plan, aerr = s.plan(ctx, l, prog)
	// The program's files go where it runs, so that relative names work.
	for i := range plan.Files {
		plan.Files[i].Path = path.Join(strings.TrimPrefix(dir, runtime.Workspace+"/"), plan.Files[i].Path)
	}
	return plan, prog.stdin, dir, aerr
}

// ResetSession ends every process of a session and empties its workspace
// (but project_files), leaving it usable.
func (s *Service) ResetSession(ctx context.Context, id string) (*api.Session, *api.Error) {
	aerr := s.use(ctx, id, func(ss *session, sb *runtime.Sandbox) *api.Error {
		res, err := sb.File(ctx, supervisor.OpReset, supervisor.FileRequest{Path: "."}, nil, nil)
		if err != nil {
			return errorFor(fmt.Errorf("resetting the session: %w", err))
		}
		if res.Error != "" {
			s.markLost(ss, "reset failed: "+res.Error)
			return apiErr(api.CodeSessionLost, "reset failed, the session is lost: %s", res.Error)
		}
		return nil
	})
	if aerr != nil {
		return nil, aerr
	}
	return s.Session(id)
}

// janitor expires sessions and writes their usage back to the store.
func (s *Service) janitor() {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.expire(now)
			s.flushSessions()
		}
	}
}

// expire ends sessions past their TTL or idle too long. A session in use
// is left until its operation ends.
func (s *Service) expire(now time.Time) {
	s.sessMu.Lock()
	var due []*session
	for id, ss := range s.sessions {
		rec := ss.snapshot()
		if now.After(rec.ExpiresAt) || now.Sub(rec.LastUsedAt) > time.Duration(rec.IdleTimeout) {
			select {
			case <-ss.turn: // idle: it is ours now, and stays taken
				delete(s.sessions, id)
				due = append(due, ss)
			default:
			}
		}
	}
	for id, rec := range s.lost {
		if now.After(rec.ExpiresAt) {
			delete(s.lost, id)
			_ = s.store.DeleteSession(id)
		}
	}
	s.sessMu.Unlock()
	for _, ss := range due {
		rec := ss.snapshot()
		why := "idle timeout"
		if now.After(rec.ExpiresAt) {
			why = "ttl"
		}
		if err := s.store.DeleteSession(rec.ID); err != nil {
			s.log.Error("forgetting an expired session failed", "session", rec.ID, "error", err)
		}
		s.closeSession(ss, "expired: "+why)
	}
}

// flushSessions stores the sessions whose usage changed.
func (s *Service) flushSessions() {
	s.sessMu.Lock()
	var dirty []api.Session
	for _, ss := range s.sessions {
		ss.mu.Lock()
		if ss.dirty {
			ss.dirty = false
			dirty = append(dirty, ss.rec)
		}
		ss.mu.Unlock()
	}
	s.sessMu.Unlock()
	for _, rec := range dirty {
		if err := s.store.PutSession(rec); err != nil {
			s.log.Error("storing a session failed", "session", rec.ID, "error", err)
		}
	}
}

// recoverSessions runs at start: each stored session gets its container
// back if it still runs and its supervisor answers; otherwise it is lost.
// It returns the containers that stay.
func (s *Service) recoverSessions(ctx context.Context, containers []runtime.Container) (map[string]bool, error) {
	stored, err := s.store.Sessions()
	if err != nil {
		return nil, fmt.Errorf("reading sessions: %w", err)
	}
	byID := map[string]runtime.Container{}
	for _, c := range containers {
		byID[c.ID] = c
	}
	keep := map[string]bool{}
	now := time.Now()
	for _, rec := range stored {
		if rec.State != api.SessionActive {
			s.lost[rec.ID] = rec
			continue
		}
		if now.After(rec.ExpiresAt) {
			_ = s.store.DeleteSession(rec.ID)
			continue
		}
		why := ""
		l, known := s.lookup[rec.Language]
		c, found := byID[rec.ContainerID]
		var sb *runtime.Sandbox
		switch {
		case !known:
			why = "its language " + rec.Language + " is no longer configured"
		case !found || !c.Running:
			why = "its container was gone when sandboxd restarted"
		default:
			if sb, err = s.rt.Attach(ctx, c); err != nil {
				why = "its container did not answer when sandboxd restarted: " + err.Error()
			}
		}
		if why != "" {
			rec.State, rec.Error = api.SessionLost, why
			s.lost[rec.ID] = rec
			s.log.Warn("session lost", "session", rec.ID, "why", why)
			if err := s.store.PutSession(rec); err != nil {
				return nil, err
			}
			continue
		}
		limits, _ := effectiveLimits(l.cfg.Name, l.cfg.Limits, 0, &rec.Limits)
		ss := &session{lang: l, limits: limits, turn: make(chan struct{}, 1), rec: rec, sb: sb}
		ss.turn <- struct{}{}
		s.sessions[rec.ID] = ss
		keep[c.ID] = true
		s.log.Info("session recovered", "session", rec.ID, "container_id", c.ID[:12])
	}
	return keep, nil
}

// sessionErr maps a failed workspace operation to an API error.
func sessionErr(p string, res supervisor.FileResult) *api.Error {
	msg := res.Error
	if !strings.HasPrefix(msg, p) {
		msg = p + ": " + msg
	}
	switch res.ErrorKind {
	case supervisor.ErrNotFound:
		return apiErr(api.CodeNotFound, "%s", msg)
	case supervisor.ErrTooLarge:
		return apiErr(api.CodeTooLarge, "%s", msg)
	case supervisor.ErrNoSpace:
		return apiErr(api.CodeNoSpace, "%s: the workspace is full (its size is the disk limit)", msg)
	case supervisor.ErrNotRegular, supervisor.ErrReadOnly:
		return apiErr(api.CodeConflict, "%s", msg)
	}
	return apiErr(api.CodeInvalidRequest, "%s", msg)
}
