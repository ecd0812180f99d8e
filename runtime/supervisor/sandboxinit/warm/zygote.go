package warm

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/environ"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
)

// A zygote is a language's runtime loaded once and kept across runs, that
// forks each warm process instead of starting one (WarmRequest.Forks): a
// python warm process then costs a fork, about 1 ms of CPU, where starting
// the interpreter costs 17.
//
// It outlives the reset between one-shot runs (endAll spares it), so it
// must be out of the programs' reach, though it runs as their uid. It
// makes itself non-dumpable, so that no program may ptrace it or open its
// /proc files, and blocks the signals it may (SIGCHLD aside, ignored).
// What a program of its uid may still do to it (SIGKILL or SIGSTOP it,
// lower its limits, renice it, change its scheduling, CPU affinity or I/O
// priority, queue signals on it) would pass to every process it forks
// later: so before each fork the supervisor compares all of that with
// what it was when the zygote was ready, and replaces a zygote that
// differs in anything. A forked process makes itself dumpable again,
// unblocks its signals and forgets the modules the zygote imported, and
// starts as a warm process started from scratch does.
type zygote struct {
	key     string // what its warm processes stand in for (see zygoteKey)
	pid     int
	control *net.UnixConn // fork requests out, pids back
	replies *bufio.Reader
	errR    *os.File // its stdout and stderr
	traits  string   // what a program could change of it, as it was when ready
}

// zygoteEnv in a warm process's environment makes it a zygote.
const zygoteEnv = "SANDBOXD_WARM_FORK=1"

// forkTimeout bounds a zygote's answer to a fork request.
const forkTimeout = 5 * time.Second

// zygoteKey names what a zygote's warm processes stand in for.
func zygoteKey(w *Process) string {
	return strings.Join([]string{warmKey(w.req.Stands), warmKey(w.req.Argv), w.dir, warmKey(w.env), warmKey(w.req.Hook)}, "\x01")
}

// forks says whether w may be forked by a zygote here: its runtime can
// serve forks, nothing isolates it, and the supervisor is the container's
// init, which takes the orphans the zygote forks and so reaps them.
func (s *Pool) forks(w *Process) bool {
	if !w.req.Forks || s.ownChildrenOnly || os.Getpid() != 1 || s.spawner.Effective(w.req.Isolate) != supervisor.IsolateNone {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zygoteFailed != zygoteKey(w)
}

// liveZygote is the zygote that forks for key, if there is one and no
// program changed it; one that was changed, or forks for another key, is
// ended. The caller holds zygoteMu.
func (s *Pool) liveZygote(key string) *zygote {
	s.mu.Lock()
	z := s.zygote
	s.mu.Unlock()
	switch {
	case z == nil:
		return nil
	case z.key != key:
		s.endZygote(z)
		return nil
	}
	if why := z.changed(); why != "" {
		fmt.Fprintf(os.Stderr, "sandbox-init: replacing the zygote: %s\n", why)
		s.endZygote(z)
		return nil
	}
	return z
}

// errNoZygote: no zygote could be started, and child was handed to none.
var errNoZygote = errors.New("no zygote")

// forkWarm has z (nil: a zygote it starts) fork w with the descriptors
// child (stdin, stdout, stderr, go, ready), and adds w to the warm
// processes. The caller holds zygoteMu.
func (s *Pool) forkWarm(z *zygote, argv0 string, w *Process, child []*os.File) error {
	if z == nil {
		key := zygoteKey(w)
		var err error
		if z, err = s.startZygote(argv0, key, w); err != nil {
			s.mu.Lock()
			s.zygoteFailed = key
			s.mu.Unlock()
			return fmt.Errorf("%w: %w", errNoZygote, err)
		}
	}
	pid, err := z.fork(child)
	if err != nil {
		s.endZygote(z)
		return err
	}
	s.mu.Lock()
	w.pid = pid
	s.warms[warmKey(w.req.Stands)] = w
	s.mu.Unlock()
	return nil
}

// startZygote starts w's runtime as a zygote and waits for it to be ready.
func (s *Pool) startZygote(argv0, key string, w *Process) (*zygote, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "zygote"), os.NewFile(uintptr(pair[1]), "zygote")
	defer theirs.Close()
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, err
	}
	z := &zygote{key: key, control: conn.(*net.UnixConn)}
	z.replies = bufio.NewReader(z.control)
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		z.control.Close()
		return nil, err
	}
	defer devNull.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		z.control.Close()
		return nil, err
	}
	defer errW.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		z.control.Close()
		errR.Close()
		return nil, err
	}
	defer readyR.Close()
	z.errR = errR
	fds := []uintptr{devNull.Fd(), errW.Fd(), errW.Fd(), theirs.Fd(), readyW.Fd()}
	env := append(environ.Merge(w.env, w.req.Hook), zygoteEnv)
	s.mu.Lock()
	z.pid, _, err = s.spawner.Spawn(argv0, w.req.Argv, w.dir, env, fds, &syscall.SysProcAttr{Setpgid: true}, supervisor.IsolateNone)
	if err == nil {
		s.zygote = z
	}
	s.mu.Unlock()
	readyW.Close()
	if err != nil {
		z.close()
		return nil, err
	}
	if err := awaitReady(readyR, time.Duration(w.req.TimeoutMS)*time.Millisecond); err != nil {
		err = fmt.Errorf("the zygote: %w: %s", err, tail(z.errR))
		s.endZygote(z)
		return nil, err
	}
	if z.traits, err = traitsOf(z.pid); err != nil {
		s.endZygote(z)
		return nil, err
	}
	return z, nil
}

