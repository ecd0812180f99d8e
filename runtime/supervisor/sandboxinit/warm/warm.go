// Package warm starts language runtimes ahead of the execs that will run
// in them (warm processes), and keeps a zygote that forks them where a
// runtime can be forked; an exec that a warm process stands in for takes
// it over instead of starting cold.
package warm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/environ"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/spawn"
)

import ()

// Pool is a supervisor's warm processes and zygote.
//
// Its lock is the supervisor's, which the reaper holds: a warm process
// is recorded under it as it starts (see spawn.Spawner).
type Pool struct {
	mu      *sync.Mutex
	spawner *spawn.Spawner
	// workspace is where a warm process runs unless it asks otherwise;
	// buildDir is where its hook is written (supervisor.BuildDir).
	workspace, buildDir string
	// ownChildrenOnly: the supervisor reaps only the processes it
	// started, so it cannot reap what a zygote forks.
	ownChildrenOnly bool

	warms map[string]*Process // runtimes started ahead for the next execs, by what they stand in for
	// zygote forks the warm processes that may be forked (see zygote.go);
	// zygoteFailed is the key of one that could not start, not tried
	// again. zygoteMu serialises starting one and asking it to fork.
	zygote       *zygote
	zygoteFailed string
	zygoteMu     sync.Mutex
}

// NewPool keeps warm processes started by spawner, under mu, the
// supervisor's lock.
func NewPool(mu *sync.Mutex, spawner *spawn.Spawner, workspace, buildDir string, ownChildrenOnly bool) *Pool {
	return &Pool{mu: mu, spawner: spawner, workspace: workspace, buildDir: buildDir, ownChildrenOnly: ownChildrenOnly, warms: map[string]*Process{}}
}

// Process is a language's runtime started ahead of the exec it will
// run: started as that exec's process would be (the sandbox's uid, a
// process group of its own, niced, first to go when memory runs out),
// with the pipes that become that exec's stdin, stdout and stderr. Its
// fd 3 is where the program's argv, environment and directory arrive; on
// fd 4 it says it is ready (see the language package's WarmProtocol).
type Process struct {
	pid      int
	isolated supervisor.Isolation // the namespace it got (see spawn)
	req      supervisor.WarmRequest
	env      []string // the environment of the runs it stands in for
	dir      string
	// Our ends of its stdin, stdout and stderr, which become the exec's.
	Stdin, Stdout, Stderr *os.File
	goW                   *os.File
}

// PID is the warm process's pid.
func (w *Process) PID() int { return w.pid }

// close releases our ends of a warm process that will run nothing.
func (w *Process) close() { closeFiles(w.Stdin, w.Stdout, w.Stderr, w.goW) }

func closeFiles(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// Up starts a warm process, replacing one not yet used that stands in
// for the same argv, and calls done once it is ready, or has failed.
func (s *Pool) Up(req supervisor.WarmRequest, done func(error)) {
	s.dropWarm(req.Stands, nil)
	if len(req.Argv) == 0 || len(req.Stands) == 0 {
		done(errors.New("a warm process needs argv and the argv it stands in for"))
		return
	}
	if err := s.writeWarmFiles(req.Files); err != nil {
		done(fmt.Errorf("writing the warm hook: %w", err))
		return
	}
	w := &Process{req: req, env: environ.Merge(os.Environ(), req.Env), dir: req.Dir}
	if w.dir == "" {
		w.dir = s.workspace
	}
	argv0, err := environ.LookPath(req.Argv[0], w.dir, environ.Value(w.env, "PATH"))
	if err != nil {
		done(err)
		return
	}
	// Pipes for stdin, stdout, stderr, the go message and the ready line:
	// the child gets the read ends of stdin and go, the write ends of the
	// others.
	var rs, ws [5]*os.File
	for i := range rs {
		if rs[i], ws[i], err = os.Pipe(); err != nil {
			closeFiles(rs[:i]...)
			closeFiles(ws[:i]...)
			done(err)
			return
		}
	}
	child := []*os.File{rs[0], ws[1], ws[2], rs[3], ws[4]}
	w.Stdin, w.Stdout, w.Stderr, w.goW = ws[0], rs[1], rs[2], ws[3]
	readyR := rs[4]
	start := func() (err error) {
		fds := make([]uintptr, len(child))
		for i, f := range child {
			fds[i] = f.Fd()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		w.pid, w.isolated, err = s.spawner.Spawn(argv0, req.Argv, w.dir, environ.Merge(w.env, req.Hook), fds, &syscall.SysProcAttr{Setpgid: true}, req.Isolate)
		if err == nil {
			s.warms[warmKey(req.Stands)] = w
		}
		return err
	}
	if !s.forks(w) || !s.zygoteMu.TryLock() { // TryLock: none is being started
		s.awaitWarm(w, readyR, child, start(), done)
		return
	}
	fork := func(z *zygote) {
		defer s.zygoteMu.Unlock()
		err := s.forkWarm(z, argv0, w, child)
		if errors.Is(err, errNoZygote) {
			fmt.Fprintf(os.Stderr, "sandbox-init: the warm process starts as usual: %v\n", err)
			err = start()
		}
		// Any other failure fails this warm process: a fork may have
		// had child before it failed, which must not serve another.
		s.awaitWarm(w, readyR, child, err, done)
	}
	if z := s.liveZygote(zygoteKey(w)); z != nil {
		// A fork, now: an exec that follows this message may take it.
		fork(z)
		return
	}
	// A zygote must be started first: not on the loop that reads the
	// host's messages.
	go fork(nil)
}

// awaitWarm answers a warm request once w, started with the descriptors
// child (err: or not), is ready or has failed.
func (s *Pool) awaitWarm(w *Process, readyR *os.File, child []*os.File, err error, done func(error)) {
	closeFiles(child...)
	if err != nil {
		w.close()
		readyR.Close()
		done(err)
		return
	}
	go func() {
		defer readyR.Close()
		if err := awaitReady(readyR, time.Duration(w.req.TimeoutMS)*time.Millisecond); err != nil {
			if s.dropWarm(w.req.Stands, w) {
				err = fmt.Errorf("%w: %s", err, tail(w.Stderr))
				w.close()
			}
			done(err)
			return
		}
		done(nil)
	}()
}

// awaitReady waits for the warm process's "ready" line on r, at most
// timeout (a process that exits first closes r).
func awaitReady(r *os.File, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	_ = r.SetReadDeadline(time.Now().Add(timeout))
	line := make([]byte, 6)
	if _, err := io.ReadFull(r, line); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("the warm process was not ready within %s", timeout)
		}
		return errors.New("the warm process ended before it was ready")
	}
	if string(line) != "ready\n" {
		return fmt.Errorf("the warm process said %q, not ready", line)
	}
	return nil
}

