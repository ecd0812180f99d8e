package e2b

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
)

// lifecycleBody is how a create call asks for a sandbox that pauses at its
// timeout (the SDKs' lifecycle: {onTimeout, autoResume}).
type lifecycleBody struct {
	AutoPause       *bool `json:"autoPause"`
	AutoPauseMemory *bool `json:"autoPauseMemory"`
	AutoResume      *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
}

// lifecycle checks what a create call asks for, as E2B's API does, and
// says what the sandbox does at its timeout ttl from now.
func (b lifecycleBody) lifecycle(ttl time.Duration) (state.E2BLifecycle, error) {
	pause := b.AutoPause != nil && *b.AutoPause
	filesOnly := b.AutoPauseMemory != nil && !*b.AutoPauseMemory
	resume := b.AutoResume != nil && b.AutoResume.Enabled
	switch {
	case !pause && b.AutoPauseMemory != nil:
		return state.E2BLifecycle{}, errors.New("autoPauseMemory is only allowed when autoPause is true")
	case !pause && resume:
		return state.E2BLifecycle{}, errors.New("autoResume can only be enabled when autoPause is true")
	case filesOnly && resume:
		return state.E2BLifecycle{}, errors.New("autoResume cannot be enabled with autoPauseMemory false: a sandbox paused without its memory resumes only by connect")
	case !pause:
		return state.E2BLifecycle{}, nil
	}
	return state.E2BLifecycle{Pause: true, FilesOnly: filesOnly, AutoResume: resume, Timeout: ttl, EndsAt: time.Now().UTC().Add(ttl)}, nil
}

// lifecycleInfo is a sandbox's lifecycle as getInfo shows it.
type lifecycleInfo struct {
	OnTimeout  string `json:"onTimeout"` // "kill" or "pause"
	AutoResume bool   `json:"autoResume"`
}

func lifecycleOf(l state.E2BLifecycle) lifecycleInfo {
	if l.Pause {
		return lifecycleInfo{OnTimeout: "pause", AutoResume: l.AutoResume}
	}
	return lifecycleInfo{OnTimeout: "kill"}
}

// takeTurn waits for the sandbox's turn (see sandbox.turn) until ctx ends;
// giveTurn gives it back.
func (sb *sandbox) takeTurn(ctx context.Context) error {
	select {
	case sb.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (sb *sandbox) giveTurn() { <-sb.turn }

// endsAt is when the sandbox pauses, for one that pauses at its timeout.
func (sb *sandbox) endsAt() time.Time { return sb.lifecycle().EndsAt }

// lifecycle is what the sandbox does at its timeout, as it is now.
func (sb *sandbox) lifecycle() state.E2BLifecycle {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.life
}

// setTimeout moves a pausing sandbox's timeout to d from now, keeps its
// session max_ttl past that, and stores both. The caller holds sb.turn.
func (s *Server) setTimeout(sb *sandbox, d time.Duration) error {
	if _, aerr := s.d.Sessions.Expire(sb.rec.ID, s.d.Sessions.MaxTTL()); aerr != nil {
		return aerr
	}
	sb.mu.Lock()
	sb.life.EndsAt = time.Now().UTC().Add(d)
	sb.mu.Unlock()
	s.save(sb)
	s.arm(sb)
	return nil
}

// arm starts the timer that pauses a pausing sandbox at its timeout.
func (s *Server) arm(sb *sandbox) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.life.Pause {
		return
	}
	if sb.timer != nil {
		sb.timer.Stop()
	}
	sb.timer = time.AfterFunc(max(time.Until(sb.life.EndsAt), 0), func() { s.timedOut(sb) })
}

// pauseRetry is how long a pause that failed at the timeout waits to be
// tried again.
const pauseRetry = 5 * time.Second

// timedOut pauses a sandbox whose timeout came, as E2B's auto-pause does,
// and keeps it paused for max_ttl. It takes the sandbox's turn: a
// timeout moved meanwhile, or a client's pause or connect, goes first or
// after, never across it.
func (s *Server) timedOut(sb *sandbox) {
	ctx, cancel := context.WithTimeout(s.base, time.Minute)
	defer cancel()
	if sb.takeTurn(ctx) != nil {
		s.retryPause(sb)
		return
	}
	defer sb.giveTurn()
	select {
	case <-sb.gone:
		return
	case <-s.base.Done(): // sandboxd is stopping: the next start pauses it
		return
	default:
	}
	if sb.paused.Load() || time.Now().Before(sb.endsAt()) { // a timeout moved while the timer fired
		return
	}
	if err := s.pauseSandbox(ctx, sb, sb.life.FilesOnly); err != nil {
		if k := errdefs.KindOf(err); k == errdefs.NotFound || k == errdefs.SessionLost {
			s.log.Warn("a sandbox's session is gone at its timeout: it is forgotten", "sandbox", sb.rec.ID, "error", err)
			s.forget(sb.rec.ID)
			return
		}
		s.log.Error("pausing a sandbox at its timeout failed; trying again in a while", "sandbox", sb.rec.ID, "error", err)
		s.retryPause(sb)
		return
	}
	s.log.Info("sandbox paused at its timeout", "sandbox", sb.rec.ID, "files_only", sb.life.FilesOnly)
}

// retryPause tries the timeout's pause again in a while.
func (s *Server) retryPause(sb *sandbox) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.timer = time.AfterFunc(pauseRetry, func() { s.timedOut(sb) })
}

