// Package fake is a runtime.Runtime with no engine, for unit tests of what
// lies above the runtime (pools, reuse, sessions, the request path): each
// sandbox is the real supervisor (runtime/supervisor/sandboxinit) served
// in the test's own process over pipes, with directories of the test's as
// its workspace and /tmp, and its programs host processes of the test's
// user. It isolates nothing: tests give it only their own programs.
package fake

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit"
)

// Runtime is the fake runtime. Its zero value is not usable: see New.
type Runtime struct {
	dir string

	mu        sync.Mutex
	next      int
	sandboxes map[string]*sandbox
	images    map[string]runtime.Image
	down      error // set by Stop: every call fails with it

	creates int // Create calls that made a sandbox
	// Builds, when set, holds every image build until it receives (or is
	// closed): a test sees what happens while an image builds.
	Builds chan struct{}
	// Freezes makes it a runtime.Freezer that records which sandboxes are
	// frozen (Frozen) but stops nothing: for the bookkeeping of freezing.
	Freezes bool
	// OnFreeze, when set, is called by each Freeze once it has paused.
	OnFreeze func(id string)
	onCreate func(spec runtime.Spec)
}

// OnCreate has each Create call f with its spec first: a test holds a
// creation there, or tells spec.Waiting what it waits on.
func (r *Runtime) OnCreate(f func(spec runtime.Spec)) {
	r.mu.Lock()
	r.onCreate = f
	r.mu.Unlock()
}

type sandbox struct {
	c      runtime.Container
	dir    string
	limits runtime.Limits
	stdin  io.Closer // the supervisor's: closing it ends the supervisor
	served chan struct{}
}

// New makes a fake runtime keeping its sandboxes under dir, where every
// image in images is present.
func New(dir string, images ...string) *Runtime {
	r := &Runtime{dir: dir, sandboxes: map[string]*sandbox{}, images: map[string]runtime.Image{}}
	for _, ref := range images {
		r.AddImage(ref)
	}
	return r
}

// Created is how many sandboxes Create has made.
func (r *Runtime) Created() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.creates
}

// AddImage makes ref present.
func (r *Runtime) AddImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref] = runtime.Image{ID: "sha256:" + strconv.Itoa(len(r.images)+1) + "-" + ref}
}

// Stop makes the engine unreachable until Start (a sandbox's supervisor
// goes on answering, as a container outlives its engine).
func (r *Runtime) Stop() {
	r.setDown(fmt.Errorf("%w: the fake engine is stopped", runtime.ErrUnavailable))
}

// Start makes a stopped engine answer again.
func (r *Runtime) Start() { r.setDown(nil) }

func (r *Runtime) setDown(err error) {
	r.mu.Lock()
	r.down = err
	r.mu.Unlock()
}

func (r *Runtime) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

// Create implements runtime.Runtime: a supervisor served in this process.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if _, err := r.Image(ctx, spec.Image); err != nil {
		return nil, err
	}
	r.mu.Lock()
	onCreate := r.onCreate
	r.mu.Unlock()
	if onCreate != nil {
		onCreate(spec)
	}
	r.mu.Lock()
	r.next++
	id := fmt.Sprintf("fake%06d", r.next)
	r.mu.Unlock()
	dir := filepath.Join(r.dir, id)
	at := sandboxinit.Sandbox{Workspace: filepath.Join(dir, "workspace"), Tmp: filepath.Join(dir, "tmp")}
	// The modes a container's have, which a reset restores.
	for d, mode := range map[string]os.FileMode{at.Workspace: 0o755, at.Tmp: 0o777 | os.ModeSticky} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chmod(d, mode); err != nil {
			return nil, err
		}
	}
	at.EndAll = func() int { return endUnder(at.Workspace, at.Tmp) }
	toSupervisor, stdin := io.Pipe()
	fromSupervisor, stdout := io.Pipe()
	sb := &sandbox{dir: dir, limits: spec.Limits, stdin: stdin, served: make(chan struct{}), c: runtime.Container{
		ID: id, Labels: labels(spec), Created: time.Now(), Running: true, Language: spec.Language,
	}}
	go func() {
		err := sandboxinit.Serve(toSupervisor, stdout, at)
		stdout.CloseWithError(fmt.Errorf("the supervisor ended: %v", err))
		close(sb.served)
	}()
	s := &runtime.Sandbox{ID: id, Language: spec.Language, Labels: sb.c.Labels, Created: sb.c.Created,
		Conn: supervisor.NewConn(fromSupervisor, stdin), OOMKilled: func(context.Context) bool { return false }}
	if err := s.Hello(ctx); err != nil {
		r.end(sb)
		return nil, fmt.Errorf("sandbox supervisor did not start: %w", err)
	}
	r.mu.Lock()
	r.sandboxes[id] = sb
	r.creates++
	r.mu.Unlock()
	return s, nil
}

