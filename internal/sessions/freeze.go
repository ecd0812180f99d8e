package sessions

import (
	"context"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
)

// Freezing. A session unused for sessions.freeze_after is frozen: the
// runtime stops its processes where they stand (runtime.Freezer), so
// that they keep their memory, its contexts their variables and its
// servers their sockets, and use no CPU. Its container and its channel to
// the supervisor stay; it does not count against sessions.max. Any call
// that needs its sandbox thaws it first (awake), in the session's turn.
// After idle_timeout it hibernates as an active session does.
//
// The record says "frozen" only while the container may be paused: freeze
// pauses, then stores; thaw unpauses, then stores. A crash between leaves
// an active record with a paused container, which Recover thaws, or a
// frozen record with a running one, whose thaw finds nothing to do.

// Freeze freezes a session now; one with a terminal or another
// operation open is refused. Freezing a frozen or hibernated session
// changes nothing.
func (m *Sessions) Freeze(ctx context.Context, id string) (*state.Session, error) {
	return m.freezeNow(ctx, id, false)
}

// FreezeInUse is Freeze for a session whatever runs in it, as E2B's pause
// is: its commands and their streams stop with it and go on once it thaws.
func (m *Sessions) FreezeInUse(ctx context.Context, id string) (*state.Session, error) {
	return m.freezeNow(ctx, id, true)
}

func (m *Sessions) freezeNow(ctx context.Context, id string, evenInUse bool) (*state.Session, error) {
	return m.inTurn(ctx, id, func(ss *Session) error { return m.freeze(ctx, ss, evenInUse) })
}

// CanFreeze says whether session id may be frozen: sandboxd.hcl freezes
// sessions (max_frozen), and its runtime was not found unable to.
func (m *Sessions) CanFreeze(id string) bool {
	ss, aerr := m.find(id)
	if aerr != nil || m.cfg.MaxFrozen == 0 {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return !ss.unfreezable
}

// isLive says whether ss is still one of the live sessions: not deleted,
// expired or lost.
func (m *Sessions) isLive(ss *Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[ss.Record().ID] == ss
}

// freeze freezes ss, whose turn the caller holds.
func (m *Sessions) freeze(ctx context.Context, ss *Session, evenInUse bool) error {
	ss.mu.Lock()
	lease, rec, users := ss.lease, ss.rec, ss.users
	sb := lease.Sandbox()
	switch {
	case sb == nil || rec.State != state.SessionActive:
		ss.mu.Unlock()
		return nil // frozen, hibernated or closed meanwhile
	case users > 0 && !evenInUse:
		ss.mu.Unlock()
		return errdefs.Errorf(errdefs.Conflict, "session %s has a terminal or another operation open; close it, then freeze", rec.ID)
	case !sb.Alive():
		ss.mu.Unlock()
		return errdefs.Errorf(errdefs.RuntimeUnavailable, "session %s's sandbox does not answer now (%v); it stays active", rec.ID, sb.Err())
	case m.cfg.MaxFrozen == 0:
		ss.mu.Unlock()
		return errdefs.Errorf(errdefs.Conflict, "sandboxd.hcl freezes no session (sessions.max_frozen = 0); pause it instead (its workspace goes to disk)")
	}
	// Freezing from now: a call arriving meanwhile waits for the turn,
	// then thaws it. The record says frozen once the container is.
	ss.freezing = true
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		ss.freezing = false
		ss.mu.Unlock()
	}()
	started := time.Now()
	sb.Froze() // calls under way wait for it past their deadlines
	if err := lease.Freeze(ctx); err != nil {
		sb.Thawed()
		if errors.Is(err, runtime.ErrNoFreeze) {
			ss.mu.Lock()
			ss.unfreezable = true
			ss.mu.Unlock()
			return errdefs.Errorf(errdefs.Conflict, "session %s's runtime cannot freeze sandboxes; pause it instead (its workspace goes to disk)", rec.ID)
		}
		return errdefs.Errorf(errdefs.RuntimeUnavailable, "freezing session %s: %v; it stays active", rec.ID, err)
	}
	if !m.isLive(ss) {
		// Deleted or lost meanwhile: its removal thaws and removes the
		// container; its record must not come back.
		return noSession(rec.ID)
	}
	now := time.Now().UTC()
	ss.mu.Lock()
	ss.rec.State, ss.rec.FrozenAt = state.SessionFrozen, &now
	ss.mu.Unlock()
	if _, err := m.save(ss); err != nil {
		if terr := m.sandboxes.Thaw(ctx, sb.ID); terr != nil {
			m.log.Error("thawing a session whose freeze could not be stored failed", "session", rec.ID, "error", terr)
		}
		sb.Thawed()
		ss.mu.Lock()
		ss.rec.State, ss.rec.FrozenAt = state.SessionActive, nil
		ss.mu.Unlock()
		return errdefs.Errorf(errdefs.Internal, "storing session %s as frozen: %v; it stays active", rec.ID, err)
	}
	m.log.Debug("session frozen", "session", rec.ID, "took", time.Since(started).Round(time.Microsecond), "in_use", users)
	return nil
}

