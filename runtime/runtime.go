// Package runtime is sandboxd's view of a container engine: create a
// hardened sandbox container whose supervisor answers, remove it, list the
// ones sandboxd owns. The Docker implementation lives in runtime/docker; the
// conversation with the supervisor inside lives in runtime/supervisor.
//
// This package owns container lifecycles and labels. It knows nothing of
// languages, pools or requests.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"golang.org/x/sync/errgroup"
)

// Labels every sandbox container carries. They are set after any operator
// labels, so they cannot be overridden.
const (
	LabelManaged  = "io.sandboxd.managed"
	LabelInstance = "io.sandboxd.instance" // which sandboxd (state dir) owns it
	LabelLanguage = "io.sandboxd.language"
	LabelSession  = "io.sandboxd.session"
	LabelUID      = "io.sandboxd.uid"    // the host uid (and gid) its processes run as
	LabelEgress   = "io.sandboxd.egress" // the key of its egress proxy socket, when it has one
)

// Fixed places inside every sandbox.
const (
	Workspace      = "/workspace"
	SupervisorPath = "/.sandboxd/init"
)

// ImageWorkspaceLabel, on an image, names the directory its workspace's
// file system is mounted at instead of Workspace, which the image links
// there: E2B's sandboxes work in /home/user, and its clients expect
// getcwd() to say so.
const ImageWorkspaceLabel = "io.sandboxd.workspace"

// WorkspaceMount is where an image with labels wants its workspace
// mounted: Workspace, or the directory its ImageWorkspaceLabel names (an
// absolute, clean path below /home). An error says why that label
// cannot be used.
func WorkspaceMount(labels map[string]string) (string, error) {
	at, ok := labels[ImageWorkspaceLabel]
	if !ok || at == Workspace {
		return Workspace, nil
	}
	if !path.IsAbs(at) || path.Clean(at) != at || !strings.HasPrefix(at, "/home/") {
		return "", fmt.Errorf("label %s=%q: the workspace's directory is an absolute, clean path below /home (such as /home/user), to which the image links %s", ImageWorkspaceLabel, at, Workspace)
	}
	return at, nil
}

// ErrImageMissing means the sandbox image is not on the engine.
var ErrImageMissing = errdefs.New(errdefs.ImageMissing, "image not found")

// ErrFixedLimits means the container's OCI runtime cannot change the limits
// of a running container (gVisor's runsc cannot).
var ErrFixedLimits = errors.New("the OCI runtime cannot change a running container's limits")

// ErrUnavailable means the engine could not be reached.
var ErrUnavailable = errdefs.New(errdefs.RuntimeUnavailable, "container engine unavailable")

// LeftError is a failed Create's error when what it had made could not be
// removed either (the engine went away halfway): ID is for a later sweep.
type LeftError struct {
	ID  string
	Err error
}

func (e *LeftError) Error() string { return e.Err.Error() }
func (e *LeftError) Unwrap() error { return e.Err }

// RemoveOnFailure is a Create's cleanup: when *err is set it removes id,
// and when that fails too, it makes *err a LeftError.
func RemoveOnFailure(err *error, id string, remove func(context.Context, string) error) {
	if *err == nil {
		return
	}
	if rerr := remove(context.Background(), id); rerr != nil {
		*err = &LeftError{ID: id, Err: *err}
	}
}

// Limits are the resources of a sandbox and of what runs in it: the one
// limits type inside the daemon. The configuration's ceilings, what a
// request asked for and what an execution runs with are all Limits; the
// wire (api.Limits) and the policy contract have their own.
type Limits struct {
	Timeout time.Duration // an execution's deadline
	Memory  int64         // bytes, no swap on top
	CPUs    float64       // cores
	Pids    int64
	// Disk is the size of /workspace and of /tmp each. Both are tmpfs:
	// the host disk is never touched, a full workspace is ENOSPC inside,
	// and the files are in RAM, so they count toward Memory (the kernel
	// charges tmpfs pages to the container's memory cgroup).
	Disk        int64
	Network     string // "none": the only mode today
	OutputLimit int64  // bytes per stream an execution may print
}

// Resized reports whether a container made with the limits from needs
// its resources (memory, CPUs, pids) updated to run with l.
func (l Limits) Resized(from Limits) bool {
	return l.Memory != from.Memory || l.CPUs != from.CPUs || l.Pids != from.Pids
}

