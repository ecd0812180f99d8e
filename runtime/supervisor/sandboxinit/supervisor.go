package sandboxinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/environ"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/fresh"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/ports"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/spawn"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/warm"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/workspace"
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
	// spawn.New).
	oomFirst bool
}

var realContainer = container{killAll: procs.KillAll, clearIPC: fresh.ClearIPC, kernelObjects: fresh.KernelObjects, oomFirst: true}

// buildDir is supervisor.BuildDir under these paths.
func (p paths) buildDir() string {
	return filepath.Join(p.tmp, strings.TrimPrefix(supervisor.BuildDir, "/tmp/"))
}

// server holds the running executions. One reaper goroutine owns every
// wait4 in the container, so no other code may wait for a child.
type server struct {
	paths
	container

	outMu sync.Mutex
	out   *json.Encoder

	spawner *spawn.Spawner // starts the programs' processes

	files *workspace.Server // the host's file requests

	mu    sync.Mutex
	execs map[uint64]*execution // by request id
	byPID map[int]*execution    // main processes

	contexts     map[string]*kernel // running context kernels by name
	kernelByPID  map[int]*kernel
	lostContexts map[string]string // why a context that ended between cells lost its state

	warms *warm.Pool // runtimes started ahead for the next execs, and their zygote

	// logsWanted: the host connected now asked for our diagnostics (see
	// diagnostics).
	logsWanted atomic.Bool

	// What a program could find when the sandbox was new (see begin).
	fresh      []string
	freshTimes map[string]unix.Timespec
	freshModes map[string]os.FileMode
}

func newServer(w io.Writer, at paths, c container) *server {
	s := &server{
		paths:     at,
		container: c,
		out:       json.NewEncoder(w),
		execs:     map[uint64]*execution{},
		byPID:     map[int]*execution{},

		contexts:     map[string]*kernel{},
		kernelByPID:  map[int]*kernel{},
		lostContexts: map[string]string{},
	}
	s.spawner = spawn.New(c.oomFirst, s.reaped)
	s.warms = warm.NewPool(&s.mu, s.spawner, at.workspace, at.buildDir(), c.ownChildrenOnly)
	s.files = workspace.New(at.workspace, at.tmp, s.send)
	return s
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
	case supervisor.OpPut, supervisor.OpGet, supervisor.OpTar, supervisor.OpList, supervisor.OpMkdir, supervisor.OpMove, supervisor.OpRemove, supervisor.OpUntar, supervisor.OpWatch:
		s.files.Serve(m)
	case supervisor.OpReset, supervisor.OpRecycle, supervisor.OpPorts, supervisor.OpUsage:
		s.sandboxOp(m)
	case supervisor.OpContexts, supervisor.OpContextEnd:
		s.contextOp(m)
	case supervisor.OpWarm:
		if m.Warm != nil {
			s.warms.Up(*m.Warm, func(err error) {
				res := supervisor.FileResult{}
				if err != nil {
					res.Error = err.Error()
				}
				s.done(m.ID, &res)
			})
		}
	case supervisor.OpIn, supervisor.OpInClose, supervisor.OpKill:
		if s.files.Feed(m) { // a put's or a watch's
			return
		}
		s.mu.Lock()
		e := s.execs[m.ID]
		s.mu.Unlock()
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

// sandboxOp starts an operation on the whole sandbox. Those that take a
// while run in their own goroutine.
func (s *server) sandboxOp(m supervisor.Message) {
	req := supervisor.FileRequest{Path: "."}
	if m.File != nil {
		req = *m.File
	}
	switch m.Op {
	case supervisor.OpReset:
		go func() { s.done(m.ID, s.reset()) }()
	case supervisor.OpRecycle:
		go func() { s.done(m.ID, s.recycleAndWarm(req.Warm)) }()
	case supervisor.OpPorts:
		s.done(m.ID, listening())
	case supervisor.OpUsage:
		s.done(m.ID, s.usage())
	}
}

// listening lists the TCP ports listening in the sandbox.
func listening() *supervisor.FileResult {
	list, err := ports.Listening()
	if err != nil {
		return workspace.Failure(err)
	}
	res := &supervisor.FileResult{Ports: []supervisor.Port{}}
	for _, p := range list {
		res.Ports = append(res.Ports, supervisor.Port{Address: p.Addr().String(), Port: int(p.Port())})
	}
	return res
}

// done answers request id.
func (s *server) done(id uint64, res *supervisor.FileResult) {
	s.send(supervisor.Message{Op: supervisor.OpDone, ID: id, Done: res})
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
	pids = append(pids, s.warms.PIDs()...)
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
	if s.spawner.ForgetHolder(pid) {
		// Its usage is its namespace's, which it reported process by process.
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
	s.warms.Reaped(pid)
}

// start writes the files, starts the process and follows it to its end in
// a goroutine. Failures to start are reported as an exit message.
func (s *server) start(id uint64, req supervisor.ExecRequest) {
	fail := func(code int, err error) {
		s.send(supervisor.Message{Op: supervisor.OpExit, ID: id, Result: &supervisor.ExecResult{ExitCode: code, StartError: err.Error()}})
	}
	if err := s.files.Write(req.Files); err != nil {
		fail(126, err)
		return
	}
	outputs := s.files.ScanOutputs(req.Outputs)
	if req.Cell != nil {
		s.startCell(id, req, outputs, fail)
		return
	}
	if len(req.Argv) == 0 {
		fail(126, errors.New("empty argv"))
		return
	}
	env := environ.Merge(os.Environ(), req.Env)
	dir := req.Dir
	if dir == "" {
		dir = s.workspace
	}
	e := newExecution(s, id, req)
	e.outputs = outputs
	if req.Warm && req.TTY == nil {
		s.mu.Lock()
		w, missed := s.warms.Take(req, env, dir)
		if w != nil {
			e.warm, e.pid, e.oomBefore, e.started = true, w.PID(), procs.OOMKills(), time.Now()
			s.execs[id] = e
			s.byPID[w.PID()] = e
		}
		s.mu.Unlock()
		if w != nil {
			e.handOver(w, env, dir)
			go e.follow()
			return
		}
		e.warmMissed = missed
	}
	argv0, err := environ.LookPath(req.Argv[0], dir, environ.Value(env, "PATH"))
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
	e.oomBefore = procs.OOMKills()
	e.started = time.Now()
	pid, _, err := s.spawner.Spawn(argv0, req.Argv, dir, env, files, sys, req.Isolate)
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

func (s *server) finish(e *execution, res *supervisor.ExecResult) {
	res.Outputs, res.OutputsOmitted = s.files.ChangedOutputs(e.req.Outputs, e.outputs)
	res.WorkspaceBytes = procs.UsedBytes(s.workspace)
	s.mu.Lock()
	delete(s.execs, e.id)
	s.mu.Unlock()
	s.send(supervisor.Message{Op: supervisor.OpExit, ID: e.id, Result: res})
}

// endAll ends every process but the supervisor and the zygote, and says
// how many survived.
func (s *server) endAll() int { return s.killAll(s.warms.ZygotePID()) }

// usage is what the whole sandbox uses now (see procs.SandboxUsage).
func (s *server) usage() *supervisor.FileResult {
	s.mu.Lock()
	holders := s.spawner.Holders()
	s.mu.Unlock()
	return &supervisor.FileResult{Usage: procs.SandboxUsage(holders, s.workspace, s.tmp)}
}
