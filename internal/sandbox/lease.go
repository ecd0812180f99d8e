package sandbox

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Lease is a container held for a while, with its egress gate: one
// run's, from Acquire until Release, or a session's, for as long as the
// session keeps it (Hold). Its Run runs jobs in it.
type Lease struct {
	p    *Provider
	k    *kind
	sb   *runtime.Sandbox
	gate *egress.Gate // nil: its language has no egress
	// oneShot: a run's lease, its container fresh for it and recycled
	// (or removed) after; otherwise a session's, whose processes outlive
	// each job.
	oneShot bool
	release func(clean bool)
	env     map[string]string // a session's environment, which its warm runtimes start with
	// QueueReason is the last thing a run waiting for the container was
	// told it waited on ("" when it did not wait long).
	QueueReason string
	// What the last job left: why the container cannot be trusted after
	// it ("" when it can), and whether the kernel ended it for memory.
	lost string
	oom  bool
}

// Ask is what a run asks of its container: its language, its limits,
// what its egress may reach and the secrets it may use there.
type Ask struct {
	Language *languages.Language
	Limits   runtime.Limits
	Allow    egress.List
	Secrets  []egress.Secret
	// Tell, if set, is told what the run waits on when it waits for a
	// container (see tellQueue).
	Tell func(why string)
}

// Acquire leases a fresh container for one run, its gate set to what
// ask allows, with its secrets. Release gives it back: a container whose
// run ended cleanly (the program and all it started ended, the sandbox
// intact) is recycled for another run (see recycle); any other is
// removed.
func (p *Provider) Acquire(ctx context.Context, ask Ask) (*Lease, error) {
	k := p.of[ask.Language]
	waited := tellQueue(k, ask.Tell)
	sb, release, err := p.take(ctx, k, ask.Limits)
	ls := &Lease{p: p, k: k, sb: sb, oneShot: true, release: release, QueueReason: waited()}
	if err != nil {
		return nil, err
	}
	if ls.gate = p.gate(sb); ls.gate != nil {
		ls.gate.Allow(ask.Allow)
		ls.gate.SetSecrets(ask.Secrets) // none: nothing an earlier run had
	}
	return ls, nil
}

