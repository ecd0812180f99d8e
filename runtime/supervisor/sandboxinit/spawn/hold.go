package spawn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// A session's processes outlive the exec that started them, later execs
// see them, and a PID namespace ends with its first process. So where
// programs are isolated (see isolate.go), a session's share one namespace
// (supervisor.IsolateSession) whose first process is the holder:
// sandbox-init started through the helper, the supervisor's child. The
// holder starts each program as its own child, through a copy of
// sandbox-init (the shim) that tells the supervisor its pid as the
// supervisor sees it (the kernel translates SCM_CREDENTIALS across
// namespaces) and execs the program. It reaps every process of the
// namespace and reports how each it started ended and what it used, which
// the supervisor takes as its own reaper's. A program that kills the
// holder ends the session's processes with the namespace, never the
// supervisor; the next program starts a new one.
const (
	// holdArg: sandbox-init -hold, its socket to the supervisor on fd 3
	// (SOCK_SEQPACKET): a holdStart arrives with the descriptors of the
	// shim to start, and holdReports go back.
	holdArg = "-hold"
	// shimArg: sandbox-init -held FD, with the program's descriptors below
	// FD and a socket on FD where the heldSpec arrives (to its end) and
	// where the shim says its pid, then why it could not exec, if it could
	// not.
	shimArg = "-held"
	// holderFD is the holder's socket.
	holderFD = 3
)

// holdStart asks the holder for a shim, with its descriptors in the
// message's rights.
type holdStart struct {
	Setpgid bool `json:"setpgid,omitempty"`
	Setsid  bool `json:"setsid,omitempty"` // with fd 0 as its controlling terminal
}

// holdReport is the holder's answer to a holdStart (Started or Error), or
// how a process of its namespace ended (Exited, with its usage).
type holdReport struct {
	Started int    `json:"started,omitempty"` // the shim's pid in the namespace
	Error   string `json:"error,omitempty"`
	Exited  int    `json:"exited,omitempty"` // a pid in the namespace
	Status  uint32 `json:"status,omitempty"`
	UserUS  int64  `json:"user_us,omitempty"`
	SysUS   int64  `json:"sys_us,omitempty"`
	MaxRSS  int64  `json:"max_rss_kb,omitempty"`
}

// heldSpec is what the shim execs.
type heldSpec struct {
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

// hold is the holder: see holdArg. It never returns.
func hold() {
	unix.CloseOnExec(holderFD) // no program may hold it: its end is how the supervisor knows we died
	// Not dumpable, as the supervisor is not: the session's programs run
	// as our uid, and may neither ptrace us nor open our /proc files.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// Signals a program can send are dropped (as the supervisor drops
	// them), except SIGKILL, which ends the namespace.
	drop := make(chan os.Signal, 64)
	signal.Notify(drop)
	// And those the Go runtime leaves at their default: a namespace's
	// first process died of them (see ShieldInit).
	if err := ShieldInit(); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: the holder: %v\n", err)
	}
	var mu sync.Mutex // a shim's Started goes out before its Exited
	send := func(r holdReport) {
		b, _ := json.Marshal(r)
		_ = unix.Sendmsg(holderFD, b, nil, nil, 0)
	}
	go func() {
		for range drop {
			for {
				var ws unix.WaitStatus
				var ru unix.Rusage
				mu.Lock()
				pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
				if err == nil && pid > 0 {
					send(holdReport{Exited: pid, Status: uint32(ws), UserUS: ru.Utime.Sec*1e6 + int64(ru.Utime.Usec),
						SysUS: ru.Stime.Sec*1e6 + int64(ru.Stime.Usec), MaxRSS: ru.Maxrss})
				}
				mu.Unlock()
				if err != nil || pid <= 0 {
					break
				}
			}
		}
	}()
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*64))
	for {
		var n, oobn int
		err := IgnoringEINTR(func() (err error) {
			n, oobn, _, _, err = unix.Recvmsg(holderFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
			return err
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandbox-init: the holder's channel: %v\n", err)
		}
		if err != nil || n == 0 {
			os.Exit(0) // the supervisor is gone; the namespace ends with us
		}
		fds := receivedRights(oob[:oobn])
		var req holdStart
		if err := json.Unmarshal(buf[:n], &req); err != nil || len(fds) == 0 {
			closeFDs(fds)
			send(holdReport{Error: "a malformed start"})
			continue
		}
		files := make([]uintptr, len(fds))
		for i, fd := range fds {
			files[i] = uintptr(fd)
		}
		mu.Lock()
		pid, err := syscall.ForkExec("/proc/self/exe", []string{"sandbox-init", shimArg, strconv.Itoa(len(fds) - 1)}, &syscall.ProcAttr{
			Files: files, Sys: &syscall.SysProcAttr{Setpgid: req.Setpgid, Setsid: req.Setsid, Setctty: req.Setsid}})
		if err != nil {
			send(holdReport{Error: err.Error()})
		} else {
			send(holdReport{Started: pid})
		}
		mu.Unlock()
		closeFDs(fds)
	}
}

func init() {
	// The shim says its pid by SCM_CREDENTIALS, which gVisor fills with
	// the sending thread's id: sent from the main thread, that is the
	// pid. Locked in init, main runs there.
	if len(os.Args) > 1 && os.Args[1] == shimArg {
		runtime.LockOSThread()
	}
}

// shim is the shim: see shimArg. It never returns.
func shim(args []string) {
	fd := -1
	if len(args) == 1 {
		fd, _ = strconv.Atoi(args[0])
	}
	if fd < 3 {
		os.Exit(2)
	}
	unix.CloseOnExec(fd) // closed by the exec: the supervisor's sign that it worked
	fail := func(err error) {
		_, _ = unix.Write(fd, []byte("error: "+err.Error()))
		os.Exit(127)
	}
	data, err := io.ReadAll(io.LimitReader(os.NewFile(uintptr(fd), "spec"), supervisor.MaxLine))
	var spec heldSpec
	if err == nil {
		err = json.Unmarshal(data, &spec)
	}
	if err != nil {
		fail(err)
	}
	self := unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	if err := unix.Sendmsg(fd, []byte("pid"), unix.UnixCredentials(&self), nil, 0); err != nil {
		os.Exit(127)
	}
	if err := os.Chdir(spec.Dir); err != nil {
		fail(err)
	}
	if err := lockDown(); err != nil {
		fail(err)
	}
	fail(syscall.Exec(spec.Path, spec.Argv, spec.Env))
}

// holder is the supervisor's end of a session namespace's holder.
type holder struct {
	pid     int // in our namespace
	conn    int // our end of its socket
	replies chan holdReport

	mu    sync.Mutex
	procs map[int]*heldProcess // what it started, by pid in its namespace; nil once it died
}

// heldProcess is a process the holder started.
type heldProcess struct {
	pid   int         // in our namespace, once the shim said
	ended *holdReport // how it ended, if that came before its pid
}

// killed is the status of a process the holder's end took with it.
const killed = unix.WaitStatus(unix.SIGKILL)

// end kills the holder, and its namespace with it.
func (h *holder) end() { _ = unix.Kill(h.pid, unix.SIGKILL) }

// gone says whether the holder died.
func (h *holder) gone() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.procs == nil
}

