package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	"golang.org/x/sys/unix"
)

// A runc container is frozen through its freezer cgroup, with runc's own
// freezer code: what `docker pause` ends in, without the round trip to it
// (dockerd asks containerd, whose shim execs runc, which writes the same
// file). A thaw takes about a millisecond that way, where the engine's
// took 10 to 40, and more with a thousand containers.
//
// The engine is not told. It reports such a container running (runc,
// which reads the cgroup, says paused); so what is frozen here is thawed
// here, and what the engine paused (an operator, an older sandboxd) is
// thawed by the engine. Killing a frozen runc container works (runc
// thaws it), so the engine can still stop and remove it.
//
// gVisor's sandboxes are paused through the engine (`runsc pause`): a
// sandbox frozen in its cgroup spends no CPU, but its sentry then answers
// no `runsc kill`, and the engine's stop or removal of it waits for ever.
// So are containers whose cgroups this process cannot see or write (an
// engine on another host, or in another cgroup namespace).

// freezerCgroup is one container's freezer cgroup directory. The zero
// value stands for the engine's pause.
type freezerCgroup struct {
	dir string
	v2  bool // cgroup.freeze of the unified hierarchy, not v1's freezer.state
}

func (c freezerCgroup) viaEngine() bool { return c.dir == "" }

// set freezes or thaws the cgroup and returns once it is so. Freezing
// retries while processes keep appearing and thaws back if it cannot
// finish, as runc does.
func (c freezerCgroup) set(state cgroups.FreezerState) error {
	if c.v2 {
		m, err := fs2.NewManager(&cgroups.Cgroup{Resources: &cgroups.Resources{}}, c.dir)
		if err != nil {
			return err
		}
		return m.Freeze(state)
	}
	return (&fs.FreezerGroup{}).Set(c.dir, &cgroups.Resources{Freezer: state})
}

// freeze freezes the cgroup. Under cgroup v1 a freeze stays FREEZING
// while a process in it is busy in the kernel, and runc's loop gives up
// after a few hundred milliseconds (thawing it back): on a loaded host an
// E2B pause failed so in CI. It is tried again a few times, further apart,
// before the freeze fails.
func (c freezerCgroup) freeze(ctx context.Context) error {
	wait := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.set(cgroups.Frozen)
		if err == nil || attempt == freezeAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// freezeAttempts bounds freeze's tries: about a second and a half in all.
const freezeAttempts = 5

// frozen says whether the cgroup itself is frozen (not through a parent).
func (c freezerCgroup) frozen() bool {
	var state cgroups.FreezerState
	var err error
	if c.v2 {
		var m *fs2.Manager
		if m, err = fs2.NewManager(&cgroups.Cgroup{Resources: &cgroups.Resources{}}, c.dir); err == nil {
			state, err = m.GetFreezerState()
		}
	} else {
		state, err = (&fs.FreezerGroup{}).GetState(c.dir)
	}
	return err == nil && state == cgroups.Frozen
}

// cgroupOfProcess finds the freezer cgroup of container id, whose first
// process is pid, and checks that it is the container's own: a directory
// named for it, with a freezer this process can write.
func cgroupOfProcess(pid int, id string) (freezerCgroup, error) {
	paths, err := cgroups.ParseCgroupFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return freezerCgroup{}, err
	}
	var c freezerCgroup
	if p, ok := paths["freezer"]; ok {
		mnt, err := cgroups.FindCgroupMountpoint("", "freezer")
		if err != nil {
			return freezerCgroup{}, err
		}
		c.dir = filepath.Join(mnt, p)
	} else if p, ok := paths[""]; ok && cgroups.IsCgroup2UnifiedMode() {
		c = freezerCgroup{dir: filepath.Join("/sys/fs/cgroup", p), v2: true}
	} else {
		return freezerCgroup{}, errors.New("no freezer cgroup")
	}
	if !strings.Contains(filepath.Base(c.dir), id) {
		return freezerCgroup{}, fmt.Errorf("process %d is in cgroup %s, not one of container %s: sandboxd sees another cgroup namespace than the engine's", pid, c.dir, id)
	}
	file := "freezer.state"
	if c.v2 {
		file = "cgroup.freeze"
	}
	f, err := cgroups.OpenFile(c.dir, file, unix.O_RDWR)
	if err != nil {
		return freezerCgroup{}, err
	}
	f.Close()
	return c, nil
}

// freezers finds containers' freezer cgroups: once one container's is
// found from its process, the others' follow from it, as the engine names
// every container's cgroup the same way.
type freezers struct {
	mu sync.Mutex
	// before and after the id in a container's cgroup directory, once one
	// is found
	before, after string
	v2            bool
	broken        error // why no container can be frozen here, once known
}

// of is container id's freezer cgroup, or the zero value (the engine's
// pause) for a gVisor container or where this process cannot use the
// cgroups; an error wrapping errEngineFreezes says why, the first time.
// inspect gives the container's OCI runtime and first process.
func (f *freezers) of(ctx context.Context, id string, inspect func(context.Context, string) (ociRuntime string, pid int, err error)) (freezerCgroup, error) {
	f.mu.Lock()
	broken := f.broken
	f.mu.Unlock()
	if broken != nil {
		return freezerCgroup{}, nil
	}
	ociRuntime, first, err := inspect(ctx, id)
	if err != nil || ociRuntime == "runsc" {
		return freezerCgroup{}, err
	}
	c, err := cgroupOfProcess(first, id)
	if errors.Is(err, os.ErrNotExist) {
		// The process ended (the container stopped meanwhile), or this
		// process sees another pid namespace than the engine's.
		if _, again, perr := inspect(ctx, id); perr != nil || again != first {
			return freezerCgroup{}, fmt.Errorf("container %s stopped while being frozen", id)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.broken = err // the same for every container
		return freezerCgroup{}, fmt.Errorf("%w: %v", errEngineFreezes, err)
	}
	i := strings.LastIndex(c.dir, id)
	f.before, f.after, f.v2 = c.dir[:i], c.dir[i+len(id):], c.v2
	return c, nil
}

// errEngineFreezes wraps why containers are paused through the engine.
var errEngineFreezes = errors.New("containers are paused through the engine")

// frozenInCgroup is container id's freezer cgroup and whether it is
// frozen there, found without asking the engine once one container's
// cgroup is known: how a restart finds the containers frozen before it.
// found is false where the cgroup is not where the others' are.
func (f *freezers) frozenInCgroup(id string) (c freezerCgroup, frozen, found bool) {
	f.mu.Lock()
	c = freezerCgroup{dir: f.before + id + f.after, v2: f.v2}
	known := f.before != ""
	f.mu.Unlock()
	if !known {
		return freezerCgroup{}, false, false
	}
	if _, err := os.Stat(c.dir); err != nil {
		return freezerCgroup{}, false, false
	}
	return c, c.frozen(), true
}
