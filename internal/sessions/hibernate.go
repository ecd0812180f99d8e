package sessions

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/snapshots"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/runtime"
)

// Hibernation. A hibernated session has a record (state "hibernated",
// with its archive's size and digest) and an archive of its workspace,
// state_dir/sessions/ID.tar; no container. The steps are ordered so that
// a crash at any point leaves the session whole, active or hibernated:
//
//   - hibernate: archive written (temporary name, fsynced, renamed) →
//     record stored as hibernated → container removed. A crash before the
//     record leaves it active (the archive, named by no record, goes at the
//     next start); after it, the container is removed at the next start,
//     which removes every container no active session claims.
//   - resume: container taken → archive extracted into it while its digest
//     is checked → record stored as active → archive removed. The sandbox
//     is nobody's until the digest matched; a crash before the record
//     leaves it hibernated, its new container unclaimed.
//
// What survives is the workspace's own files (project_files is mounted
// again), the record (env, limits, network, project) and what the store
// keeps apart (snapshots, history); interpreters' memory does not: each
// context that ran reports it lost on its next cell.

// hibernateParallel bounds the idle sessions the janitor archives at once.
const hibernateParallel = 2

func (m *Sessions) archivePath(id string) string { return filepath.Join(m.dir, id+".tar") }

// dropArchive removes session id's archive, if it has one.
func (m *Sessions) dropArchive(id string) {
	if err := os.Remove(m.archivePath(id)); err != nil && !os.IsNotExist(err) {
		m.log.Error("removing a hibernated session's archive failed", "session", id, "error", err)
	}
}

// Pause hibernates a session now: its workspace goes to disk, its
// container away. Pausing a hibernated session changes nothing.
func (m *Sessions) Pause(ctx context.Context, id string) (*state.Session, error) {
	return m.inTurn(ctx, id, func(ss *Session) error {
		if ss.Record().Hibernation != nil {
			return nil
		}
		return m.hibernate(ctx, ss)
	})
}

// inTurn runs fn on session id in its turn, and returns its record after.
func (m *Sessions) inTurn(ctx context.Context, id string, fn func(*Session) error) (*state.Session, error) {
	if aerr := m.gate.Enter(); aerr != nil {
		return nil, aerr
	}
	defer m.gate.Leave()
	ss, aerr := m.find(id)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := m.take(ctx, ss); aerr != nil {
		return nil, aerr
	}
	defer func() { ss.turn <- struct{}{} }()
	if aerr := fn(ss); aerr != nil {
		return nil, aerr
	}
	return m.Get(id)
}

// Resume wakes a hibernated or frozen session now, as any call that
// needs its sandbox would. Resuming an active session changes nothing.
func (m *Sessions) Resume(ctx context.Context, id string) (*state.Session, error) {
	if aerr := m.Use(ctx, id, func(*Session, *runtime.Sandbox) error { return nil }); aerr != nil {
		return nil, aerr
	}
	return m.Get(id)
}

// hibernateIdle hibernates a session the janitor found idle, whose turn
// it took. When it cannot, the session stays active, and is tried again
// an idle_timeout later.
func (m *Sessions) hibernateIdle(ss *Session) {
	defer func() { ss.turn <- struct{}{} }()
	m.idleSlots <- struct{}{}
	defer func() { <-m.idleSlots }()
	ctx, cancel := context.WithTimeout(context.Background(), hibernateTimeout)
	defer cancel()
	if aerr := m.hibernate(ctx, ss); aerr != nil {
		ss.mu.Lock()
		ss.idleFrom = time.Now()
		ss.mu.Unlock()
		m.log.Warn("an idle session could not hibernate; it stays active", "session", ss.Record().ID, "error", aerr)
	}
}

// hibernateTimeout bounds the archiving of one idle session.
const hibernateTimeout = 10 * time.Minute

