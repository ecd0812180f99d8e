package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Sweeper is a Runtime whose failed removals are tried again, now and
// then, until they succeed: a container or pod whose removal met an engine
// or API server that was away does not outlive its return. Everything
// else goes straight to the runtime it wraps.
type Sweeper struct {
	Runtime
	logger hclog.Logger

	mu        sync.Mutex
	unremoved map[string]bool
	closing   context.Context // done once Close begins: a sweep stops mid-removal
	close     context.CancelFunc
	swept     sync.WaitGroup
}

// Sweep wraps rt, retrying its failed removals every interval until Close.
func Sweep(rt Runtime, every time.Duration, logger hclog.Logger) *Sweeper {
	s := &Sweeper{Runtime: rt, logger: logger, unremoved: map[string]bool{}}
	s.closing, s.close = context.WithCancel(context.Background())
	s.swept.Add(1)
	go s.sweep(every)
	return s
}

// Create implements Runtime: what a failed creation left behind is
// swept like a failed removal.
func (s *Sweeper) Create(ctx context.Context, spec Spec) (*Sandbox, error) {
	sb, err := s.Runtime.Create(ctx, spec)
	var left *LeftError
	if errors.As(err, &left) {
		s.mu.Lock()
		s.unremoved[left.ID] = true
		s.mu.Unlock()
	}
	return sb, err
}

// Remove implements Runtime.
func (s *Sweeper) Remove(ctx context.Context, id string) error {
	err := s.Runtime.Remove(ctx, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.unremoved[id] = true
	} else {
		delete(s.unremoved, id)
	}
	return err
}

// Close implements Runtime: the sweep ends, mid-removal if need be, before
// the runtime closes.
func (s *Sweeper) Close() error {
	s.close()
	s.swept.Wait()
	return s.Runtime.Close()
}

func (s *Sweeper) sweep(every time.Duration) {
	defer s.swept.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.closing.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		ids := make([]string, 0, len(s.unremoved))
		for id := range s.unremoved {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		for _, id := range ids {
			if err := s.Remove(s.closing, id); err == nil {
				s.logger.Info("removed a sandbox whose removal had failed", "container_id", ShortID(id))
			}
		}
	}
}

// Pull implements Puller, as the runtime swept does.
func (s *Sweeper) Pull(ctx context.Context, runtime, language, ref string, progress func(line string)) ([]string, error) {
	return Pulls(s.Runtime).Pull(ctx, runtime, language, ref, progress)
}

// CanCheckpoint implements Checkpointer, as the runtime swept can.
func (s *Sweeper) CanCheckpoint(ctx context.Context, ociRuntime string) bool {
	return Checkpoints(s.Runtime).CanCheckpoint(ctx, ociRuntime)
}

// Checkpoint implements Checkpointer.
func (s *Sweeper) Checkpoint(ctx context.Context, id string) error {
	return Checkpoints(s.Runtime).Checkpoint(ctx, id)
}

// Restore implements Checkpointer.
func (s *Sweeper) Restore(ctx context.Context, id string) error {
	return Checkpoints(s.Runtime).Restore(ctx, id)
}

// Freeze implements Freezer, as the runtime swept can.
func (s *Sweeper) Freeze(ctx context.Context, id string) error {
	return Freezes(s.Runtime).Freeze(ctx, id)
}

// Thaw implements Freezer.
func (s *Sweeper) Thaw(ctx context.Context, id string) error {
	return Freezes(s.Runtime).Thaw(ctx, id)
}
