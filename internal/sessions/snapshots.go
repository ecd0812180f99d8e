package sessions

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/snapshots"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/runtime"
)

// maxForks bounds the sessions one fork makes.
const maxForks = 16

// Snapshot saves a session's workspace (its files, directories and links;
// project_files, processes and contexts' interpreter state are not part
// of it) under name.
func (m *Sessions) Snapshot(ctx context.Context, id, name string) (*state.Snapshot, error) {
	if aerr := m.snapshots.CheckName(name); aerr != nil {
		return nil, aerr
	}
	room, aerr := m.snapshots.Room()
	if aerr != nil {
		return nil, aerr
	}
	var sn *state.Snapshot
	aerr = m.Use(ctx, id, func(ss *Session, sb *runtime.Sandbox) error {
		sn, aerr = m.snapshots.Save(state.Snapshot{Name: name, Language: ss.Lang.Name(), Session: id}, func(w io.Writer) (int, error) {
			return archiveWorkspace(ctx, sb, id, "snapshot", room, "snapshots.max_bytes", w)
		})
		return aerr
	})
	return sn, aerr
}

// archiveWorkspace writes a tar archive of session id's workspace (its
// own files, not project_files) to w, to purpose it: refused whole
// (too_large) when it would be over room, which is what limit leaves. It
// returns how many entries it left out (FIFOs, sockets, devices).
func archiveWorkspace(ctx context.Context, sb *runtime.Sandbox, id, purpose string, room int64, limit string, w io.Writer) (int, error) {
	var werr error
	skipped, err := sandbox.WorkspaceOf(sb).Archive(ctx, room, func(b []byte) {
		if werr == nil {
			_, werr = w.Write(b)
		}
	})
	switch {
	case errdefs.Is(err, errdefs.TooLarge):
		return 0, errdefs.Errorf(errdefs.TooLarge, "the workspace is too large to %s: %v (room left under %s: %s)", purpose, err, limit, units.ByteSize(room))
	case err != nil:
		return 0, fmt.Errorf("session %s: %w", id, err) // which session's workspace
	case werr != nil:
		return 0, errdefs.Errorf(errdefs.NoSpace, "writing the archive: %v", werr)
	}
	return skipped, nil
}

// ForkRequest says how many sessions a fork makes (0: one), the name of
// the snapshot it takes ("": made up) and the new sessions' ttl (0: the
// default).
type ForkRequest struct {
	Count int
	Name  string
	TTL   time.Duration
}

// Forked is what a fork made: the snapshot it took and the sessions
// started from it.
type Forked struct {
	Snapshot state.Snapshot
	Sessions []state.Session
}

// Fork snapshots a session's workspace and starts req.Count sessions from
// it, each with the session's language, limits, environment, project and
// network: parallel attempts that diverge without touching each other.
func (m *Sessions) Fork(ctx context.Context, id string, req ForkRequest) (*Forked, error) {
	if req.Count == 0 {
		req.Count = 1
	}
	if req.Count < 1 || req.Count > maxForks {
		return nil, errdefs.Errorf(errdefs.Invalid, "count %d: from 1 to %d sessions per fork", req.Count, maxForks)
	}
	src, aerr := m.Get(id)
	if aerr != nil {
		return nil, aerr
	}
	if req.Name == "" {
		req.Name = snapshots.AutoName(id)
	}
	sn, aerr := m.Snapshot(ctx, id, req.Name)
	if aerr != nil {
		return nil, aerr
	}
	limits, network := src.Limits, src.Network
	made := make([]*state.Session, req.Count)
	errs := make([]error, req.Count)
	var wg sync.WaitGroup
	for i := range req.Count {
		wg.Add(1)
		go func() { // each restore streams into a sandbox of its own
			defer wg.Done()
			made[i], errs[i] = m.Create(ctx, Request{Language: src.Language, Limits: &limits, Env: src.Env, TTL: req.TTL,
				IdleTimeout: time.Duration(src.IdleTimeout), Project: src.Project, Network: &network, Secrets: src.Secrets, FromSnapshot: sn.ID})
		}()
	}
	wg.Wait()
	out := &Forked{Snapshot: *sn}
	var failed error
	for i, s := range made {
		if s != nil {
			out.Sessions = append(out.Sessions, *s)
		} else if failed == nil {
			failed = errs[i]
		}
	}
	if failed != nil {
		for _, s := range out.Sessions {
			_ = m.Delete(s.ID)
		}
		return nil, failed
	}
	return out, nil
}
