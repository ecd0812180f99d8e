package sandboxinit

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/fresh"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/workspace"
)

// A one-shot container serves many runs, each in a sandbox as fresh as a
// new container's: between runs the supervisor ends every process and
// empties every writable place (reset), then checks that what a program
// could find is exactly what it found when the container started, its
// baseline. Anything it cannot undo retires the container.

// begin readies a new sandbox and takes the baseline later runs are held
// to.
func (s *server) begin() {
	s.makeOutputs()
	s.fresh = s.observe()
	s.freshTimes = map[string]unix.Timespec{}
	s.freshModes = map[string]os.FileMode{}
	for _, dir := range s.places() {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == nil {
			s.freshTimes[dir] = st.Mtim
		}
		if info, err := os.Lstat(dir); err == nil {
			s.freshModes[dir] = info.Mode() & workspace.ModeBits
		}
	}
}

// reset ends every process and empties the workspace, /tmp, shared memory,
// message queues and SysV IPC, keeping project_files: the session goes on
// as if new.
func (s *server) reset() *supervisor.FileResult {
	s.dropKernels("")
	if n := s.endAll(); n > 0 {
		return workspace.Refuse(supervisor.ErrInvalid, "%d processes survived the kill", n)
	}
	s.clearIPC()
	// The workspace and /tmp get back the modes they had when the sandbox
	// was new (a pod's volumes are not a container's tmpfs).
	dirs := map[string]os.FileMode{s.workspace: s.freshModes[s.workspace], s.tmp: s.freshModes[s.tmp]}
	for _, d := range s.scratch {
		dirs[d] = 0 // mounted by the engine; emptied, not changed
	}
	for dir, mode := range dirs {
		if err := s.files.Empty(dir, mode); err != nil {
			return workspace.Failure(err)
		}
	}
	s.makeOutputs()
	return &supervisor.FileResult{}
}

// makeOutputs creates the workspace's outputs/, where results are expected,
// and the directory compilers write programs to.
func (s *server) makeOutputs() {
	s.files.MakeOutputs()
	_ = os.Mkdir(s.buildDir(), 0o755)
}

// observe is what a program could find now (see fresh.Observe).
func (s *server) observe() []string { return fresh.Observe(s.places(), s.kernelObjects) }

// places are the directories a program may write to.
func (s *server) places() []string {
	return append([]string{s.workspace, s.tmp}, s.scratch...)
}

// recycle resets the sandbox for the next one-shot run and checks it
// against its baseline. Kills and socket teardown finish a moment after
// the calls that ask for them, so the check is tried for up to a second.
func (s *server) recycle() *supervisor.FileResult {
	s.mu.Lock()
	running := len(s.execs)
	s.mu.Unlock()
	if running > 0 {
		return workspace.Refuse(supervisor.ErrNotFresh, "%d executions still running", running)
	}
	if res := s.reset(); res.Error != "" {
		res.ErrorKind = supervisor.ErrNotFresh
		return res
	}
	for dir, mtime := range s.freshTimes {
		// The owner may set its directory's times: the workspace shows
		// no trace of the runs before.
		_ = unix.UtimesNanoAt(unix.AT_FDCWD, dir, []unix.Timespec{mtime, mtime}, unix.AT_SYMLINK_NOFOLLOW)
	}
	var diff []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		// The processes reset killed are gone once reaped: until then a
		// program would find their zombies in /proc.
		if diff = fresh.Differences(s.fresh, s.observe()); len(diff) == 0 {
			if n := s.unreaped(); n > 0 {
				diff = []string{fmt.Sprintf("%d ended processes not yet reaped", n)}
			} else {
				return &supervisor.FileResult{}
			}
		}
		if time.Now().After(deadline) {
			break
		}
	}
	if len(diff) > 5 {
		diff = append(diff[:5], fmt.Sprintf("and %d more", len(diff)-5))
	}
	return workspace.Refuse(supervisor.ErrNotFresh, "the sandbox is not as it started: %s", strings.Join(diff, "; "))
}

// recycleAndWarm recycles the sandbox and, once it is fresh, starts the
// warm processes, one after the other as the host would, answering when
// each is ready or has failed: a recycle and its warm-ups are one round
// trip, and one wake of this process instead of one per message.
func (s *server) recycleAndWarm(warms []supervisor.WarmRequest) *supervisor.FileResult {
	res := s.recycle()
	if res.Error != "" || len(warms) == 0 {
		return res
	}
	res.WarmErrors = make([]string, len(warms))
	for i, w := range warms {
		failed := make(chan error, 1)
		s.warms.Up(w, func(err error) { failed <- err })
		if err := <-failed; err != nil {
			res.WarmErrors[i] = err.Error()
		}
	}
	return res
}

// unreaped counts the zombies ours to reap (the container's orphans
// among them): none where we are not the container's reaper, PID 1.
func (s *server) unreaped() int {
	if s.ownChildrenOnly || os.Getpid() != 1 {
		return 0
	}
	n := 0
	procs.ForEachProcess(func(pid string, stat []byte) {
		if f := procs.StatFields(stat); pid != "1" && len(f) > 1 && f[0] == "Z" && f[1] == "1" {
			n++
		}
	})
	return n
}