// tail is the last of what a failed warm process wrote on stderr.
func tail(r *os.File) string {
	_ = r.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// warmKey names what a warm process stands in for.
func warmKey(stands []string) string { return strings.Join(stands, "\x00") }

// Drop ends the warm process that stands in for stands, and says whether
// there was one.
func (s *Pool) Drop(stands []string) bool { return s.dropWarm(stands, nil) }

// dropWarm ends the warm process that stands in for stands if it is only
// (nil: whichever it is), and says whether it did.
func (s *Pool) dropWarm(stands []string, only *Process) bool {
	key := warmKey(stands)
	s.mu.Lock()
	w := s.warms[key]
	if w == nil || only != nil && w != only {
		s.mu.Unlock()
		return false
	}
	delete(s.warms, key)
	s.mu.Unlock()
	_ = unix.Kill(-w.pid, unix.SIGKILL)
	// Its pipes close once its failure is read (tail needs stderr).
	if only == nil {
		w.close()
	}
	return true
}

// Take hands an exec the warm process that stands in for it, or says
// why none can. The caller holds the lock.
func (s *Pool) Take(req supervisor.ExecRequest, env []string, dir string) (*Process, string) {
	if len(s.warms) == 0 {
		return nil, "no warm process"
	}
	why := "another command"
	for key, w := range s.warms {
		switch {
		case len(req.Argv) < len(w.req.Stands) || !slices.Equal(req.Argv[:len(w.req.Stands)], w.req.Stands):
			continue
		case w.req.Exact && len(req.Argv) != len(w.req.Stands):
			why = "other arguments"
		case dir != w.dir:
			why = "another directory"
		case !sameEnv(env, w.env):
			why = "another environment"
		case w.isolated != s.spawner.Effective(req.Isolate):
			why = "another isolation"
		default:
			delete(s.warms, key)
			return w, ""
		}
	}
	return nil, why
}

// sameEnv says whether two environments hold the same variables.
func sameEnv(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Go hands w its run: the program's argv, environment and directory go
// down its go pipe.
func (w *Process) Go(argv, env []string, dir string) {
	_, _ = w.goW.Write(goMessage(argv, env, dir))
	w.goW.Close()
}

// goMessage is what a warm process reads on fd 3: NUL-terminated fields,
// the argv's count and its elements, the environment's count and its
// KEY=VALUE pairs, then the directory.
func goMessage(argv, env []string, dir string) []byte {
	var b bytes.Buffer
	field := func(s string) { b.WriteString(s); b.WriteByte(0) }
	field(strconv.Itoa(len(argv)))
	for _, a := range argv {
		field(a)
	}
	field(strconv.Itoa(len(env)))
	for _, kv := range env {
		field(kv)
	}
	field(dir)
	return b.Bytes()
}

// writeWarmFiles writes a warm process's hook under supervisor.WarmDir.
func (s *Pool) writeWarmFiles(files []supervisor.File) error {
	dir := filepath.Join(s.buildDir, strings.TrimPrefix(supervisor.WarmDir, supervisor.BuildDir+"/"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		rel, ok := strings.CutPrefix(filepath.Clean(f.Path), supervisor.WarmDir+"/")
		if !ok || strings.Contains(rel, "/") {
			return fmt.Errorf("%s is not a file of %s", f.Path, supervisor.WarmDir)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// PIDs are the pids of the warm processes; the caller holds the lock.
func (s *Pool) PIDs() []int {
	var pids []int
	for _, w := range s.warms {
		pids = append(pids, w.pid)
	}
	return pids
}

// Reaped forgets a warm process or zygote that ended as pid; the caller
// holds the lock.
func (s *Pool) Reaped(pid int) {
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