// sessionHolder is the holder of the session's namespace, started if
// there is none (or it died). Called with s.mu held, on the forker's
// thread.
func (s *Spawner) sessionHolder() (*holder, error) {
	if h := s.holder; h != nil && !h.gone() {
		// A program may have stopped it (SIGSTOP is not a signal it can
		// drop, nor one the kernel keeps from it under gVisor).
		_ = unix.Kill(h.pid, unix.SIGCONT)
		return h, nil
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		closeFDs(pair[:])
		return nil, err
	}
	null := devnull.Fd()
	pid, err := s.spawnIsolated(s.self, []string{"sandbox-init", holdArg}, "/", nil,
		[]uintptr{null, null, os.Stderr.Fd(), uintptr(pair[1])}, &syscall.SysProcAttr{Setpgid: true}, false)
	devnull.Close()
	unix.Close(pair[1])
	if err != nil {
		unix.Close(pair[0])
		return nil, err
	}
	h := &holder{pid: pid, conn: pair[0], replies: make(chan holdReport, 1), procs: map[int]*heldProcess{}}
	s.holder = h
	s.holders[pid] = true
	go s.followHolder(h)
	return h, nil
}

// followHolder reads h's reports until it dies, and hands each exit to
// the reaper's code, as if we had reaped it.
func (s *Spawner) followHolder(h *holder) {
	buf := make([]byte, 4096)
	for {
		var n int
		err := IgnoringEINTR(func() (err error) {
			n, _, _, _, err = unix.Recvmsg(h.conn, buf, nil, 0)
			return err
		})
		if err != nil || n == 0 {
			break
		}
		var r holdReport
		if json.Unmarshal(buf[:n], &r) != nil {
			continue
		}
		h.mu.Lock()
		switch p := h.procs[r.Exited]; {
		case r.Exited == 0:
			if r.Started > 0 {
				h.procs[r.Started] = &heldProcess{}
			}
			select {
			case h.replies <- r:
			default: // nobody asked
			}
		case p == nil: // not one it started for us: its use still counts
			go s.reaped(0, unix.WaitStatus(r.Status), r.usage())
		case p.pid == 0:
			p.ended = &r
		default:
			delete(h.procs, r.Exited)
			go s.reaped(p.pid, unix.WaitStatus(r.Status), r.usage())
		}
		h.mu.Unlock()
	}
	// The holder died, and every process of its namespace with it.
	h.mu.Lock()
	procs := h.procs
	h.procs = nil
	h.mu.Unlock()
	close(h.replies)
	unix.Close(h.conn)
	for _, p := range procs {
		if p.pid > 0 {
			go s.reaped(p.pid, killed, &unix.Rusage{})
		}
	}
}