// hibernate archives the workspace of ss, whose turn the caller holds,
// and removes its container; where the runtime can, it checkpoints the
// container instead, memory and all, and keeps it stopped (the archive
// stays as the fallback). On any failure the session stays active.
func (m *Sessions) hibernate(ctx context.Context, ss *Session) error {
	ss.mu.Lock()
	frozen, users := ss.rec.State == state.SessionFrozen, ss.users
	ss.mu.Unlock()
	if !frozen {
		return m.hibernateRunning(ctx, ss)
	}
	// Its supervisor writes the archive: a frozen session thaws first,
	// outside sessions.max, as it is on its way out; what would stop it
	// is checked before, and one that fails after is frozen again.
	if users > 0 {
		return errdefs.Errorf(errdefs.Conflict, "session %s has a terminal or another operation open; close it, then pause", ss.Record().ID)
	}
	if _, aerr := m.hibernationRoom(); aerr != nil {
		return aerr
	}
	if aerr := m.unfreeze(ctx, ss); aerr != nil {
		return aerr
	}
	aerr := m.hibernateRunning(ctx, ss)
	if aerr != nil {
		if ferr := m.freeze(ctx, ss, true); ferr != nil {
			m.log.Warn("freezing again a session that could not hibernate failed; it runs", "session", ss.Record().ID, "error", ferr)
		}
	}
	return aerr
}

// hibernateRunning is hibernate for a running session.
func (m *Sessions) hibernateRunning(ctx context.Context, ss *Session) error {
	ss.mu.Lock()
	lease, rec, users := ss.lease, ss.rec, ss.users
	ss.mu.Unlock()
	sb := lease.Sandbox()
	switch {
	case sb == nil:
		return noSession(rec.ID) // closed meanwhile
	case users > 0:
		return errdefs.Errorf(errdefs.Conflict, "session %s has a terminal or another operation open; close it, then pause", rec.ID)
	case !sb.Alive():
		return errdefs.Errorf(errdefs.RuntimeUnavailable, "session %s's sandbox does not answer now (%v); it stays active", rec.ID, sb.Err())
	}
	room, aerr := m.hibernationRoom()
	if aerr != nil {
		return aerr
	}
	started := time.Now()
	contexts := m.runningContexts(ctx, sb)
	a, aerr := snapshots.WriteArchive(m.dir, func(w io.Writer) (int, error) {
		return archiveWorkspace(ctx, sb, rec.ID, "hibernate", room, "sessions.max_hibernated_bytes", w)
	})
	if aerr != nil {
		return aerr
	}
	if err := os.Rename(a.Temp, m.archivePath(rec.ID)); err != nil {
		os.Remove(a.Temp)
		return errdefs.Errorf(errdefs.Internal, "keeping session %s's archive: %v", rec.ID, err)
	}
	syncDir(m.dir)

	ss.mu.Lock()
	if ss.users > 0 { // an operation began meanwhile, without the turn
		ss.mu.Unlock()
		m.dropArchive(rec.ID)
		return errdefs.Errorf(errdefs.Conflict, "session %s began another operation (a terminal?) while it was being paused; it stays active", rec.ID)
	}
	before := ss.rec
	memory := m.cfg.KeepMemory && m.sandboxes.CanCheckpoint(ctx, ss.Lang)
	ss.rec.State, ss.rec.ContainerID = state.SessionHibernated, ""
	if memory {
		ss.rec.ContainerID = sb.ID
	}
	ss.rec.Hibernation = &state.Hibernation{At: time.Now().UTC(), Path: m.archivePath(rec.ID), Bytes: a.Size, SHA256: a.SHA256,
		Skipped: a.Skipped, Memory: memory, Contexts: contexts}
	if !memory {
		ss.forgetContexts(contexts)
	}
	ss.lease = nil
	ss.mu.Unlock()
	if _, err := m.save(ss); err != nil {
		ss.mu.Lock()
		ss.rec, ss.lease = before, lease
		ss.mu.Unlock()
		m.dropArchive(rec.ID)
		return errdefs.Errorf(errdefs.Internal, "storing session %s as hibernated: %v; it stays active", rec.ID, err)
	}
	if !m.isLive(ss) { // deleted meanwhile, maybe before its archive was there
		m.dropArchive(rec.ID)
		lease.Remove()
		return noSession(rec.ID)
	}
	if memory {
		if err := lease.Checkpoint(ctx); err != nil {
			// The archive has the files: the session sleeps without its memory.
			m.log.Warn("checkpointing a session failed; it hibernates with its files alone", "session", rec.ID, "error", err)
			m.withoutMemory(ss)
			memory = false
		}
	}
	m.log.Info("session hibernated", "session", rec.ID, "bytes", a.Size, "skipped", a.Skipped, "memory", memory,
		"contexts", contexts, "took", time.Since(started).Round(time.Millisecond), "container_id", runtime.ShortID(sb.ID))
	if !memory {
		lease.Remove()
	}
	return nil
}

