package sandbox

import (
	"context"

	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/runtime"
)

// A session's lease lasts as long as the session keeps its container:
// Hold makes it, Attach and Restore make it again for a container a
// session kept across a restart or a hibernation, Renew and Reconnect
// replace it, and Remove ends it. Its warm runtimes start with the
// session's environment.

// Expect notes a session of l asked for, whose container Hold will take
// soon: the pool follows how many are asked for at once.
func (p *Provider) Expect(l *languages.Language) {
	if k := p.of[l]; k.pool != nil {
		k.pool.Asked()
	}
}

// Hold leases a container of l, under limits, for a session whose
// environment is env: a warm one, or with mounts (a project's files) a
// new one, as mounts are fixed at create time. Its egress gate lets
// nothing through until the session arms it.
func (p *Provider) Hold(ctx context.Context, l *languages.Language, limits runtime.Limits, mounts []runtime.Mount, env map[string]string) (*Lease, error) {
	sb, err := p.keep(ctx, l, limits, mounts)
	if err != nil {
		return nil, err
	}
	return p.held(l, sb, env), nil
}

// Attach leases again container c of l, which a previous sandboxd made
// for a session whose environment is env.
func (p *Provider) Attach(ctx context.Context, l *languages.Language, c runtime.Container, env map[string]string) (*Lease, error) {
	sb, err := p.attach(ctx, l, c)
	if err != nil {
		return nil, err
	}
	return p.held(l, sb, env), nil
}

// Restore starts l's checkpointed container id again, with its memory,
// and leases it to the session whose environment is env.
func (p *Provider) Restore(ctx context.Context, l *languages.Language, id string, env map[string]string) (*Lease, error) {
	sb, err := p.restore(ctx, l, id)
	if err != nil {
		return nil, err
	}
	return p.held(l, sb, env), nil
}

// Renew is a lease on a new container for the session id, under limits
// and with mounts, in place of this one, which could not be reset: the
// caller removes this one once the new one is the session's.
func (ls *Lease) Renew(ctx context.Context, limits runtime.Limits, mounts []runtime.Mount, session string) (*Lease, error) {
	sb, err := ls.p.renew(ctx, ls.k.Language, limits, mounts, session)
	if err != nil {
		return nil, err
	}
	return ls.p.held(ls.k.Language, sb, ls.env), nil
}

// Reconnect is the lease with a new channel to its sandbox's supervisor,
// whose channel dropped while the sandbox may run on (its runtime's
// control plane restarted).
func (ls *Lease) Reconnect(ctx context.Context) (*Lease, error) {
	sb, err := ls.p.reconnect(ctx, ls.sb)
	if err != nil {
		return nil, err
	}
	return ls.p.held(ls.k.Language, sb, ls.env), nil
}

// Sandbox is the lease's container, nil for no lease.
func (ls *Lease) Sandbox() *runtime.Sandbox {
	if ls == nil {
		return nil
	}
	return ls.sb
}

// Gate is the lease's egress gate; nil when its language has no egress,
// or for no lease.
func (ls *Lease) Gate() *egress.Gate {
	if ls == nil {
		return nil
	}
	return ls.gate
}

// ForJob is a lease on the same container for one job of the session's:
// what that job leaves (Lost) is its own, whatever other jobs run beside
// it.
func (ls *Lease) ForJob() *Lease {
	job := *ls
	job.lost, job.oom = "", false
	return &job
}

// Freeze stops the container's processes where they stand, memory kept,
// until Provider.Thaw; runtime.ErrNoFreeze where its runtime cannot.
func (ls *Lease) Freeze(ctx context.Context) error { return ls.p.freeze(ctx, ls.sb) }

// Checkpoint stops the container with its memory kept in it, for
// Restore; its egress gate closes until then.
func (ls *Lease) Checkpoint(ctx context.Context) error { return ls.p.checkpoint(ctx, ls.sb) }

// Remove ends a session's lease: its container is removed.
func (ls *Lease) Remove() { ls.p.remove(ls.sb) }
