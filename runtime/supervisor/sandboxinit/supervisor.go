package sandboxinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// paths are where the supervisor acts: the container's own directories in a
// sandbox, a test's temporary ones in unit tests.
type paths struct {
	workspace, tmp string
	// scratch are emptied by a reset besides the workspace and tmp:
	// shared memory and POSIX message queues.
	scratch []string
}

var containerPaths = paths{workspace: "/workspace", tmp: "/tmp", scratch: []string{"/dev/shm", "/dev/mqueue"}}

// container is what only PID 1 of a sandbox may do; unit tests stand in.
type container struct {
	// killAll ends every process but the supervisor and keep (0: none),
	// and says how many survived.
	killAll func(keep int) int
	// clearIPC removes the SysV IPC objects of the sandbox's namespace.
	clearIPC func()
	// kernelObjects lists what the sandbox's namespaces hold that a
	// program may leave behind (nil: nothing to look at).
	kernelObjects func() []string
	// ownChildrenOnly has the reaper wait for the processes it started
	// alone: a supervisor that is no container's init shares its process
	// with children that are not its own (see Serve).
	ownChildrenOnly bool
	// oomFirst has the programs the supervisor starts be the kernel's
	// first pick when memory runs out, from their first instruction (see
	// startForker).
	oomFirst bool
}

var realContainer = container{killAll: killContainer, clearIPC: sysvIPC.clear, kernelObjects: kernelObjects, oomFirst: true}

// buildDir is supervisor.BuildDir under these paths.
func (p paths) buildDir() string {
	return filepath.Join(p.tmp, strings.TrimPrefix(supervisor.BuildDir, "/tmp/"))
}

// programNice is the nice value of the programs the supervisor starts.
const programNice = 10

// server holds the running executions. One reaper goroutine owns every
// wait4 in the container, so no other code may wait for a child.
type server struct {
	paths
	container

	outMu sync.Mutex
	out   *json.Encoder

	fork forker

	mu      sync.Mutex
	execs   map[uint64]*execution // by request id
	byPID   map[int]*execution    // main processes
	uploads map[uint64]*upload    // puts waiting for their in chunks
	watches map[uint64]*watch     // watches in progress, by request id

	contexts     map[string]*kernel // running context kernels by name
	kernelByPID  map[int]*kernel
	lostContexts map[string]string // why a context that ended between cells lost its state

	warms map[string]*warmProcess // runtimes started ahead for the next execs, by what they stand in for
	// zygote forks the warm processes that may be forked (see zygote.go);
	// zygoteFailed is the key of one that could not start, not tried
	// again. zygoteMu serialises starting one and asking it to fork.
	zygote       *zygote
	zygoteFailed string
	zygoteMu     sync.Mutex

	// self is this binary, the helper that puts an isolated program in
	// its namespaces; isolating says whether the runtime allows them,
	// found out once (see canIsolate).
	self      string
	isolation sync.Once
	isolating bool
	// logsWanted: the host connected now asked for our diagnostics (see
	// diagnostics).
	logsWanted atomic.Bool
	// unfiltered: no seccomp filter is in force on the supervisor, so
	// the container's profile does not hold its programs (gVisor does
	// not load it inside the sandbox) and each is locked down.
	unfiltered bool
	// holder holds the session's namespace (see hold.go); holders are the
	// pids of every one started and not yet reaped.
	holder  *holder
	holders map[int]bool

	// What a program could find when the sandbox was new (see begin).
	fresh      []string
	freshTimes map[string]unix.Timespec
	freshModes map[string]os.FileMode
}

func newServer(w io.Writer, at paths, c container) *server {
	self, _ := os.Executable()
	mode, _ := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return &server{
		self:       self,
		unfiltered: mode == 0,
		paths:      at,
		container:  c,
		out:        json.NewEncoder(w),
		fork:       startForker(c.oomFirst),
		execs:      map[uint64]*execution{},
		byPID:      map[int]*execution{},
		uploads:    map[uint64]*upload{},
		watches:    map[uint64]*watch{},

		contexts:     map[string]*kernel{},
		kernelByPID:  map[int]*kernel{},
		lostContexts: map[string]string{},
		warms:        map[string]*warmProcess{},
		holders:      map[int]bool{},
	}
}

// send writes one message; messages are whole lines, never interleaved.
func (s *server) send(m supervisor.Message) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_ = s.out.Encode(m)
}