// withoutMemory makes a hibernated session's record say that its memory
// is gone: its checkpoint failed, or cannot be restored. Its contexts
// report it; the caller removes the container.
func (m *Sessions) withoutMemory(ss *Session) {
	ss.mu.Lock()
	h := *ss.rec.Hibernation
	h.Memory = false
	ss.rec.Hibernation, ss.rec.ContainerID = &h, ""
	ss.forgetContexts(h.Contexts)
	ss.mu.Unlock()
	if rec, err := m.save(ss); err != nil {
		m.log.Error("storing a hibernated session failed", "session", rec.ID, "error", err)
	}
}

// forgetContexts records that contexts lost their memory; ss.mu is held.
func (ss *Session) forgetContexts(contexts []string) {
	for _, c := range contexts {
		if !slices.Contains(ss.rec.ContextsLost, c) {
			ss.rec.ContextsLost = append(ss.rec.ContextsLost, c)
		}
	}
}

// hibernationRoom is how many archive bytes one more hibernated session
// may take, or why there is no room for one.
func (m *Sessions) hibernationRoom() (int64, error) {
	m.mu.Lock()
	c := m.census()
	m.mu.Unlock()
	n, bytes := c.Hibernated, c.HibernatedBytes
	if n >= m.cfg.MaxHibernated {
		return 0, errdefs.Errorf(errdefs.TooLarge, "%d sessions are hibernated, the most sandboxd.hcl allows (sessions.max_hibernated); delete one (sandboxctl session rm)", n)
	}
	room := m.cfg.MaxHibernatedBytes - bytes
	if room <= 0 {
		return 0, errdefs.Errorf(errdefs.TooLarge, "hibernated sessions hold %s, all sessions.max_hibernated_bytes allows; delete one (sandboxctl session rm)", units.ByteSize(bytes))
	}
	return room, nil
}

// runningContexts names the contexts running in sb, whose memory a
// hibernation loses; a sandbox that cannot say has none worth reporting.
func (m *Sessions) runningContexts(ctx context.Context, sb *runtime.Sandbox) []string {
	running, err := sandbox.WorkspaceOf(sb).Contexts(ctx)
	if err != nil {
		return nil
	}
	var names []string
	for _, c := range running {
		names = append(names, c.Name)
	}
	return names
}

// resume gives a hibernated session, whose turn the caller holds, its
// checkpointed container back, or else a container with its workspace
// back from the archive. A session whose archive is missing or does not
// match its digest is lost; one that cannot get a container now stays
// hibernated.
func (m *Sessions) resume(ctx context.Context, ss *Session) error {
	started := time.Now()
	rec := ss.Record()
	if rec.Hibernation == nil {
		return nil // resumed, or closed, while we waited
	}
	if aerr := roomForThreads(); aerr != nil {
		return aerr
	}
	if aerr := m.reserveEvicting(ctx, ss, true); aerr != nil {
		return aerr
	}
	defer m.unreserve()
	if rec.Hibernation.Memory {
		lease, err := m.sandboxes.Restore(ctx, ss.Lang, rec.ContainerID, rec.Env)
		if err == nil {
			m.rearm(lease, rec, ss.Lang)
			return m.woke(ctx, ss, lease, started)
		}
		m.log.Warn("restoring a session's checkpoint failed; it resumes from its workspace archive", "session", rec.ID, "error", err)
		m.sandboxes.RemoveStopped(ss.Lang, rec.ContainerID)
		m.withoutMemory(ss)
		rec = ss.Record()
	}
	// Checked whole before a container is taken or a byte of it reaches
	// one.
	f, err := snapshots.OpenVerified(m.archivePath(rec.ID), rec.Hibernation.SHA256, rec.Hibernation.Bytes)
	if err != nil {
		return m.lose(ss, "hibernation: "+err.Error())
	}
	defer f.Close()
	lease, err := m.sandboxes.Hold(ctx, ss.Lang, ss.Limits, m.mounts(rec.Project), rec.Env)
	if err != nil {
		return err
	}
	m.rearm(lease, rec, ss.Lang)
	if aerr := sandbox.WorkspaceOf(lease.Sandbox()).Extract(ctx, f); aerr != nil {
		lease.Remove()
		return errdefs.Errorf(errdefs.KindOf(aerr), "resuming session %s (it stays hibernated): %w", rec.ID, aerr)
	}

	return m.woke(ctx, ss, lease, started)
}

