package testutil

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Engine is a Docker engine of a test's own, so that the test may stop and
// start it without touching the engine every other test uses. It runs with
// the project's network rules (no bridge, no iptables, no masquerading),
// on a Unix socket only, with its data in a temporary directory.
type Engine struct {
	Host string // unix:// address for DOCKER_HOST or docker { host }
	// TCPHost and CertDir are set by StartTLSEngine: the engine's TCP
	// address, and a directory as DOCKER_CERT_PATH lays it out (ca.pem,
	// cert.pem, key.pem) with what a client needs to reach it.
	TCPHost, CertDir string

	args   []string // dockerd's, beyond the common ones
	dir    string
	t      T
	pid    int
	exited chan struct{} // closed when the running dockerd has exited
}

// StartEngine starts an engine and loads images into it from the main
// engine. Cleanup removes its containers, stops it and deletes its data.
func StartEngine(t T, images ...string) *Engine {
	t.Helper()
	return startEngine(t, false, images)
}

// StartTLSEngine is StartEngine for an engine that also listens on a
// loopback TCP port with TLS and verifies its clients (dockerd
// --tlsverify), with certificates of a CA the test made.
func StartTLSEngine(t T, images ...string) *Engine {
	t.Helper()
	return startEngine(t, true, images)
}

func startEngine(t T, withTLS bool, images []string) *Engine {
	RequireDocker(t, images...)
	dir, err := os.MkdirTemp("/tmp", "sbxe-") // socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Host: "unix://" + filepath.Join(dir, "d.sock"), dir: dir, t: t}
	if withTLS {
		e.listenTLS()
	}
	t.Cleanup(func() {
		if ids, err := e.docker("ps", "-aq"); err == nil && len(ids) > 0 {
			_, _ = e.docker(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
		}
		e.Stop()
		e.endShims()
		_ = os.RemoveAll(dir)
	})
	e.Start()
	for _, img := range images {
		save := exec.Command("docker", "save", img)
		load := exec.Command("docker", "-H", e.Host, "load")
		pipe, err := save.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		load.Stdin = pipe
		if err := save.Start(); err != nil {
			t.Fatal(err)
		}
		out, err := load.CombinedOutput()
		if werr := save.Wait(); err != nil || werr != nil {
			t.Fatalf("loading %s into the test engine: %v %v\n%s", img, err, werr, out)
		}
	}
	return e
}

// listenTLS makes the certificates and adds the TCP listener to dockerd's
// arguments.
func (e *Engine) listenTLS() {
	e.CertDir = filepath.Join(e.dir, "client")
	server := filepath.Join(e.dir, "server")
	for _, d := range []string{e.CertDir, server} {
		if err := os.Mkdir(d, 0o700); err != nil {
			e.t.Fatal(err)
		}
	}
	ca := NewCA(e.t, "sandboxd test engine CA")
	ca.WriteCert(e.t, filepath.Join(e.CertDir, "ca.pem"))
	ca.WriteCert(e.t, filepath.Join(server, "ca.pem"))
	cert, key := ca.Issue(e.t, server, "engine", "127.0.0.1")
	ca.Issue(e.t, e.CertDir, "cert") // cert.pem, cert-key.pem
	if err := os.Rename(filepath.Join(e.CertDir, "cert-key.pem"), filepath.Join(e.CertDir, "key.pem")); err != nil {
		e.t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	e.TCPHost = "tcp://" + l.Addr().String()
	l.Close()
	e.args = []string{"-H", e.TCPHost, "--tlsverify", "--tlscacert", filepath.Join(server, "ca.pem"), "--tlscert", cert, "--tlskey", key}
}

func (e *Engine) docker(args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"-H", e.Host}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Start starts the engine (again) and returns once it answers.
func (e *Engine) Start() {
	e.t.Helper()
	log, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("dockerd", "--data-root", filepath.Join(e.dir, "data"), "--exec-root", filepath.Join(e.dir, "exec"),
		"-H", e.Host, "--pidfile", filepath.Join(e.dir, "d.pid"), "--bridge=none", "--iptables=false", "--ip-masq=false")
	cmd.Args = append(cmd.Args, e.args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Stopped, with its containers, when the test process ends without
	// its cleanup (go test's timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.pid, e.exited = cmd.Process.Pid, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(e.exited)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := e.docker("info"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
			e.t.Fatalf("the test engine did not answer in 60s:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops the engine (SIGTERM, as an operator would) and returns once
// its process has exited: it removes its socket last, so a Start before
// that would lose the new socket. Its containers stop with it.
func (e *Engine) Stop() {
	if e.exited == nil {
		return // not running
	}
	_ = syscall.Kill(e.pid, syscall.SIGTERM)
	select {
	case <-e.exited:
		e.exited = nil
	case <-time.After(60 * time.Second):
		e.t.Errorf("the test engine (pid %d) did not stop in 60s", e.pid)
	}
}

// endShims ends, by PID, the container shims of this engine's containerd
// that outlived it, and what still runs under them: a shim whose task
// the engine's shutdown killed waits, with parent 1, for a containerd that
// is gone to delete it. They are found by the engine's own exec root in
// their arguments.
func (e *Engine) endShims() {
	root := filepath.Join(e.dir, "exec") + "/"
	parents := map[int]int{}
	var shims []int
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "stat")); err == nil {
			if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 1 {
				parents[pid], _ = strconv.Atoi(f[1])
			}
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, root) }) {
			shims = append(shims, pid)
		}
	}
	for _, shim := range shims {
		for pid, parent := range parents {
			if parent == shim {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = syscall.Kill(shim, syscall.SIGKILL)
		e.t.Logf("ended container shim %d, which outlived the test engine", shim)
	}
}

// Freeze stops the engine's process (SIGSTOP): it keeps its socket and
// answers nothing, as an engine stuck removing a container does, until
// Thaw. Cleanup thaws it.
func (e *Engine) Freeze() {
	e.t.Helper()
	if err := syscall.Kill(e.pid, syscall.SIGSTOP); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(e.Thaw)
}

// Thaw lets a frozen engine go on.
func (e *Engine) Thaw() { _ = syscall.Kill(e.pid, syscall.SIGCONT) }

// Containers lists the ids of the engine's containers with label (k=v).
func (e *Engine) Containers(label string) []string {
	e.t.Helper()
	out, err := e.docker("ps", "-aq", "--filter", "label="+label)
	if err != nil {
		e.t.Fatalf("docker ps: %v: %s", err, out)
	}
	return strings.Fields(out)
}