// thaw makes a frozen session, whose turn the caller holds, run again,
// within sessions.max: it freezes (or hibernates) the least recently
// used idle session to make room, as a resume does.
func (m *Sessions) thaw(ctx context.Context, ss *Session) error {
	started := time.Now()
	if ss.Record().State != state.SessionFrozen {
		return nil // thawed, or closed, while we waited
	}
	if aerr := m.reserveEvicting(ctx, ss, false); aerr != nil {
		return aerr
	}
	defer m.unreserve()
	if aerr := m.unfreeze(ctx, ss); aerr != nil {
		return aerr
	}
	noticeResume(ctx, time.Since(started))
	return nil
}

// unfreeze thaws ss, whose turn the caller holds, and connects to its
// supervisor if this sandboxd has not yet (it was frozen at start).
func (m *Sessions) unfreeze(ctx context.Context, ss *Session) error {
	started := time.Now()
	ss.mu.Lock()
	lease, rec, detached := ss.lease, ss.rec, ss.detached
	ss.mu.Unlock()
	if rec.State != state.SessionFrozen {
		return nil
	}
	if err := m.sandboxes.Thaw(ctx, rec.ContainerID); err != nil {
		if errors.Is(err, runtime.ErrGone) {
			return m.lose(ss, "its container was gone when it was to thaw")
		}
		return errdefs.Errorf(errdefs.RuntimeUnavailable, "thawing session %s: %v; it stays frozen, retry later", rec.ID, err)
	}
	if lease != nil {
		lease.Sandbox().Thawed()
	} else {
		c := *detached
		c.Running, c.Paused = true, false // thawed: it runs (Attach need not ask the engine)
		again, err := m.sandboxes.Attach(ctx, ss.Lang, c, rec.Env)
		if err != nil {
			return m.lose(ss, "its container did not answer once thawed: "+err.Error())
		}
		m.rearm(again, rec, ss.Lang)
		lease = again
	}
	// Stored by the janitor's next flush, off the caller's path: a crash
	// before leaves a frozen record of a running container, whose thaw
	// at the next start finds nothing to do.
	ss.mu.Lock()
	ss.rec.State, ss.rec.FrozenAt = state.SessionActive, nil
	ss.lease, ss.detached, ss.idleFrom, ss.dirty = lease, nil, time.Time{}, true
	ss.mu.Unlock()
	if detached != nil && !m.kept(ss, lease) {
		return noSession(rec.ID)
	}
	m.log.Debug("session thawed", "session", rec.ID, "took", time.Since(started).Round(time.Microsecond))
	return nil
}

// kept says whether ss, which was just given lease, is still live. A
// session deleted (or expired, or lost) meanwhile may have found no
// container to remove (hibernated, or frozen since the start): the lease
// is removed here instead, or it would run on, nobody's, until the next
// start.
func (m *Sessions) kept(ss *Session, lease *sandbox.Lease) bool {
	if m.isLive(ss) {
		return true
	}
	ss.mu.Lock()
	mine := ss.lease == lease // not taken by the deletion's close
	if mine {
		ss.lease = nil
	}
	ss.mu.Unlock()
	if mine {
		lease.Remove()
	}
	return false
}

