// Package spawn starts the programs' processes: on a thread of their own,
// niced and first to go when memory runs out (the forker), and where the
// runtime calls for it (gVisor) in a PID namespace of their own or their
// session's, and locked down. The isolation helper, the session's
// holder, its shim and the lockdown step are sandbox-init started again
// with one of this package's arguments (see IsHelper).
package spawn

import (
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// programNice is the nice value of the programs the supervisor starts.
const programNice = 10

// Spawner starts the programs of one supervisor.
//
// Spawn runs with the supervisor's lock held, the lock its reaper takes:
// a process reaped before its pid is recorded would be lost. Holders and
// ForgetHolder are called with it held too.
type Spawner struct {
	fork forker
	// reaped is the supervisor's reaper's, for the processes of a
	// session's namespace, which its holder reaps.
	reaped func(pid int, ws unix.WaitStatus, ru *unix.Rusage)

	// self is this binary, the helper that puts an isolated program in
	// its namespaces; isolating says whether the runtime allows them,
	// found out once (see canIsolate).
	self      string
	isolation sync.Once
	isolating bool
	// unfiltered: no seccomp filter is in force on the supervisor, so
	// the container's profile does not hold its programs (gVisor does
	// not load it inside the sandbox) and each is locked down.
	unfiltered bool
	// holder holds the session's namespace (see hold.go); holders are the
	// pids of every one started and not yet reaped.
	holder  *holder
	holders map[int]bool
}

// New starts a spawner's forker; with oomFirst its programs are the
// kernel's first pick when memory runs out. reaped takes how each
// process of a session's namespace ended, as the reaper's own would.
func New(oomFirst bool, reaped func(pid int, ws unix.WaitStatus, ru *unix.Rusage)) *Spawner {
	self, _ := os.Executable()
	mode, _ := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return &Spawner{fork: startForker(oomFirst), reaped: reaped, self: self, unfiltered: mode == 0, holders: map[int]bool{}}
}

// Plain has the programs start as they are, never isolated nor locked
// down: for a supervisor outside a container, with no helper binary.
func (s *Spawner) Plain() {
	s.isolation.Do(func() {}) // isolating stays false
	s.unfiltered = false
}

// IsolateAnyway has programs isolated whatever the runtime's probe says:
// for tests, on a kernel that shields a namespace's first process.
func (s *Spawner) IsolateAnyway() {
	s.canIsolate()
	s.isolating = true
}

// Close ends the forker's thread.
func (s *Spawner) Close() { close(s.fork) }

// Holders are the pids of the session namespaces' holders not yet reaped.
func (s *Spawner) Holders() []int { return slices.Collect(maps.Keys(s.holders)) }

// ForgetHolder says whether pid is a holder's, reaped now, and forgets it.
func (s *Spawner) ForgetHolder(pid int) bool {
	if !s.holders[pid] {
		return false
	}
	delete(s.holders, pid)
	return true
}

// HolderPID is the pid of the session namespace's holder (0: none).
func (s *Spawner) HolderPID() int {
	if s.holder == nil {
		return 0
	}
	return s.holder.pid
}

// Spawn starts a program's process on the forker's thread, so that it
// runs niced, and is the kernel's first pick when memory runs out, from
// its first instruction (see startForker).
//
// iso is the PID namespace it asks for (see supervisor.Isolation): where
// the runtime gives none (see canIsolate), the process starts as usual.
// isolated says which it got.
func (s *Spawner) Spawn(argv0 string, argv []string, dir string, env []string, files []uintptr, sys *syscall.SysProcAttr, iso supervisor.Isolation) (pid int, isolated supervisor.Isolation, err error) {
	isolated = s.Effective(iso)
	s.fork.do(func() {
		switch isolated {
		case supervisor.IsolateProgram:
			pid, err = s.spawnIsolated(argv0, argv, dir, env, files, sys, true)
		case supervisor.IsolateSession:
			pid, err = s.spawnHeld(argv0, argv, dir, env, files, sys)
		default:
			fork := func(path string, argv []string, files []uintptr) (int, error) {
				return syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: dir, Env: env, Files: files, Sys: sys})
			}
			if s.canIsolate() || s.unfiltered { // gVisor: see lockdown.go
				pid, err = startLocked(fork, s.self, argv0, argv, files)
			} else {
				pid, err = fork(argv0, argv, files)
			}
		}
	})
	return pid, isolated, err
}

// Effective is the isolation a process that asks for iso gets here.
func (s *Spawner) Effective(iso supervisor.Isolation) supervisor.Isolation {
	if !s.canIsolate() {
		return supervisor.IsolateNone
	}
	return iso
}

// forker runs every fork of a program on one OS thread of its own, whose
// nice is programNice: nice is per thread and a child takes its parent
// thread's at fork, so a program, and whatever it forks before its first
// instruction is done, runs niced from the start. The supervisor's other
// threads keep nice 0 and win the container's CPU quota over a fork bomb,
// so the kill at the deadline is never delayed. The container's share
// against other containers does not depend on nice.
type forker chan func()

const oomScorePath = "/proc/self/oom_score_adj"

// ownOOMScore is the supervisor's oom_score_adj, opened while its /proc
// files were still its own (see KeepOOMScore).
var ownOOMScore *os.File

// KeepOOMScore opens the supervisor's own oom score for the forks to come,
// before it makes itself non-dumpable, which makes its /proc files root's.
func KeepOOMScore() { ownOOMScore, _ = os.OpenFile(oomScorePath, os.O_RDWR, 0) }

// startForker starts the forker's thread, niced as the programs will be.
// With oomFirst, a fork also inherits oom_score_adj 1000, so that a
// memory bomb is the kernel's pick and the supervisor survives it. That
// score is the process's, not the thread's: the supervisor takes it for
// the span of each fork and then goes back to its own, as the kernel
// lets a process do (down to what it was started with). Set on the child
// after the fork, it would come late for a program quick to look or to
// fill memory.
func startForker(oomFirst bool) forker {
	f := make(forker)
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the forker
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), programNice)
		own := make([]byte, 16)
		if oomFirst && ownOOMScore != nil {
			n, _ := ownOOMScore.ReadAt(own, 0)
			own = own[:n]
		}
		oomFirst = oomFirst && len(own) > 0
		close(ready)
		for fn := range f {
			if oomFirst {
				_, _ = ownOOMScore.WriteAt([]byte("1000"), 0)
			}
			fn()
			if oomFirst {
				_, _ = ownOOMScore.WriteAt(own, 0)
			}
		}
	}()
	<-ready
	return f
}

// do runs fn on the forker's thread and waits for it.
func (f forker) do(fn func()) {
	done := make(chan struct{})
	f <- func() { fn(); close(done) }
	<-done
}
