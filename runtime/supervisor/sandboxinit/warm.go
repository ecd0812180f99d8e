package sandboxinit

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
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/environ"
)

// warmProcess is a language's runtime started ahead of the exec it will
// run: started as that exec's process would be (the sandbox's uid, a
// process group of its own, niced, first to go when memory runs out),
// with the pipes that become that exec's stdin, stdout and stderr. Its
// fd 3 is where the program's argv, environment and directory arrive; on
// fd 4 it says it is ready (see the language package's WarmProtocol).
type warmProcess struct {
	pid      int
	isolated supervisor.Isolation // the namespace it got (see spawn)
	req      supervisor.WarmRequest
	env      []string // the environment of the runs it stands in for
	dir      string
	stdinW   *os.File
	outR     *os.File
	errR     *os.File
	goW      *os.File
}

// close releases our ends of a warm process that will run nothing.
func (w *warmProcess) close() { closeFiles(w.stdinW, w.outR, w.errR, w.goW) }

func closeFiles(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// warmUp starts a warm process, replacing one not yet used that stands in
// for the same argv, and calls done once it is ready, or has failed.
func (s *server) warmUp(req supervisor.WarmRequest, done func(error)) {
	s.dropWarm(req.Stands, nil)
	if len(req.Argv) == 0 || len(req.Stands) == 0 {
		done(errors.New("a warm process needs argv and the argv it stands in for"))
		return
	}
	if err := s.writeWarmFiles(req.Files); err != nil {
		done(fmt.Errorf("writing the warm hook: %w", err))
		return
	}
	w := &warmProcess{req: req, env: environ.Merge(os.Environ(), req.Env), dir: req.Dir}
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
	w.stdinW, w.outR, w.errR, w.goW = ws[0], rs[1], rs[2], ws[3]
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
func (s *server) awaitWarm(w *warmProcess, readyR *os.File, child []*os.File, err error, done func(error)) {
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
				err = fmt.Errorf("%w: %s", err, tail(w.errR))
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

// dropWarm ends the warm process that stands in for stands if it is only
// (nil: whichever it is), and says whether it did.
func (s *server) dropWarm(stands []string, only *warmProcess) bool {
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

// takeWarm hands an exec the warm process that stands in for it, or says
// why none can. The caller holds s.mu.
func (s *server) takeWarm(req supervisor.ExecRequest, env []string, dir string) (*warmProcess, string) {
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

// handOver makes the warm process e's: its pipes are e's, and the
// program's argv, environment and directory go down its go pipe.
func (e *execution) handOver(w *warmProcess, env []string, dir string) {
	e.outR, e.errR = w.outR, w.errR
	if e.req.Stdin {
		e.stdinW = w.stdinW
		e.stdinCh = make(chan []byte, 1)
		go e.writeStdin()
	} else {
		w.stdinW.Close() // an empty stdin, as a cold start has
	}
	_, _ = w.goW.Write(goMessage(e.req.Argv, env, dir))
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
func (s *server) writeWarmFiles(files []supervisor.File) error {
	dir := filepath.Join(s.buildDir(), strings.TrimPrefix(supervisor.WarmDir, supervisor.BuildDir+"/"))
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