// reserveFreezing reserves a place for one more running session: when
// sessions.max are running, it freezes the least recently used idle one
// (milliseconds), never hibernating one on a create's path. While other
// creates are under way (a burst), whose sessions will be idle once made,
// or other creates are freezing sessions to make room, whose places one
// of them may not take, it waits, up to resumeWait; otherwise, when none
// can be frozen, it says at once why there is no place.
func (m *Sessions) reserveFreezing(ctx context.Context) error {
	failed := map[*Session]bool{}
	deadline := time.Now().Add(resumeWait)
	for {
		aerr := m.reserve()
		if aerr == nil || !errdefs.Is(aerr, errdefs.TooManySessions) {
			return aerr
		}
		m.mu.Lock()
		room := m.census().Frozen < m.cfg.MaxFrozen
		m.making++ // before a victim's turn is taken: others wait for it
		m.mu.Unlock()
		victim := (*Session)(nil)
		if room {
			victim = m.leastRecentlyUsed(nil, failed, nil)
		}
		if victim != nil {
			if err := m.freeze(ctx, victim, false); err != nil {
				failed[victim] = true
			}
			victim.turn <- struct{}{}
		}
		m.mu.Lock()
		m.making--
		underway := m.pending + m.making
		m.mu.Unlock()
		switch {
		case !room:
			return aerr
		case victim != nil:
			continue
		case underway == 0 || time.Now().After(deadline):
			return aerr
		}
		select {
		case <-ctx.Done():
			return errdefs.Errorf(errdefs.Invalid, "gave up waiting for room for the session: %v", ctx.Err())
		case <-time.After(resumePoll):
		}
	}
}

// freezeIdle freezes a session the janitor found idle, whose turn it
// took.
func (m *Sessions) freezeIdle(ss *Session) {
	defer func() { ss.turn <- struct{}{} }()
	ctx, cancel := context.WithTimeout(context.Background(), freezeTimeout)
	defer cancel()
	if aerr := m.freeze(ctx, ss, false); aerr != nil {
		ss.mu.Lock()
		unfreezable := ss.unfreezable
		if !unfreezable {
			ss.idleFrom = time.Now() // tried again a freeze_after later
		}
		ss.mu.Unlock()
		if unfreezable {
			return // it hibernates at idle_timeout
		}
		m.log.Warn("an idle session could not freeze; it stays active", "session", ss.Record().ID, "error", aerr)
	}
}

// freezeTimeout bounds the freezing of one idle session.
const freezeTimeout = 30 * time.Second

// recoverFrozen keeps a stored frozen session at start, its container c
// attached to when it thaws. The caller holds what guards the maps.
func (m *Sessions) recoverFrozen(rec state.Session, c runtime.Container) string {
	l, known := m.langs.Lookup(rec.Language)
	switch {
	case !known:
		return "its language " + rec.Language + " is no longer configured"
	case !c.Paused && !c.Running:
		return "its container was gone when sandboxd restarted"
	}
	ss := newSession(l, request.KeptLimits(l.Limits(), rec.Limits), rec, nil)
	ss.detached = &c
	m.live[rec.ID] = ss
	return ""
}

// threadsReserve is the share of the host's pids (kernel.pid_max, and
// threads-max) kept free: past it, a Go program that needs another thread
// (sandboxd itself, the engine, a container's shim) aborts.
const threadsReserve = 0.1

// roomForThreads says why no new sandbox should start when the host's
// threads near its pid limit: each sandbox takes about 30.
func roomForThreads() error {
	load, err := os.ReadFile("/proc/loadavg") // "0.5 0.3 0.2 1/250 12345": 250 threads
	if err != nil {
		return nil
	}
	f := strings.Fields(string(load))
	if len(f) < 4 {
		return nil
	}
	_, total, _ := strings.Cut(f[3], "/")
	threads, err := strconv.Atoi(total)
	if err != nil {
		return nil
	}
	limit := math.MaxInt
	for _, name := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if b, err := os.ReadFile(name); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				limit = min(limit, n)
			}
		}
	}
	if float64(threads) > (1-threadsReserve)*float64(limit) {
		return errdefs.Errorf(errdefs.TooManySessions, "the host runs %d threads of the %d its kernel allows (kernel.pid_max, kernel.threads-max); end sessions, or raise kernel.pid_max (scripts/docker-engine.sh sets 4194304)", threads, limit)
	}
	return nil
}
