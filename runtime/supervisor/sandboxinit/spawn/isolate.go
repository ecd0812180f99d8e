package spawn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Isolation puts a one-shot program's processes in a PID namespace of
// their own, out of the supervisor's sight and reach (see spawn). Only a
// process that is dumpable may map ids into the user namespace that lets
// an unprivileged process make one, and the supervisor is not (so that
// same-uid programs can neither ptrace it nor open its /proc files): so
// the supervisor starts a copy of itself, the helper, which starts the
// program in the namespaces as the supervisor's own child (CLONE_PARENT:
// the supervisor reaps it and reads how it ended and what it used, as for
// any program), says its pid, and exits.
const (
	// helperArg: sandbox-init HELPER NFILES SETPGID SETSID LOCK PATH
	// ARGV... starts PATH (locked down if LOCK is 1: see lockdown.go)
	// with the helper's first NFILES descriptors; the next one is where
	// it reports "pid N" or "error ...".
	helperArg = "-isolate"
	// probeArg: the helper starts a copy of itself as probeInitArg in
	// the namespaces, waits, and says on stdout whether the runtime lets
	// a program have them and does not shield their first process from
	// its own signals, as Linux does (isolation is for gVisor, which does
	// not; under runc Docker's seccomp profile refuses the namespaces).
	probeArg     = "-isolation-probe"
	probeInitArg = "-isolation-probe-init"
)

// namespaceFlags are the namespaces an isolated program gets.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID

// IsHelper says whether sandbox-init was started as the helper.
func IsHelper(arg string) bool {
	switch arg {
	case helperArg, probeArg, probeInitArg, holdArg, shimArg, lockedArg:
		return true
	}
	return false
}

// HelperMain runs sandbox-init started with one of the helper's
// arguments; it never returns.
func HelperMain(args []string) {
	switch args[0] {
	case helperArg:
		startIsolated(args[1:])
	case probeArg:
		probe()
	case holdArg:
		hold()
	case shimArg:
		shim(args[1:])
	case lockedArg:
		locked(args[1:])
	case probeInitArg:
		// Signals to ourselves, with the default action: in a namespace
		// whose first process the kernel shields, we live on.
		_ = unix.Kill(os.Getpid(), unix.SIGTERM)
		time.Sleep(200 * time.Millisecond)
		os.Exit(0)
	}
	os.Exit(2)
}

// namespaced is a SysProcAttr for a process in namespaces of its own, as
// our uid and gid.
func namespaced(extra uintptr) *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Cloneflags:  namespaceFlags | extra,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
}

// startIsolated is the helper: see helperArg.
func startIsolated(args []string) {
	nfiles := -1
	if len(args) >= 6 {
		nfiles, _ = strconv.Atoi(args[0])
	}
	if nfiles < 0 || nfiles > 64 {
		fmt.Fprintln(os.Stderr, "sandbox-init: want NFILES SETPGID SETSID LOCK PATH ARGV...")
		os.Exit(2)
	}
	unix.CloseOnExec(nfiles) // the program must not hold it: the supervisor reads to its end
	report := os.NewFile(uintptr(nfiles), "report")
	files := make([]uintptr, nfiles)
	for i := range files {
		files[i] = uintptr(i)
	}
	sys := namespaced(unix.CLONE_PARENT)
	sys.Setpgid = args[1] == "1"
	if args[2] == "1" {
		sys.Setsid, sys.Setctty, sys.Ctty = true, true, 0
	}
	fork := func(path string, argv []string, files []uintptr) (int, error) {
		return syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: files, Sys: sys})
	}
	var pid int
	var err error
	if args[3] == "1" {
		self, _ := os.Executable()
		pid, err = startLocked(fork, self, args[4], args[5:], files)
	} else {
		pid, err = fork(args[4], args[5:], files)
	}
	if err != nil {
		fmt.Fprintf(report, "error: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(report, "pid %d\n", pid)
	os.Exit(0)
}

// probe is the helper's probe: see probeArg.
func probe() {
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"sandbox-init", probeInitArg},
		&syscall.ProcAttr{Files: []uintptr{0, 1, 2}, Sys: namespaced(0)})
	if err != nil {
		fmt.Printf("refused: %v\n", err)
		os.Exit(0)
	}
	var ws unix.WaitStatus
	_ = IgnoringEINTR(func() error { _, err := unix.Wait4(pid, &ws, 0, nil); return err })
	if ws.Signaled() && ws.Signal() == unix.SIGTERM {
		fmt.Println("isolate")
	} else {
		fmt.Println("shielded")
	}
	os.Exit(0)
}

// canIsolate says whether programs here get namespaces of their own:
// asked of the helper's probe once.
func (s *Spawner) canIsolate() bool {
	s.isolation.Do(func() {
		r, w, err := os.Pipe()
		if err != nil {
			return
		}
		defer r.Close()
		_, err = syscall.ForkExec(s.self, []string{"sandbox-init", probeArg}, &syscall.ProcAttr{Files: []uintptr{0, w.Fd(), 2}})
		w.Close()
		if err != nil {
			return
		}
		out, _ := io.ReadAll(io.LimitReader(r, 256))
		s.isolating = string(out) == "isolate\n"
	})
	return s.isolating
}

// spawnIsolated starts argv0 through the helper (see helperArg) with
// sys's process group and terminal, locked down if lock is set, and
// returns its pid. It runs on the
// forker's thread, with s.mu held: the reaper, which may reap the program
// before we know its pid, waits for the caller to record it.
func (s *Spawner) spawnIsolated(argv0 string, argv []string, dir string, env []string, files []uintptr, sys *syscall.SysProcAttr, lock bool) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	flag := func(b bool) string { return map[bool]string{true: "1", false: "0"}[b] }
	helper := append([]string{"sandbox-init", helperArg, strconv.Itoa(len(files)), flag(sys.Setpgid), flag(sys.Setsid), flag(lock), argv0}, argv...)
	_, err = syscall.ForkExec(s.self, helper, &syscall.ProcAttr{Dir: dir, Env: env, Files: append(files, w.Fd())})
	w.Close()
	if err != nil {
		return 0, err
	}
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	out, _ := io.ReadAll(io.LimitReader(r, 4096))
	line := strings.TrimSpace(string(out))
	if n, ok := strings.CutPrefix(line, "pid "); ok {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			return pid, nil
		}
	}
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return 0, errors.New(msg)
	}
	return 0, fmt.Errorf("isolating the program: the helper said %q", line)
}

// IgnoringEINTR makes a raw system call again while a signal interrupts
// it: the Go runtime's own (preemption, SIGCHLD to the reaper) interrupt
// calls that its wrappers in os and net would have retried.
func IgnoringEINTR(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}