// woke makes ss active in sb, its resume begun at started, and says so;
// a session deleted meanwhile is not brought back.
func (m *Sessions) woke(ctx context.Context, ss *Session, lease *sandbox.Lease, started time.Time) error {
	sb := lease.Sandbox()
	took := time.Since(started)
	ss.mu.Lock()
	memory := ss.rec.Hibernation.Memory
	ss.rec.State, ss.rec.ContainerID, ss.rec.Hibernation = state.SessionActive, sb.ID, nil
	ss.rec.Resumes++
	ss.rec.ResumeMS = float64(took.Microseconds()) / 1000
	ss.lease, ss.idleFrom = lease, time.Time{}
	ss.mu.Unlock()
	if !m.kept(ss, lease) {
		m.dropArchive(ss.Record().ID)
		return noSession(ss.Record().ID)
	}
	rec, err := m.save(ss)
	if err != nil {
		// The archive stays: at the next start the record says hibernated
		// still, and this container is nobody's (or, checkpointed before,
		// fails to restore and goes).
		m.log.Error("storing a resumed session failed", "session", rec.ID, "error", err)
	} else {
		m.dropArchive(rec.ID)
	}
	m.log.Info("session resumed", "session", rec.ID, "memory", memory, "took", took.Round(time.Millisecond), "container_id", runtime.ShortID(sb.ID))
	noticeResume(ctx, took)
	return nil
}

// lose makes a hibernated session lost for why, and says so.
func (m *Sessions) lose(ss *Session, why string) error {
	rec := ss.Record()
	m.MarkLost(ss, why)
	return errdefs.Errorf(errdefs.SessionLost, "session %s is lost: %s; delete it and create a new one", rec.ID, why)
}

// reserveEvicting reserves a place for one more running session of
// except's language. When sessions.max are running, it freezes the least
// recently used idle one (or, where its runtime cannot freeze or
// sessions.max_frozen are frozen, hibernates it); when the session needs
// a container and the language's pool has all its containers out, it
// hibernates the least recently used idle session of that language,
// frozen or not. Never except. When every one is busy, it waits for one
// to be idle, up to resumeWait.
func (m *Sessions) reserveEvicting(ctx context.Context, except *Session, needContainer bool) error {
	deadline := time.Now().Add(resumeWait)
	failed := map[*Session]bool{} // could not be moved: not tried again
	for {
		aerr := m.reserve()
		if aerr != nil && !errdefs.Is(aerr, errdefs.TooManySessions) {
			return aerr
		}
		var only *languages.Language // whose sessions free what is short
		if aerr == nil {
			if !needContainer || !m.sandboxes.PoolFull(except.Lang) {
				return nil
			}
			m.unreserve() // while room is made in the pool
			only = except.Lang
		}
		if victim := m.leastRecentlyUsed(except, failed, only); victim != nil {
			what, err := m.setAside(ctx, victim, only == nil)
			victim.turn <- struct{}{}
			if err != nil {
				failed[victim] = true
				m.log.Warn("making room for a session: one could not "+what, "session", victim.Record().ID, "error", err)
			} else {
				m.log.Info("made room for a session: the least recently used did "+what, "session", victim.Record().ID, "for", except.Record().ID)
			}
			continue
		}
		if time.Now().After(deadline) {
			if aerr == nil { // the pool's own queue takes it from here
				return m.reserve()
			}
			return errdefs.Errorf(errdefs.KindOf(aerr), "waited %s for one of them to be idle: %w", resumeWait, aerr)
		}
		select {
		case <-ctx.Done():
			return errdefs.Errorf(errdefs.Invalid, "gave up waiting for room to wake the session: %v", ctx.Err())
		case <-time.After(resumePoll):
		}
	}
}

