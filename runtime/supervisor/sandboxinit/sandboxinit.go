// Package sandboxinit is sandbox-init, the supervisor that runs as PID 1
// in every sandbox container: the sandbox's end of the protocol of
// runtime/supervisor. It reaps zombies, starts executions on sandboxd's
// request, streams their output, enforces their deadlines, reports what
// they used, and makes a one-shot container fresh between runs (fresh.go,
// package fresh).
//
// It speaks on a Unix socket of sandboxd's, mounted into the container
// (Docker on sandboxd's host), on its stdin and stdout, which sandboxd
// attaches to through the Docker API (a remote engine), or, where
// attaching would put what programs print in the node's logs
// (Kubernetes), on a loopback port the runtime forwards to (package
// channel). cmd/sandbox-init is its static binary, bind-mounted
// read-only from the host (see runtime/docker), so it always matches the
// daemon that speaks to it and needs no image rebuild. Serve runs the
// same server outside a container, in a test's process (runtime/fake).
//
// Why PID 1: in a PID namespace only init may kill(-1), which ends every
// other process in the container in one call — the double-forked setsid
// child that escapes process-group kills included — and signals sent to init
// from inside the container are dropped unless init asks for them.
package sandboxinit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/channel"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/relay"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/spawn"
)

// Main is sandbox-init's main: the supervisor of the container whose PID
// 1 it is, or one of its helpers when started as one.
func Main() {
	runHelper(os.Args)
	if os.Getpid() != 1 {
		// kill(-1) outside a PID namespace would end every process of the user.
		fmt.Fprintln(os.Stderr, "sandbox-init: must run as PID 1 inside a sandbox container; sandboxd starts it")
		os.Exit(2)
	}
	// Same-uid sandbox code must not read or write our file descriptors
	// through /proc/1/fd, nor ptrace us. That makes our /proc files
	// root's: our own oom score is opened before (see spawn.KeepOOMScore).
	spawn.KeepOOMScore()
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)

	// Handle (and drop) every signal code in the container might send us:
	// Go's default for one nobody asked for (SIGSEGV, SIGABRT, SIGSYS sent
	// with kill among them) is to end the process. Synchronous faults of
	// our own still crash us as they should. Notify rather than Ignore:
	// ignored dispositions would be inherited by every program we start.
	drop := make(chan os.Signal, 64)
	signal.Notify(drop)
	go func() {
		for range drop {
		}
	}()
	// The signals Go keeps from os/signal (32 and 34) get a handler of
	// their own: at their default, a flood of signals killed us.
	if err := spawn.ShieldInit(); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: %v\n", err)
	}

	// Read before any program starts, and kept from all of them.
	listen, dial := os.Getenv(supervisor.EnvListen), os.Getenv(supervisor.EnvDial)
	token, tokenSum := os.Getenv(supervisor.EnvToken), os.Getenv(supervisor.EnvTokenSum)
	nproc := os.Getenv(supervisor.EnvNproc)
	for _, name := range []string{supervisor.EnvListen, supervisor.EnvDial, supervisor.EnvToken, supervisor.EnvTokenSum, supervisor.EnvNproc} {
		_ = os.Unsetenv(name)
	}
	unsetClusterEnv()
	keepTerminationLog()
	if err := limitProcesses(nproc); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: %v\n", err)
		os.Exit(2)
	}

	reserveThreads(supervisor.ReservedThreads)
	var out io.Writer = os.Stdout
	var ln net.Listener
	if listen != "" || dial != "" {
		out = &channel.Channel{}
	}
	if listen != "" {
		var err error
		if ln, err = net.Listen("tcp", listen); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox-init: %v\n", err)
			os.Exit(1)
		}
	}
	s := newServer(out, containerPaths, realContainer)
	if listen != "" {
		os.Stderr = s.diagnostics(os.Stderr)
	}
	egress := relay.ListenEgress()
	s.begin() // our own listeners are part of the sandbox as new
	go s.reap(nil)
	if egress != nil {
		go relay.Egress(egress)
	}
	switch {
	case listen != "":
		s.listenAndServe(out.(*channel.Channel), ln, tokenSum)
	case dial != "":
		s.dialAndServe(out.(*channel.Channel), dial, token)
	}
	if err := s.serve(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: reading stdin: %v\n", err)
	}
	// stdin closed: nobody can talk to us again.
	procs.KillAll(0)
	os.Exit(0)
}

// runHelper runs sandbox-init started as one of its helpers, if args say
// it was, and never returns then: a forwarded port's relay, or one of
// spawn's (the isolation helper, a session's holder and shim, the
// lockdown step).
func runHelper(args []string) {
	switch {
	case len(args) > 1 && args[1] == supervisor.RelayArg:
		relay.ForwardPort(args[2:])
	case len(args) > 1 && spawn.IsHelper(args[1]):
		spawn.HelperMain(args[1:])
	}
}