func (s *server) handle(m supervisor.Message) {
	switch m.Op {
	case supervisor.OpHello:
		s.logsWanted.Store(m.Logs)
		s.send(supervisor.Message{Op: supervisor.OpHello, Nonce: m.Nonce, Version: supervisor.Version})
	case supervisor.OpExec:
		if m.Exec != nil {
			s.start(m.ID, *m.Exec)
		}
	case supervisor.OpPut, supervisor.OpGet, supervisor.OpTar, supervisor.OpList, supervisor.OpMkdir, supervisor.OpMove, supervisor.OpRemove, supervisor.OpReset, supervisor.OpRecycle, supervisor.OpUntar, supervisor.OpPorts, supervisor.OpUsage:
		s.fileOp(m)
	case supervisor.OpWatch:
		req := supervisor.FileRequest{Path: "."}
		if m.File != nil {
			req = *m.File
		}
		s.startWatch(m.ID, req)
	case supervisor.OpContexts, supervisor.OpContextEnd:
		s.contextOp(m)
	case supervisor.OpWarm:
		if m.Warm != nil {
			s.warmUp(*m.Warm, func(err error) {
				res := supervisor.FileResult{}
				if err != nil {
					res.Error = err.Error()
				}
				s.done(m.ID, &res)
			})
		}
	case supervisor.OpIn, supervisor.OpInClose, supervisor.OpKill:
		s.mu.Lock()
		e, up, w := s.execs[m.ID], s.uploads[m.ID], s.watches[m.ID]
		s.mu.Unlock()
		if w != nil && m.Op == supervisor.OpKill {
			w.close()
			return
		}
		if up != nil {
			switch m.Op {
			case supervisor.OpIn:
				s.uploadChunk(m.ID, up, m.Data)
			case supervisor.OpKill:
				up.err = errors.New("cancelled")
				s.finishUpload(m.ID, up)
			case supervisor.OpInClose:
				s.finishUpload(m.ID, up)
			}
			return
		}
		if e == nil {
			return
		}
		switch m.Op {
		case supervisor.OpIn:
			e.feed(m.Data)
		case supervisor.OpInClose:
			e.closeStdin()
		case supervisor.OpKill:
			go e.kill() // off the loop: a tree's kill keeps at it for up to a second
		}
	case supervisor.OpResize:
		s.mu.Lock()
		e := s.execs[m.ID]
		s.mu.Unlock()
		if e != nil && m.Size != nil {
			e.resize(*m.Size)
		}
	}
}

// reap collects every child that exits, main processes of executions and
// orphans re-parented to us alike, until stop is closed.
func (s *server) reap(stop <-chan struct{}) {
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, unix.SIGCHLD)
	defer signal.Stop(sigchld)
	for {
		select {
		case <-sigchld:
		case <-stop:
			return
		}
		for {
			var ws unix.WaitStatus
			var ru unix.Rusage
			pid := s.waitOne(&ws, &ru)
			if pid <= 0 {
				break
			}
			s.reaped(pid, ws, &ru)
		}
	}
}

// waitOne collects a child that has exited, if one has: any child, or
// one the server started when it may reap no other.
func (s *server) waitOne(ws *unix.WaitStatus, ru *unix.Rusage) int {
	if !s.ownChildrenOnly {
		pid, err := unix.Wait4(-1, ws, unix.WNOHANG, ru)
		if err != nil {
			return 0
		}
		return pid
	}
	s.mu.Lock()
	var pids []int
	for pid := range s.byPID {
		pids = append(pids, pid)
	}
	for pid := range s.kernelByPID {
		pids = append(pids, pid)
	}
	for _, w := range s.warms {
		pids = append(pids, w.pid)
	}
	s.mu.Unlock()
	for _, pid := range pids {
		if got, err := unix.Wait4(pid, ws, unix.WNOHANG, ru); err == nil && got > 0 {
			return got
		}
	}
	return 0
}