// pauseSandbox freezes the sandbox, as E2B's pause keeps it: its
// processes, commands and interpreters stop where they stand, memory
// kept, until connect. Asked not to keep memory (filesOnly), or where it
// cannot be frozen (Kubernetes), it hibernates: its files go to disk, its
// processes and watches end. One that pauses at its timeout is kept for
// max_ttl from then. The caller holds sb.turn.
func (s *Server) pauseSandbox(ctx context.Context, sb *sandbox, filesOnly bool) error {
	var aerr error
	if !filesOnly && s.d.Sessions.CanFreeze(sb.rec.ID) {
		_, aerr = s.d.Sessions.FreezeInUse(ctx, sb.rec.ID)
	}
	if filesOnly || !s.d.Sessions.CanFreeze(sb.rec.ID) { // found so now, or known before
		sb.procs.killAll()
		sb.watch.stopAll() // a watch holds the session, as an operation does
		// What was ended lets go of the session a moment later.
		for wait := time.Now().Add(pauseDrain); ; time.Sleep(50 * time.Millisecond) {
			_, aerr = s.d.Sessions.Pause(ctx, sb.rec.ID)
			if !errdefs.Is(aerr, errdefs.Conflict) || time.Now().After(wait) {
				break
			}
		}
	}
	if aerr != nil {
		return aerr
	}
	s.setPaused(sb, true)
	if sb.life.Pause {
		if _, aerr := s.d.Sessions.Expire(sb.rec.ID, s.d.Sessions.MaxTTL()); aerr != nil {
			s.log.Warn("keeping a paused sandbox failed: it ends at its session's expiry", "sandbox", sb.rec.ID, "error", aerr)
		}
	}
	return nil
}

// pauseDrain is how long a pause without memory waits for the commands,
// watches and cells it ended to let go of the sandbox.
const pauseDrain = 10 * time.Second

// resume wakes a paused sandbox. One that pauses at its timeout gets at
// least life more, or, past its timeout, the timeout it was made with.
// The caller holds sb.turn.
func (s *Server) resume(ctx context.Context, sb *sandbox, life time.Duration) (*state.Session, error) {
	sess, aerr := s.d.Sessions.Resume(ctx, sb.rec.ID)
	if aerr != nil {
		return nil, aerr
	}
	s.setPaused(sb, false)
	if !sb.life.Pause {
		return sess, nil
	}
	if life <= 0 && !time.Now().Before(sb.endsAt()) {
		life = sb.life.Timeout
	}
	if time.Until(sb.endsAt()) < life {
		if err := s.setTimeout(sb, life); err != nil {
			return nil, err
		}
	}
	return s.d.Sessions.Get(sb.rec.ID)
}