func labels(spec runtime.Spec) map[string]string {
	l := map[string]string{runtime.LabelLanguage: spec.Language}
	for k, v := range spec.Labels {
		l[k] = v
	}
	return l
}

// Attach implements runtime.Runtime: a fake sandbox lives and dies with
// its connection, so there is nothing to attach to again.
func (r *Runtime) Attach(ctx context.Context, c runtime.Container) (*runtime.Sandbox, error) {
	return nil, fmt.Errorf("%w: a fake sandbox cannot be attached to again", runtime.ErrUnavailable)
}

// Update implements runtime.Runtime: it records the limits.
func (r *Runtime) Update(ctx context.Context, id string, limits runtime.Limits) error {
	if err := r.check(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[id]
	if !ok {
		return fmt.Errorf("no sandbox %s", id)
	}
	sb.limits = limits
	return nil
}

// Limits are the limits sandbox id has now.
func (r *Runtime) Limits(id string) runtime.Limits {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sb, ok := r.sandboxes[id]; ok {
		return sb.limits
	}
	return runtime.Limits{}
}

// Remove implements runtime.Runtime: the supervisor ends what it started
// and its directories go.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	if err := r.check(); err != nil {
		return err
	}
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	delete(r.sandboxes, id)
	r.mu.Unlock()
	if ok {
		r.end(sb)
	}
	return nil
}

func (r *Runtime) end(sb *sandbox) {
	sb.stdin.Close()
	<-sb.served
	_ = os.RemoveAll(sb.dir)
}

// List implements runtime.Runtime.
func (r *Runtime) List(ctx context.Context) ([]runtime.Container, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]runtime.Container, 0, len(r.sandboxes))
	for _, sb := range r.sandboxes {
		out = append(out, sb.c)
	}
	return out, nil
}

// Ping implements runtime.Runtime.
func (r *Runtime) Ping(ctx context.Context) (runtime.EngineInfo, error) {
	if err := r.check(); err != nil {
		return runtime.EngineInfo{}, err
	}
	return runtime.EngineInfo{Version: "fake", APIVersion: "fake", Runtime: "fake"}, nil
}

// Image implements runtime.Runtime.
func (r *Runtime) Image(ctx context.Context, ref string) (runtime.Image, error) {
	if err := r.check(); err != nil {
		return runtime.Image{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	img, ok := r.images[ref]
	if !ok {
		return runtime.Image{}, fmt.Errorf("%w: %s", runtime.ErrImageMissing, ref)
	}
	return img, nil
}

// BuildImage implements runtime.Runtime: the image is there at once.
func (r *Runtime) BuildImage(ctx context.Context, b runtime.ImageBuild, progress func(line string)) error {
	if err := r.check(); err != nil {
		return err
	}
	progress("Step 1/1 : FROM fake")
	if r.Builds != nil {
		select {
		case <-r.Builds:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.AddImage(b.Tag)
	return nil
}

// Close implements runtime.Runtime: every sandbox ends.
func (r *Runtime) Close() error {
	r.mu.Lock()
	all := r.sandboxes
	r.sandboxes = map[string]*sandbox{}
	r.mu.Unlock()
	for _, sb := range all {
		r.end(sb)
	}
	return nil
}

// endUnder kills every process whose working directory is in one of dirs
// (a fake sandbox's programs: it has no PID namespace to end) and says
// how many are left after a second.
func endUnder(dirs ...string) int {
	find := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
			if err != nil {
				continue
			}
			for _, d := range dirs {
				if cwd == d || strings.HasPrefix(cwd, d+"/") {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		pids := find()
		if len(pids) == 0 || time.Now().After(deadline) {
			return len(pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

var _ runtime.Runtime = (*Runtime)(nil)

// Freeze implements runtime.Freezer when Freezes is set: it marks the
// sandbox paused, then calls OnFreeze, if set (the engine has paused it
// and not yet answered).
func (r *Runtime) Freeze(ctx context.Context, id string) error {
	err := r.setPaused(id, true)
	r.mu.Lock()
	onFreeze := r.OnFreeze
	r.mu.Unlock()
	if err == nil && onFreeze != nil {
		onFreeze(id)
	}
	return err
}

// Thaw implements runtime.Freezer when Freezes is set.
func (r *Runtime) Thaw(ctx context.Context, id string) error { return r.setPaused(id, false) }

// Frozen says whether sandbox id is frozen.
func (r *Runtime) Frozen(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[id]
	return ok && sb.c.Paused
}

func (r *Runtime) setPaused(id string, paused bool) error {
	if err := r.check(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.Freezes {
		return runtime.ErrNoFreeze
	}
	sb, ok := r.sandboxes[id]
	if !ok {
		return fmt.Errorf("no sandbox %s", id)
	}
	sb.c.Paused = paused
	return nil
}