// EnvList turns environment maps into KEY=VALUE pairs, later maps winning.
func EnvList(maps ...map[string]string) []string {
	var env []string
	for _, m := range maps {
		for k, v := range m {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// ShortID is a container id as people read it: its first 12 characters.
func ShortID(id string) string { return id[:min(12, len(id))] }

// Mount is a host directory bind-mounted into a sandbox.
type Mount struct {
	Source   string
	Target   string
	ReadOnly bool
}

// Spec describes a sandbox to create.
type Spec struct {
	Language string
	Image    string
	Runtime  string // OCI runtime; empty: the engine runtime's default
	Limits   Limits
	Env      []string          // KEY=VALUE set at create time
	Labels   map[string]string // extra labels (operator's, session id)
	Mounts   []Mount
	// WorkspaceAt is where the workspace's file system is mounted: "" (or
	// Workspace) for Workspace, or the directory the image links
	// Workspace to (see WorkspaceMount).
	WorkspaceAt string
	// Waiting, if set, is told what a slow start waits on outside
	// sandboxd (a node pulling the image, a pod no node can take yet),
	// each time that changes.
	Waiting func(why string)
}

// Sandbox is a started container whose supervisor answered hello.
type Sandbox struct {
	ID       string
	Language string
	Labels   map[string]string
	Created  time.Time
	// Runs counts the one-shot runs it served (each in a sandbox made
	// fresh after the one before); its pool's owner keeps the count.
	Runs int
	*supervisor.Conn
	// OOMKilled reports, once the supervisor is gone, whether the kernel
	// ended the container for memory (under gVisor its kernel dies with
	// the program that filled the memory).
	OOMKilled func(context.Context) bool
}

// Session is the session id the sandbox's label carries: every warm
// container is created with the id it will have if a session takes it.
func (s *Sandbox) Session() string { return s.Labels[LabelSession] }

// Alive reports whether the supervisor still answers.
func (s *Sandbox) Alive() bool {
	select {
	case <-s.Done():
		return false
	default:
		return true
	}
}

// Container is a sandbox container as the engine lists it.
type Container struct {
	ID       string
	Labels   map[string]string
	Created  time.Time
	Running  bool
	Paused   bool // frozen (Freezer), and running once thawed
	Language string
}

// Image is an image as the engine describes it.
type Image struct {
	ID     string
	User   string // the user its processes run as, if set
	Labels map[string]string
}

// ImageBuild describes an image to build: a directory with a Dockerfile,
// or, when Dir is empty, Files (a "Dockerfile" among them).
type ImageBuild struct {
	Tag    string
	Dir    string
	Files  map[string][]byte
	Labels map[string]string

	Executables []string // of Files: packed executable
	Push        bool     // then push Tag to the registry it names
}

// EngineInfo describes the engine for health reports.
type EngineInfo struct {
	Version    string `json:"version"`
	APIVersion string `json:"api_version"`
	Runtime    string `json:"runtime"`
}

// Runtime creates and removes sandbox containers.
type Runtime interface {
	// Create starts a sandbox and returns once its supervisor answers.
	Create(ctx context.Context, spec Spec) (*Sandbox, error)
	// Attach connects again to the supervisor of a running sandbox (one a
	// previous sandboxd process created) and returns once it answers.
	Attach(ctx context.Context, c Container) (*Sandbox, error)
	// Update lowers a running sandbox's memory, cpu and pids limits (a
	// request asked for less than the warm container has).
	Update(ctx context.Context, id string, limits Limits) error
	// Remove force-removes a container and drops its connection; removing
	// one that is gone is not an error.
	Remove(ctx context.Context, id string) error
	// List returns the containers this sandboxd instance owns.
	List(ctx context.Context) ([]Container, error)
	// Ping checks the engine.
	Ping(ctx context.Context) (EngineInfo, error)
	// Image inspects an image; ErrImageMissing when it is not there.
	Image(ctx context.Context, ref string) (Image, error)
	// BuildImage builds and tags an image, with host network (the build
	// may fetch packages; the sandboxes it makes never can), and pushes
	// it when asked, telling progress its output line by line.
	BuildImage(ctx context.Context, b ImageBuild, progress func(line string)) error
	// Close releases the engine client.
	Close() error
}

// Puller is a Runtime whose nodes pull images themselves, from a
// registry: Pull has each node that may run language's sandboxes (under
// the runtime its config names) pull ref now, ahead of the first sandbox,
// telling progress of each node; nodes are those that have it.
type Puller interface {
	Pull(ctx context.Context, runtime, language, ref string, progress func(line string)) (nodes []string, err error)
}

// Checkpointer is a Runtime that can stop a sandbox with its memory kept
// (its processes, and the tmpfs workspace with them) and start it again
// from there, in the same container.
type Checkpointer interface {
	// CanCheckpoint says whether sandboxes of an OCI runtime ("": the
	// engine's) can be checkpointed here now.
	CanCheckpoint(ctx context.Context, ociRuntime string) bool
	// Checkpoint saves a running sandbox's memory and stops it; its
	// container stays, with the checkpoint, until Restore or Remove.
	Checkpoint(ctx context.Context, id string) error
	// Restore starts a checkpointed container from its checkpoint, which
	// it then deletes; Attach connects to it again.
	Restore(ctx context.Context, id string) error
}

// Freezer is a Runtime that can freeze a sandbox where it stands: its
// processes stop, keeping their memory and the channel to the supervisor,
// and use no CPU until Thaw (the cgroup freezer under runc, `runsc pause`
// under gVisor). A frozen sandbox answers nothing; Remove takes it.
type Freezer interface {
	Freeze(ctx context.Context, id string) error
	Thaw(ctx context.Context, id string) error
}

// ErrGone: the sandbox's container is not there any more.
var ErrGone = errors.New("the container is gone")

// ErrNoFreeze: the runtime cannot freeze sandboxes.
var ErrNoFreeze = errors.New("this runtime cannot freeze sandboxes")

// Freezes is rt's Freezer, or one that never can.
func Freezes(rt Runtime) Freezer {
	if f, ok := rt.(Freezer); ok {
		return f
	}
	return noFreeze{}
}

type noFreeze struct{}

func (noFreeze) Freeze(context.Context, string) error { return ErrNoFreeze }
func (noFreeze) Thaw(context.Context, string) error   { return ErrNoFreeze }

// ErrNoCheckpoint: the runtime cannot checkpoint sandboxes.
var ErrNoCheckpoint = errors.New("this runtime cannot checkpoint sandboxes")

// Checkpoints is rt's Checkpointer, or one that never can.
func Checkpoints(rt Runtime) Checkpointer {
	if ck, ok := rt.(Checkpointer); ok {
		return ck
	}
	return noCheckpoints{}
}

// Pulls is rt as a Puller; one that is not pulls nothing (its images are
// where its sandboxes run).
func Pulls(rt Runtime) Puller {
	if p, ok := rt.(Puller); ok {
		return p
	}
	return noPulls{}
}

type noPulls struct{}

func (noPulls) Pull(context.Context, string, string, string, func(string)) ([]string, error) {
	return nil, nil
}

type noCheckpoints struct{}

func (noCheckpoints) CanCheckpoint(context.Context, string) bool { return false }
func (noCheckpoints) Checkpoint(context.Context, string) error   { return ErrNoCheckpoint }
func (noCheckpoints) Restore(context.Context, string) error      { return ErrNoCheckpoint }

// RemoveUnclaimed removes the containers of list that keep does not
// claim: what a previous run of the daemon left behind, or what is left
// at its end. Like Nomad's dangling-container reconciler, it touches only
// containers labelled as this daemon's (List returns no others).
// parallel removals run at once: the engine removes a few at once faster
// than one by one (12 in 0.45 s four at a time, 0.78 s one at a time),
// but they take both cores of a small host from whatever else runs.
func RemoveUnclaimed(ctx context.Context, rt Runtime, list []Container, keep map[string]bool, parallel int, log hclog.Logger) error {
	var (
		group errgroup.Group
		mu    sync.Mutex
		errs  []error
	)
	group.SetLimit(max(parallel, 1))
	for _, c := range list {
		if keep[c.ID] {
			continue
		}
		if ctx.Err() != nil {
			mu.Lock()
			errs = append(errs, ctx.Err()) // the rest are left for later
			mu.Unlock()
			break
		}
		group.Go(func() error {
			log.Info("removing a container no session claims", "container_id", ShortID(c.ID), "language", c.Language)
			if err := rt.Remove(ctx, c.ID); err != nil {
				mu.Lock()
				errs = append(errs, err) // the others are still removed
				mu.Unlock()
			}
			return nil
		})
	}
	_ = group.Wait()
	return errors.Join(errs...)
}