func (s *server) reaped(pid int, ws unix.WaitStatus, ru *unix.Rusage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holders[pid] {
		// Its usage is its namespace's, which it reported process by process.
		delete(s.holders, pid)
		if !ws.Signaled() || ws.Signal() != unix.SIGKILL { // not ended by us, nor by a program's SIGKILL
			fmt.Fprintf(os.Stderr, "sandbox-init: a session's holder ended: exit %d, signal %d\n", ws.ExitStatus(), ws.Signal())
		}
		return
	}
	// Every process's usage counts toward the executions running now: in a
	// one-shot container that is exactly the execution that started it.
	for _, e := range s.execs {
		e.account(ru)
	}
	if e := s.byPID[pid]; e != nil {
		delete(s.byPID, pid)
		e.exited <- ws
	}
	if k := s.kernelByPID[pid]; k != nil {
		s.kernelEnded(k, ws)
	}
	for key, w := range s.warms {
		if w.pid == pid {
			w.close() // it died unused: the next exec starts as usual
			delete(s.warms, key)
		}
	}
	if s.zygote != nil && s.zygote.pid == pid {
		s.zygote.close() // killed: the next warm process starts another
		s.zygote = nil
	}
}

// start writes the files, starts the process and follows it to its end in
// a goroutine. Failures to start are reported as an exit message.
func (s *server) start(id uint64, req supervisor.ExecRequest) {
	fail := func(code int, err error) {
		s.send(supervisor.Message{Op: supervisor.OpExit, ID: id, Result: &supervisor.ExecResult{ExitCode: code, StartError: err.Error()}})
	}
	if err := s.writeFiles(req.Files); err != nil {
		fail(126, err)
		return
	}
	outputs := s.scanOutputs(req.Outputs)
	if req.Cell != nil {
		s.startCell(id, req, outputs, fail)
		return
	}
	if len(req.Argv) == 0 {
		fail(126, errors.New("empty argv"))
		return
	}
	env := mergeEnv(os.Environ(), req.Env)
	dir := req.Dir
	if dir == "" {
		dir = s.workspace
	}
	e := newExecution(s, id, req)
	e.outputs = outputs
	if req.Warm && req.TTY == nil {
		s.mu.Lock()
		w, missed := s.takeWarm(req, env, dir)
		if w != nil {
			e.warm, e.pid, e.oomBefore, e.started = true, w.pid, oomKills(), time.Now()
			s.execs[id] = e
			s.byPID[w.pid] = e
		}
		s.mu.Unlock()
		if w != nil {
			e.handOver(w, env, dir)
			go e.follow()
			return
		}
		e.warmMissed = missed
	}
	argv0, err := lookPath(req.Argv[0], dir, envValue(env, "PATH"))
	if err != nil {
		fail(127, err)
		return
	}
	open, sys := e.openPipes, &syscall.SysProcAttr{Setpgid: true}
	if req.TTY != nil {
		// A session of its own with the terminal as its controlling tty:
		// ^C there reaches its foreground process group.
		open, sys = e.openTerminal, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	files, err := open(req.Stdin)
	if err != nil {
		fail(126, err)
		return
	}
	s.mu.Lock()
	e.oomBefore = oomKills()
	e.started = time.Now()
	pid, _, err := s.spawn(argv0, req.Argv, dir, env, files, sys, req.Isolate)
	if err == nil {
		e.pid = pid
		s.execs[id] = e
		s.byPID[pid] = e
	}
	s.mu.Unlock()
	e.closeChildEnds()
	if err != nil {
		e.abort()
		fail(126, err)
		return
	}
	go e.follow()
}

// spawn starts a program's process on the forker's thread, so that it
// runs niced, and is the kernel's first pick when memory runs out, from
// its first instruction (see startForker).
//
// iso is the PID namespace it asks for (see supervisor.Isolation): where
// the runtime gives none (see canIsolate), the process starts as usual.
// isolated says which it got.
func (s *server) spawn(argv0 string, argv []string, dir string, env []string, files []uintptr, sys *syscall.SysProcAttr, iso supervisor.Isolation) (pid int, isolated supervisor.Isolation, err error) {
	isolated = s.effective(iso)
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

// effective is the isolation a process that asks for iso gets here.
func (s *server) effective(iso supervisor.Isolation) supervisor.Isolation {
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
// files were still its own (see Main).
var ownOOMScore *os.File

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

func (s *server) finish(e *execution, res *supervisor.ExecResult) {
	res.Outputs, res.OutputsOmitted = s.changedOutputs(e.req.Outputs, e.outputs)
	res.WorkspaceBytes = usedBytes(s.workspace)
	s.mu.Lock()
	delete(s.execs, e.id)
	s.mu.Unlock()
	s.send(supervisor.Message{Op: supervisor.OpExit, ID: e.id, Result: res})
}

// endAll ends every process but the supervisor and the zygote, and says
// how many survived.
func (s *server) endAll() int { return s.killAll(s.zygotePID()) }

// killContainer ends every process in the container but us and keep (0:
// none), and keeps at it while a fork bomb races the kill. It returns how
// many processes survived ~1 s. Only PID 1 of a PID namespace may call it.
//
// Sparing keep, it kills the processes one by one, which a fork bomb may
// outrun where kill(-1) does not: after half the time it falls back to
// kill(-1), keep included.
func killContainer(keep int) int {
	start := time.Now()
	for {
		spare := keep > 0 && time.Since(start) < 450*time.Millisecond
		if !spare {
			_ = unix.Kill(-1, unix.SIGKILL)
		}
		n := 0
		forEachProcess(func(pid string, stat []byte) {
			if p, _ := strconv.Atoi(pid); p > 1 && p != keep && live(stat) {
				n++
				if spare {
					_ = unix.Kill(p, unix.SIGKILL)
				}
			}
		})
		if n == 0 || time.Since(start) > 900*time.Millisecond {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killTree ends root, its process group and every process descended from
// it (a child that left the group by setpgid or setsid goes too), and
// keeps at it while they fork, for ~1 s. It returns how many survived:
// one context's kernel and what its cells started, and nothing else of
// the session (other contexts, servers).
func killTree(root int) int {
	start := time.Now()
	for first := true; ; first = false {
		parent, group, exiting := map[int]int{}, map[int]int{}, map[int]bool{}
		forEachProcess(func(pid string, stat []byte) {
			p, _ := strconv.Atoi(pid)
			f := statFields(stat)
			if p <= 1 || len(f) <= 6 {
				return
			}
			many := threaded(pid)
			if live(stat) || many {
				parent[p], _ = strconv.Atoi(f[1])
				group[p], _ = strconv.Atoi(f[2])
				flags, _ := strconv.ParseUint(f[6], 10, 64)
				exiting[p] = flags&pfExiting != 0 && !many // on its way out: no survivor
			}
		})
		// The tree is read while root lives (its orphans would go to
		// the holder or PID 1), then all of it is killed at once; by
		// number too, as gVisor's /proc does not list a session's
		// processes, which are in a PID namespace of their own.
		var tree []int
		for p := range parent {
			for q, hops := p, 0; q > 1 && hops < len(parent); q, hops = parent[q], hops+1 {
				if q == root || group[q] == root {
					tree = append(tree, p)
					break
				}
			}
		}
		_ = unix.Kill(-root, unix.SIGKILL)
		_ = unix.Kill(root, unix.SIGKILL)
		for _, p := range tree {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		n := 0
		for _, p := range tree {
			if !exiting[p] {
				n++
			}
		}
		if first {
			n++ // root itself, which /proc may not list: look once more
		}
		if n == 0 || time.Since(start) > 900*time.Millisecond {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pfExiting is the kernel's flag of a process that is exiting (PF_EXITING,
// in /proc/PID/stat's flags): a large one may take a while to free its
// memory.
const pfExiting = 0x4

// threaded says whether process pid has threads but its first: one whose
// first thread ended (pthread_exit) shows as a zombie while the others
// run on.
func threaded(pid string) bool {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	return err == nil && len(tasks) > 1
}

// live says whether a process's /proc stat is not a zombie's: a zombie is
// dead, and the reaper collects it.
func live(stat []byte) bool {
	f := statFields(stat) // the state follows the parenthesised command name
	return len(f) > 0 && f[0] != "Z"
}

// oomKills reads the container's count of OOM kills from its memory cgroup
// (v2 memory.events, v1 memory.oom_control); -1 when neither is readable.
func oomKills() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		data, err := readProc(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				return atoi64(v)
			}
		}
	}
	return -1
}

// writeFiles writes the request's files under the workspace; os.Root keeps
// every path, and every link met on the way, inside it.
func (s *server) writeFiles(files []supervisor.File) error {
	if len(files) == 0 {
		return nil
	}
	root, err := s.openWorkspace()
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range files {
		name := filepath.Clean(strings.TrimPrefix(f.Path, "/workspace/"))
		if dir := filepath.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		mode := os.FileMode(f.Mode & 0o777)
		if mode == 0 {
			mode = 0o644
		}
		w, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		_, err = w.Write(f.Data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