// setAside freezes ss, whose turn the caller holds, when freezing does
// and may (its runtime can, and fewer than sessions.max_frozen are), or
// else hibernates it; it says which.
func (m *Sessions) setAside(ctx context.Context, ss *Session, freezingDoes bool) (string, error) {
	m.mu.Lock()
	room := m.census().Frozen < m.cfg.MaxFrozen
	m.mu.Unlock()
	if freezingDoes && room {
		err := m.freeze(ctx, ss, false)
		ss.mu.Lock()
		unfreezable := ss.unfreezable
		ss.mu.Unlock()
		if !unfreezable {
			return "freeze", err
		}
	}
	return "hibernate", m.hibernate(ctx, ss)
}

// A wake that finds every running session busy waits this long at most,
// trying again every resumePoll.
const (
	resumeWait = 30 * time.Second
	resumePoll = 20 * time.Millisecond
)

// leastRecentlyUsed takes the turn of the session used longest ago that
// nothing uses now, other than except and those in skip: a running one,
// or, given a language only, one of that language with a container
// (running or frozen).
func (m *Sessions) leastRecentlyUsed(except *Session, skip map[*Session]bool, only *languages.Language) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	var idle []*Session
	for _, ss := range m.live {
		ss.mu.Lock()
		hasContainer := ss.lease != nil || ss.detached != nil
		running := ss.lease != nil && ss.rec.State == state.SessionActive
		if ss != except && !skip[ss] && ss.users == 0 && (only == nil && running || only != nil && hasContainer && ss.Lang == only) {
			idle = append(idle, ss)
		}
		ss.mu.Unlock()
	}
	slices.SortFunc(idle, func(a, b *Session) int { return a.Record().LastUsedAt.Compare(b.Record().LastUsedAt) })
	for _, ss := range idle {
		select {
		case <-ss.turn:
			return ss
		default:
		}
	}
	return nil
}

// recoverHibernated keeps a stored hibernated session at start; its
// archive is checked when it resumes. The caller holds what guards the
// maps.
func (m *Sessions) recoverHibernated(rec state.Session) {
	l, known := m.langs.Lookup(rec.Language)
	if !known {
		rec.State, rec.Error = state.SessionLost, "its language "+rec.Language+" is no longer configured"
		m.lost[rec.ID] = rec
		if err := m.store.PutSession(rec); err != nil {
			m.log.Error("storing a lost session failed", "session", rec.ID, "error", err)
		}
		return
	}
	limits := request.KeptLimits(l.Limits(), rec.Limits)
	m.live[rec.ID] = newSession(l, limits, rec, nil)
}

// pruneArchives removes the archives no hibernated session names: what a
// crash left half written or not yet recorded, or already resumed.
func (m *Sessions) pruneArchives() {
	ents, _ := os.ReadDir(m.dir)
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".tar")
		m.mu.Lock()
		ss := m.live[id]
		_, lost := m.lost[id]
		m.mu.Unlock()
		if ok && (lost || ss != nil && ss.Record().Hibernation != nil) {
			continue
		}
		m.log.Info("removing an archive no hibernated session names", "file", e.Name())
		_ = os.Remove(filepath.Join(m.dir, e.Name()))
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// ContextLost says whether context name's memory was lost to a
// hibernation and not yet reported so; it is reported once.
func (ss *Session) ContextLost(name string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	i := slices.Index(ss.rec.ContextsLost, name)
	if i < 0 {
		return false
	}
	ss.rec.ContextsLost = slices.Delete(ss.rec.ContextsLost, i, i+1)
	ss.dirty = true
	return true
}

type resumeKey struct{}

// OnResume returns ctx with fn added to what is called, with how long it
// took, when a session resumes for a call made with ctx.
func OnResume(ctx context.Context, fn func(took time.Duration)) context.Context {
	prev, _ := ctx.Value(resumeKey{}).(func(time.Duration))
	return context.WithValue(ctx, resumeKey{}, func(took time.Duration) {
		if prev != nil {
			prev(took)
		}
		fn(took)
	})
}

func noticeResume(ctx context.Context, took time.Duration) {
	if fn, ok := ctx.Value(resumeKey{}).(func(time.Duration)); ok {
		fn(took)
	}
}