// take takes a container of l for one run, under limits, and how to give
// it back.
func (p *Provider) take(ctx context.Context, l *kind, limits runtime.Limits) (sb *runtime.Sandbox, release func(clean bool), err error) {
	if err := p.ready(ctx, l); err != nil {
		return nil, nil, err
	}
	if limits.Resized(l.Limits()) && l.fixedLimits.Load() {
		sb, err = p.create(ctx, l, limits, nil, "")
	} else if sb, err = l.pool.Acquire(ctx); err == nil {
		warm := sb
		if sb, err = p.fit(ctx, l, warm, limits, func() { l.pool.Release(warm) }); sb == warm {
			lowered := limits.Resized(l.Limits())
			return sb, func(clean bool) {
				if !clean {
					p.metrics.Recycled(l.Name(), "run")
					l.pool.Release(sb)
					return
				}
				l.pool.Recycle(sb, func(ctx context.Context, sb *runtime.Sandbox) bool {
					return p.recycle(ctx, l, sb, lowered)
				})
			}, nil
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return sb, func(bool) { p.remove(sb) }, nil
}

// held is a lease on the container sb a session of l keeps, whose warm
// runtimes start with env. The session gives it back itself.
func (p *Provider) held(l *languages.Language, sb *runtime.Sandbox, env map[string]string) *Lease {
	return &Lease{p: p, k: p.of[l], sb: sb, gate: p.gate(sb), env: env}
}

// Container is the short id of the lease's container.
func (ls *Lease) Container() string { return runtime.ShortID(ls.sb.ID) }

// Lost says why the container cannot be trusted after the last job: a
// kill at the deadline that left processes running, or a sandbox that
// died; "" when it is intact.
func (ls *Lease) Lost() string { return ls.lost }

// Release ends a run's lease: its container is recycled when the run
// ended cleanly, and retired otherwise. A session's lease (Hold) is the
// session's to end: Release leaves it be.
func (ls *Lease) Release() {
	if !ls.oneShot {
		return
	}
	if ls.gate != nil {
		ls.gate.SetSecrets(nil)
	}
	ls.release(ls.lost == "" && !ls.oom)
}

// queueTellAfter is how long a run waits for a container before it is
// told what it waits on.
const queueTellAfter = time.Second

// tellQueue follows what a run queued for one of l's containers waits on:
// once it has waited queueTellAfter and each time that changes, tell (if
// set) is told. The returned func ends the watch, before any output of the
// program, and says the last thing told.
func tellQueue(l *kind, tell func(string)) (stop func() string) {
	done, ended := make(chan struct{}), make(chan string, 1)
	go func() {
		told := ""
		defer func() { ended <- told }()
		tick := time.NewTicker(queueTellAfter / 4)
		defer tick.Stop()
		began := time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if why := l.pool.WaitingFor(); why != "" && why != told && time.Since(began) >= queueTellAfter {
				told = why
				if tell != nil {
					tell(why)
				}
			}
		}
	}()
	return func() string {
		close(done)
		return <-ended
	}
}

// recycleTimeout bounds making a container fresh after a run.
const recycleTimeout = 10 * time.Second

// recycle makes sb, which has just served a run cleanly, fresh for the
// next: its limits back to the language's if the run lowered them, every
// process ended and every writable place emptied, then checked against
// what the supervisor saw when the container was new, and the warm
// runtimes started again. It says whether sb may serve another run; one
// that has served max_runs, or that anything of this failed for, is
// retired.
func (p *Provider) recycle(ctx context.Context, l *kind, sb *runtime.Sandbox, lowered bool) bool {
	ctx, cancel := context.WithTimeout(ctx, recycleTimeout)
	defer cancel()
	sb.Runs++
	retire := func(why string, err error) bool {
		p.metrics.Recycled(l.Name(), why)
		if err != nil {
			p.log.Warn("a container could not be made fresh after a run; it is retired", "language", l.Name(),
				"container_id", runtime.ShortID(sb.ID), "runs", sb.Runs, "error", err)
		}
		return false
	}
	if gate := p.gate(sb); gate != nil {
		gate.Allow(nil)
	}
	switch {
	case sb.Runs >= l.Config.Pool.MaxRuns:
		return retire("max_runs", nil)
	case !sb.Alive():
		return retire("gone", nil)
	}
	if lowered {
		if err := p.rt.Update(ctx, sb.ID, l.Limits()); err != nil {
			return retire("limits", err)
		}
	}
	// The warm runtimes start again in the same round trip.
	var warms []supervisor.WarmRequest
	if l.Warm() {
		warms = p.poolWarms(l)
	}
	res, err := sb.File(ctx, supervisor.OpRecycle, supervisor.FileRequest{Path: ".", Warm: warms}, nil, nil)
	switch {
	case err != nil:
		return retire("gone", err)
	case res.Error != "":
		return retire("not_fresh", errors.New(res.Error))
	}
	for i := range warms {
		warm := supervisor.FileResult{Error: "the supervisor did not say how the warm runtime started"}
		if len(res.WarmErrors) == len(warms) {
			warm.Error = res.WarmErrors[i]
		}
		p.warmed(l, sb, warm, nil)
	}
	p.metrics.Recycled(l.Name(), "kept")
	return true
}

// SecretEnvPrefix names the variable that holds a secret's placeholder in
// a sandbox: SANDBOXD_SECRET_<name>.
const SecretEnvPrefix = "SANDBOXD_SECRET_"

// Secrets are the secret blocks a request names, each with a fresh
// placeholder. They go out through the egress proxy, so a language
// without egress has none to give.
func (p *Provider) Secrets(lang *languages.Language, names []string) ([]egress.Secret, error) {
	l := p.of[lang]
	if len(names) == 0 {
		return nil, nil
	}
	if len(l.Egress()) == 0 {
		return nil, errdefs.Errorf(errdefs.Invalid, "secrets: language %s has no egress, so no secret could be used; an operator allows hosts in its network block", l.Name())
	}
	var out []egress.Secret
	for _, name := range names {
		s, ok := p.cfg.Secrets[name]
		if !ok {
			return nil, errdefs.Errorf(errdefs.Invalid, "secrets: no secret %q; sandboxd.hcl defines %s", name, definedSecrets(p.cfg.Secrets))
		}
		out = append(out, egress.Secret{Name: name, Value: s.Value, Hosts: s.Hosts, Header: s.Header, Query: s.Query, Placeholder: egress.Placeholder(name)})
	}
	return out, nil
}

// StoredSecrets are a stored session's secrets again: each name still
// defined, with the placeholder its environment holds.
func (p *Provider) StoredSecrets(names []string, env map[string]string) []egress.Secret {
	var out []egress.Secret
	for _, name := range names {
		if s, ok := p.cfg.Secrets[name]; ok && env[SecretEnvPrefix+name] != "" {
			out = append(out, egress.Secret{Name: name, Value: s.Value, Hosts: s.Hosts, Header: s.Header, Query: s.Query, Placeholder: env[SecretEnvPrefix+name]})
		}
	}
	return out
}

// SecretEnv is the variables that hold secrets' placeholders.
func SecretEnv(secrets []egress.Secret) map[string]string {
	env := map[string]string{}
	for _, s := range secrets {
		env[SecretEnvPrefix+s.Name] = s.Placeholder
	}
	return env
}

func definedSecrets(secrets map[string]config.Secret) string {
	if len(secrets) == 0 {
		return "none (a secret block names one)"
	}
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