// wake resumes a paused sandbox made to resume on traffic (autoResume),
// and says whether its agent may be called now.
func (s *Server) wake(ctx context.Context, sb *sandbox) bool {
	if sb.takeTurn(ctx) != nil { // a pause under way ends first
		return false
	}
	defer sb.giveTurn()
	if s.settle(sb); !sb.paused.Load() {
		return true
	}
	if !sb.life.AutoResume {
		return false
	}
	if _, err := s.resume(ctx, sb, 0); err != nil {
		s.log.Warn("resuming a sandbox on a call to it failed", "sandbox", sb.rec.ID, "error", err)
		return false
	}
	return true
}

// settle takes a paused sandbox whose session runs as resumed: a call on
// its way when the sandbox paused thawed it behind the pause's back. It
// is shown running then, and one that pauses at its timeout gets the
// timeout it was made with again. The caller holds sb.turn.
func (s *Server) settle(sb *sandbox) {
	if !sb.paused.Load() {
		return
	}
	if sess, aerr := s.d.Sessions.Get(sb.rec.ID); aerr != nil || sess.State != state.SessionActive {
		return
	}
	s.log.Info("a paused sandbox was woken by a call on its way: it runs", "sandbox", sb.rec.ID)
	s.setPaused(sb, false)
	if sb.life.Pause {
		if err := s.setTimeout(sb, sb.life.Timeout); err != nil {
			s.log.Warn("setting a woken sandbox's timeout failed", "sandbox", sb.rec.ID, "error", err)
		}
	}
}

// trySettle is settle when the sandbox's turn is free now: a pause or a
// resume under way settles it itself.
func (s *Server) trySettle(sb *sandbox) {
	select {
	case sb.turn <- struct{}{}:
		defer sb.giveTurn()
		s.settle(sb)
	default:
	}
}

// setPaused records whether the sandbox is paused, across restarts too.
func (s *Server) setPaused(sb *sandbox, paused bool) {
	if sb.paused.Swap(paused) != paused {
		s.save(sb)
	}
}

// save stores the sandbox's record with its pause and timeout as they are.
func (s *Server) save(sb *sandbox) {
	rec := sb.rec
	rec.Paused, rec.Lifecycle = sb.paused.Load(), sb.lifecycle()
	if err := s.store.PutE2BSandbox(rec); err != nil {
		s.log.Error("storing a sandbox's state failed", "sandbox", rec.ID, "error", err)
	}
}

// keepPaused runs op, which may wake the sandbox's session (a snapshot, a
// fork, a network change), in the sandbox's turn; a paused sandbox is put
// back as it was after, frozen or on disk, and stays paused to its clients.
func (s *Server) keepPaused(ctx context.Context, sb *sandbox, op func() error) error {
	if err := sb.takeTurn(ctx); err != nil {
		return err
	}
	defer sb.giveTurn()
	if !sb.paused.Load() {
		return op()
	}
	before, aerr := s.d.Sessions.Get(sb.rec.ID)
	if aerr != nil {
		return aerr
	}
	err := op()
	if after, aerr := s.d.Sessions.Get(sb.rec.ID); aerr == nil && after.State == state.SessionActive {
		if before.State == state.SessionHibernated {
			_, aerr = s.d.Sessions.Pause(ctx, sb.rec.ID)
		} else {
			_, aerr = s.d.Sessions.FreezeInUse(ctx, sb.rec.ID)
		}
		if aerr != nil {
			s.log.Warn("pausing a sandbox again after an operation woke it failed", "sandbox", sb.rec.ID, "error", aerr)
		}
	}
	return err
}