// Sandbox is where a supervisor outside a container acts (see Serve).
type Sandbox struct {
	// Workspace and Tmp stand for /workspace and /tmp; Scratch for the
	// other places a reset empties (/dev/shm, /dev/mqueue).
	Workspace, Tmp string
	Scratch        []string
	// EndAll ends every process the sandbox's programs left and says how
	// many survived (a container's supervisor kills all but itself).
	EndAll func() int
}

// Serve runs the supervisor in this process for sb, reading the host's
// messages from r and answering on w, until r ends; then it ends what its
// programs left. It waits only for the processes it started (the process
// is no container's init, and its other children are not its own to
// reap), never isolates a program, and leaves the host's IPC alone.
func Serve(r io.Reader, w io.Writer, sb Sandbox) error {
	s := newServer(w, paths{workspace: sb.Workspace, tmp: sb.Tmp, scratch: sb.Scratch},
		container{killAll: func(int) int { return sb.EndAll() }, clearIPC: func() {}, ownChildrenOnly: true})
	s.spawner.Plain() // no helper binary here
	s.begin()
	stop := make(chan struct{})
	reaped := make(chan struct{})
	go func() { s.reap(stop); close(reaped) }()
	err := s.serve(r)
	sb.EndAll()
	close(stop)
	<-reaped
	return err
}

// serve handles the host's messages until r ends.
func (s *server) serve(r io.Reader) error {
	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 64<<10), supervisor.MaxLine)
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue // the host's resync newline
		}
		var m supervisor.Message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			// A torn line after the host reattached: the next line resyncs.
			fmt.Fprintf(os.Stderr, "sandbox-init: ignoring a malformed message: %v\n", err)
			continue
		}
		s.handle(m)
	}
	return in.Err()
}

// Where a runtime does not speak to the supervisor on PID 1's stdio, a
// connection is the channel (see package channel), opened with a token
// the runtime sets in the environment (a listener is given only the
// token's SHA-256: see supervisor.EnvTokenSum). The environment of a
// non-dumpable PID 1 is readable by root alone, and the token is gone
// from it before any program starts, so code in the sandbox, which can
// reach the same socket, cannot take the channel over.

// listenAndServe serves sandboxd on ln (see channel.Listen).
func (s *server) listenAndServe(out *channel.Channel, ln net.Listener, tokenSum string) {
	channel.Listen(out, ln, tokenSum, s.serve, func() { s.logsWanted.Store(false) }) // until its hello asks
}

// dialAndServe serves sandboxd over its socket at path (see channel.Dial).
func (s *server) dialAndServe(out *channel.Channel, path, token string) {
	channel.Dial(out, path, token, s.serve)
}

// diagnostics is where our own messages go where our stderr is a node's
// log (see channel.Diagnostics): as OpLog, to a host that asked.
func (s *server) diagnostics(stderr *os.File) *os.File {
	return channel.Diagnostics(stderr, s.logsWanted.Load, func(line string) {
		s.send(supervisor.Message{Op: supervisor.OpLog, Data: []byte(line)})
	})
}

// reserveThreads makes the Go runtime start n OS threads now. A fork bomb
// fills the container's pids limit, and the runtime aborts when it cannot
// create a thread it needs; idle threads are parked and reused, never
// given back, so a reserve made at start carries the supervisor through.
// Each goroutine pins a thread of its own and holds it until all n hold
// one, so n threads exist at once (goroutines that only slept in turn let
// the runtime reuse a few: a reserve of 24 came out as 8, and a fork bomb
// then crashed the supervisor).
func reserveThreads(n int) {
	var pinned, done sync.WaitGroup
	pinned.Add(n)
	release := make(chan struct{})
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread() // unlocked, the thread stays in the pool
			pinned.Done()
			<-release
		}()
	}
	pinned.Wait()
	close(release)
	done.Wait()
}

// limitProcesses sets RLIMIT_NPROC (and no core dumps, 1024 files, as the
// Docker runtime's ulimits do) where the runtime asks for it.
func limitProcesses(nproc string) error {
	if nproc == "" {
		return nil
	}
	n, err := strconv.ParseUint(nproc, 10, 64)
	if err != nil {
		return fmt.Errorf("%s=%q: %v", supervisor.EnvNproc, nproc, err)
	}
	for res, v := range map[int]uint64{unix.RLIMIT_NPROC: n, unix.RLIMIT_NOFILE: 1024, unix.RLIMIT_CORE: 0} {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit %d to %d: %v", res, v, err)
		}
	}
	return nil
}

// unsetClusterEnv removes what a kubelet puts in every container's
// environment whatever the pod says (enableServiceLinks covers only other
// services): the API server's address, KUBERNETES_SERVICE_HOST and the
// rest. A program has no use for it, and no network to reach it.
func unsetClusterEnv() {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "KUBERNETES_SERVICE_") || strings.HasPrefix(name, "KUBERNETES_PORT") {
			_ = os.Unsetenv(name)
		}
	}
}