// fork asks z for a warm process with the descriptors child and returns
// its pid.
func (z *zygote) fork(child []*os.File) (int, error) {
	fds := make([]int, len(child))
	for i, f := range child {
		fds[i] = int(f.Fd())
	}
	_ = z.control.SetDeadline(time.Now().Add(forkTimeout))
	if _, _, err := z.control.WriteMsgUnix([]byte{'f'}, unix.UnixRights(fds...), nil); err != nil {
		return 0, fmt.Errorf("asking the zygote to fork: %w", err)
	}
	line, err := z.replies.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("the zygote did not answer: %w: %s", err, tail(z.errR))
	}
	line = strings.TrimSpace(line)
	if n, ok := strings.CutPrefix(line, "pid "); ok {
		if pid, err := strconv.Atoi(n); err == nil && pid > 1 {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("the zygote said %q", line)
}

// changed says what a program changed of z since it was ready ("": nothing).
func (z *zygote) changed() string {
	now, err := traitsOf(z.pid)
	if err != nil {
		return err.Error()
	}
	was := strings.Split(z.traits, "\n")
	for i, line := range strings.Split(now, "\n") {
		if i >= len(was) || line != was[i] {
			return fmt.Sprintf("%q, not %q", line, was[min(i, len(was)-1)])
		}
	}
	return ""
}

// endZygote kills z and forgets it.
func (s *Pool) endZygote(z *zygote) {
	s.mu.Lock()
	if s.zygote == z {
		s.zygote = nil
	}
	s.mu.Unlock()
	if z.pid > 0 {
		_ = unix.Kill(z.pid, unix.SIGKILL)
	}
	z.close()
}

func (z *zygote) close() {
	z.control.Close()
	z.errR.Close()
}

// ZygotePID is the running zygote's pid, which a reset spares (0: none).
func (s *Pool) ZygotePID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zygote == nil {
		return 0
	}
	return s.zygote.pid
}

// traitsOf is what a process of the zygote's uid may change of process
// pid and a fork of it would inherit: its limits, scheduling (nice
// included), CPU affinity, I/O priority, signal mask and pending signals,
// tracer; and an error if it is stopped or gone.
func traitsOf(pid int) (string, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	stat, err := procs.ReadFile(dir + "stat")
	if err != nil {
		return "", errors.New("it is gone")
	}
	if f := procs.StatFields(stat); len(f) == 0 || strings.ContainsAny(f[0], "TtZXx") {
		return "", fmt.Errorf("it is in state %v", f[:min(1, len(f))])
	}
	var out []string
	status, err := procs.ReadFile(dir + "status")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, _, _ := strings.Cut(line, ":")
		switch key {
		case "TracerPid", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt", "Cpus_allowed_list", "Mems_allowed_list", "NoNewPrivs", "Seccomp":
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	for _, file := range []string{"limits", "oom_score_adj"} {
		data, err := procs.ReadFile(dir + file)
		if err != nil {
			return "", err
		}
		out = append(out, strings.Split(strings.TrimSpace(string(data)), "\n")...)
	}
	attr, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		return "", err
	}
	out = append(out, fmt.Sprintf("sched %+v", *attr))
	const ioprioWhoProcess = 1
	prio, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(pid), 0)
	if errno != 0 {
		return "", errno
	}
	out = append(out, fmt.Sprintf("ioprio %d", prio))
	return strings.Join(out, "\n"), nil
}
