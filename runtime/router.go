package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Router is the Runtime of a daemon with more than one: a sandbox is
// created by the runtime its spec names (a language's runtime = "...",
// when Named has it; the Default otherwise), and everything done to it
// afterwards goes to the runtime that created or listed it. Images are
// the Default's: it builds and inspects them, and the others take theirs
// from a registry it pushed to.
type Router struct {
	Default Runtime
	Named   map[string]Runtime

	mu    sync.Mutex
	owner map[string]Runtime // by sandbox id
}

var _ Runtime = (*Router)(nil)

func (r *Router) claim(id string, rt Runtime) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owner == nil {
		r.owner = map[string]Runtime{}
	}
	r.owner[id] = rt
}

func (r *Router) of(id string) Runtime {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt, ok := r.owner[id]; ok {
		return rt
	}
	return r.Default
}

// Create implements Runtime.
func (r *Router) Create(ctx context.Context, spec Spec) (*Sandbox, error) {
	rt := r.Default
	if named, ok := r.Named[spec.Runtime]; ok {
		rt, spec.Runtime = named, "" // the name is the router's, not an OCI runtime's
	}
	sb, err := rt.Create(ctx, spec)
	if err == nil {
		r.claim(sb.ID, rt)
	}
	return sb, err
}

// Attach implements Runtime.
func (r *Router) Attach(ctx context.Context, c Container) (*Sandbox, error) {
	return r.of(c.ID).Attach(ctx, c)
}

// Update implements Runtime.
func (r *Router) Update(ctx context.Context, id string, limits Limits) error {
	return r.of(id).Update(ctx, id, limits)
}

// Remove implements Runtime.
func (r *Router) Remove(ctx context.Context, id string) error {
	err := r.of(id).Remove(ctx, id)
	if err == nil {
		r.mu.Lock()
		delete(r.owner, id)
		r.mu.Unlock()
	}
	return err
}

// List implements Runtime: every runtime's sandboxes; one that cannot
// answer makes it fail, so that nothing is taken for gone.
func (r *Router) List(ctx context.Context) ([]Container, error) {
	var all []Container
	var errs []error
	for _, rt := range r.runtimes() {
		list, err := rt.List(ctx)
		errs = append(errs, err)
		for _, c := range list {
			r.claim(c.ID, rt)
		}
		all = append(all, list...)
	}
	return all, errors.Join(errs...)
}

// Ping implements Runtime: the Default's engine, which every daemon needs,
// described; an error when any runtime cannot be reached, as some
// languages cannot run then.
func (r *Router) Ping(ctx context.Context) (EngineInfo, error) {
	info, err := r.Default.Ping(ctx)
	if err != nil {
		return info, err
	}
	for name, rt := range r.Named {
		if _, err := rt.Ping(ctx); err != nil {
			return info, fmt.Errorf("runtime %q: %w", name, err)
		}
	}
	return info, nil
}

// Image implements Runtime.
func (r *Router) Image(ctx context.Context, ref string) (Image, error) {
	return r.Default.Image(ctx, ref)
}

// BuildImage implements Runtime.
func (r *Router) BuildImage(ctx context.Context, b ImageBuild, progress func(line string)) error {
	return r.Default.BuildImage(ctx, b, progress)
}

// Close implements Runtime.
func (r *Router) Close() error {
	var errs []error
	for _, rt := range r.runtimes() {
		errs = append(errs, rt.Close())
	}
	return errors.Join(errs...)
}

func (r *Router) runtimes() []Runtime {
	out := []Runtime{r.Default}
	for _, rt := range r.Named {
		out = append(out, rt)
	}
	return out
}

var _ Puller = (*Router)(nil)

// Pull implements Puller: the runtime named pulls, if it is one that
// does; the Default's images are where it runs them already.
func (r *Router) Pull(ctx context.Context, runtime, language, ref string, progress func(line string)) ([]string, error) {
	if named, ok := r.Named[runtime]; ok {
		return Pulls(named).Pull(ctx, "", language, ref, progress)
	}
	return nil, nil
}

var _ Checkpointer = (*Router)(nil)

// CanCheckpoint implements Checkpointer: the runtime a language of that
// name runs under says.
func (r *Router) CanCheckpoint(ctx context.Context, ociRuntime string) bool {
	rt := r.Default
	if named, ok := r.Named[ociRuntime]; ok {
		rt, ociRuntime = named, ""
	}
	return Checkpoints(rt).CanCheckpoint(ctx, ociRuntime)
}

// Checkpoint implements Checkpointer.
func (r *Router) Checkpoint(ctx context.Context, id string) error {
	return Checkpoints(r.of(id)).Checkpoint(ctx, id)
}

// Restore implements Checkpointer.
func (r *Router) Restore(ctx context.Context, id string) error {
	return Checkpoints(r.of(id)).Restore(ctx, id)
}

var _ Freezer = (*Router)(nil)

// Freeze implements Freezer.
func (r *Router) Freeze(ctx context.Context, id string) error {
	return Freezes(r.of(id)).Freeze(ctx, id)
}

// Thaw implements Freezer.
func (r *Router) Thaw(ctx context.Context, id string) error {
	return Freezes(r.of(id)).Thaw(ctx, id)
}
