package sandbox

import (
	"context"
	"fmt"
	"slices"

	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/runtime"
)

// CanCheckpoint says whether l's sandboxes can be hibernated with their
// memory (see runtime.Checkpointer).
func (p *Provider) CanCheckpoint(ctx context.Context, lang *languages.Language) bool {
	return runtime.Checkpoints(p.rt).CanCheckpoint(ctx, lang.Config.Runtime)
}

// hibernation is what l's hibernated sessions keep (Entry.Hibernation).
func (p *Provider) hibernation(ctx context.Context, l *kind) string {
	if p.cfg.Sessions.KeepMemory && p.CanCheckpoint(ctx, l.Language) {
		return "memory"
	}
	return "workspace"
}

// checkpoint stops sb with its memory kept in its container; its egress
// gate closes until Restore.
func (p *Provider) checkpoint(ctx context.Context, sb *runtime.Sandbox) error {
	if err := runtime.Checkpoints(p.rt).Checkpoint(ctx, sb.ID); err != nil {
		return err
	}
	p.closeGate(sb.Labels)
	return nil
}

// restore starts l's checkpointed container id again, with its memory,
// and connects to it. Its egress socket is made again first (the
// container's mount of it must find it), letting nothing through until
// the caller arms its gate.
func (p *Provider) restore(ctx context.Context, lang *languages.Language, id string) (*runtime.Sandbox, error) {
	l := p.of[lang]
	list, err := p.rt.List(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(c runtime.Container) bool { return c.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("container %s is gone", runtime.ShortID(id))
	}
	c := list[i]
	return p.withGate(l, c, func() (*runtime.Sandbox, error) {
		if err := runtime.Checkpoints(p.rt).Restore(ctx, id); err != nil {
			return nil, err
		}
		c.Running = true
		return p.rt.Attach(ctx, c)
	})
}

// RemoveStopped removes a container of l that no sandbox stands for (a
// checkpointed one).
func (p *Provider) RemoveStopped(lang *languages.Language, id string) {
	l := p.of[lang]
	p.remove(&runtime.Sandbox{ID: id, Language: l.Name()})
}

// freeze stops sb's processes where they stand, memory kept, until Thaw;
// runtime.ErrNoFreeze where its runtime cannot.
func (p *Provider) freeze(ctx context.Context, sb *runtime.Sandbox) error {
	return runtime.Freezes(p.rt).Freeze(ctx, sb.ID)
}

// Thaw lets the processes of frozen container id run again.
func (p *Provider) Thaw(ctx context.Context, id string) error {
	return runtime.Freezes(p.rt).Thaw(ctx, id)
}
