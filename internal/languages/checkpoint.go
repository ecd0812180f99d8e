package languages

import (
	"context"
	"fmt"
	"slices"

	"github.com/sandboxd/sandboxd/runtime"
)

// CanCheckpoint says whether l's sandboxes can be hibernated with their
// memory (see runtime.Checkpointer).
func (r *Registry) CanCheckpoint(ctx context.Context, l *Language) bool {
	return runtime.Checkpoints(r.rt).CanCheckpoint(ctx, l.Config.Runtime)
}

// hibernation is what l's hibernated sessions keep (Entry.Hibernation).
func (r *Registry) hibernation(ctx context.Context, l *Language) string {
	if r.cfg.Sessions.KeepMemory && r.CanCheckpoint(ctx, l) {
		return "memory"
	}
	return "workspace"
}

// Checkpoint stops sb with its memory kept in its container; its egress
// gate closes until Restore.
func (r *Registry) Checkpoint(ctx context.Context, sb *runtime.Sandbox) error {
	if err := runtime.Checkpoints(r.rt).Checkpoint(ctx, sb.ID); err != nil {
		return err
	}
	r.closeGate(sb.Labels)
	return nil
}

// Restore starts l's checkpointed container id again, with its memory,
// and connects to it. Its egress socket is made again first (the
// container's mount of it must find it), letting nothing through until
// the caller arms its gate.
func (r *Registry) Restore(ctx context.Context, l *Language, id string) (*runtime.Sandbox, error) {
	list, err := r.rt.List(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(c runtime.Container) bool { return c.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("container %s is gone", runtime.ShortID(id))
	}
	c := list[i]
	return r.withGate(l, c, func() (*runtime.Sandbox, error) {
		if err := runtime.Checkpoints(r.rt).Restore(ctx, id); err != nil {
			return nil, err
		}
		c.Running = true
		return r.rt.Attach(ctx, c)
	})
}

// RemoveStopped removes a container of l that no sandbox stands for (a
// checkpointed one).
func (r *Registry) RemoveStopped(l *Language, id string) {
	r.Remove(&runtime.Sandbox{ID: id, Language: l.Name()})
}

// Freeze stops sb's processes where they stand, memory kept, until Thaw;
// runtime.ErrNoFreeze where its runtime cannot.
func (r *Registry) Freeze(ctx context.Context, sb *runtime.Sandbox) error {
	return runtime.Freezes(r.rt).Freeze(ctx, sb.ID)
}

// Thaw lets the processes of frozen container id run again.
func (r *Registry) Thaw(ctx context.Context, id string) error {
	return runtime.Freezes(r.rt).Thaw(ctx, id)
}