// usage is r's resource use as wait4 gives it.
func (r *holdReport) usage() *unix.Rusage {
	return &unix.Rusage{Utime: unix.NsecToTimeval(r.UserUS * 1000), Stime: unix.NsecToTimeval(r.SysUS * 1000), Maxrss: r.MaxRSS}
}

// spawnHeld starts argv0 in the session's namespace (see holdArg) with
// sys's process group and terminal, and returns its pid. Like
// spawnIsolated, it runs on the forker's thread with s.mu held.
func (s *Spawner) spawnHeld(argv0 string, argv []string, dir string, env []string, files []uintptr, sys *syscall.SysProcAttr) (int, error) {
	h, err := s.sessionHolder()
	if err != nil {
		return 0, fmt.Errorf("starting the session's namespace: %w", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	ours, shimEnd := pair[0], pair[1]
	defer unix.Close(ours)
	_ = unix.SetsockoptInt(ours, unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	_ = unix.SetsockoptTimeval(ours, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	fds := make([]int, 0, len(files)+1)
	for _, f := range files {
		fds = append(fds, int(f))
	}
	start, _ := json.Marshal(holdStart{Setpgid: sys.Setpgid, Setsid: sys.Setsid})
	err = IgnoringEINTR(func() error {
		return unix.Sendmsg(h.conn, start, unix.UnixRights(append(fds, shimEnd)...), nil, 0)
	})
	unix.Close(shimEnd)
	if err != nil {
		h.end()
		return 0, err
	}
	var r holdReport
	select {
	case r = <-h.replies:
	case <-time.After(10 * time.Second):
		h.end()
		return 0, errors.New("the session's namespace did not answer")
	}
	switch {
	case r.Error != "":
		return 0, errors.New(r.Error)
	case r.Started == 0:
		return 0, errors.New("the session's namespace ended")
	}
	// The spec goes to the shim directly: it can be as large as an exec's.
	spec, _ := json.Marshal(heldSpec{Path: argv0, Argv: argv, Env: env, Dir: dir})
	written := make(chan struct{})
	go func() {
		defer close(written)
		for len(spec) > 0 {
			var n int
			err := IgnoringEINTR(func() (err error) {
				n, err = unix.Write(ours, spec)
				return err
			})
			if err != nil {
				break
			}
			spec = spec[n:]
		}
		_ = unix.Shutdown(ours, unix.SHUT_WR)
	}()
	pid, err := shimsPID(ours)
	if err != nil {
		_ = unix.Shutdown(ours, unix.SHUT_RDWR) // the writer's too
	}
	<-written

	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.procs[r.Started]
	if err != nil {
		delete(h.procs, r.Started) // its end is only usage now
		return 0, err
	}
	switch {
	case h.procs == nil: // the holder died meanwhile, and the program with it
		go s.reaped(pid, killed, &unix.Rusage{})
	case p.ended != nil:
		delete(h.procs, r.Started)
		go s.reaped(pid, unix.WaitStatus(p.ended.Status), p.ended.usage())
	default:
		p.pid = pid
	}
	return pid, nil
}

// shimsPID reads, from our end of a shim's socket, its pid in our
// namespace, and then whether its exec worked: it did if the socket
// closed with nothing more said.
func shimsPID(conn int) (int, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	var n, oobn int
	err := IgnoringEINTR(func() (err error) {
		n, oobn, _, _, err = unix.Recvmsg(conn, buf, oob, 0)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("the program's start: %w", err)
	}
	pid := 0
	msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for i := range msgs {
		if cred, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			pid = int(cred.Pid)
		}
	}
	said := bytes.TrimPrefix(buf[:n], []byte("pid"))
	if pid <= 0 {
		return 0, fmt.Errorf("the program's start: %q", said)
	}
	rest := append([]byte(nil), said...)
	for {
		var n int
		err := IgnoringEINTR(func() (err error) {
			n, err = unix.Read(conn, buf)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("the program's start: %w", err)
		}
		if n == 0 {
			break
		}
		rest = append(rest, buf[:n]...)
	}
	if msg, ok := bytes.CutPrefix(rest, []byte("error: ")); ok {
		return 0, errors.New(string(msg))
	}
	return pid, nil
}

// receivedRights are the descriptors in a message's control data.
func receivedRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// closeFDs closes raw descriptors.
func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
