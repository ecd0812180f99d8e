// Package testutil starts real sandboxd daemons for end-to-end tests: it
// builds the binaries once per test process, writes a throwaway config,
// starts the daemon on a temporary socket and state dir, and removes every
// container the test's daemons created (by label) when the test ends, even
// when it fails.
//
// Docker is required: without an engine a test skips, except with CI=true,
// where it fails.
package testutil

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sandboxd/sandboxd/client"
)

// TestLabel marks every container a test daemon creates.
const TestLabel = "io.sandboxd.test-run"

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// T is what these helpers need of a test: a *testing.T, or a Main for a
// TestMain that shares one daemon between tests (example tests).
type T interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Skip(args ...any)
	Failed() bool
}

// Main is a T for TestMain: Close runs the cleanups; Fatal and Skip end
// the process (after them), as there is no test to end.
type Main struct {
	cleanups []func()
	failed   bool
}

func (m *Main) Helper() {}

func (m *Main) TempDir() string {
	d, err := os.MkdirTemp("", "sandboxd-main-")
	if err != nil {
		m.Fatal(err)
	}
	m.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func (m *Main) Cleanup(f func()) { m.cleanups = append(m.cleanups, f) }

func (m *Main) Errorf(format string, args ...any) {
	m.failed = true
	m.Logf(format, args...)
}

func (m *Main) Fatal(args ...any) { m.Fatalf("%s", fmt.Sprint(args...)) }

func (m *Main) Fatalf(format string, args ...any) {
	m.Errorf(format, args...)
	m.Close()
	os.Exit(1)
}

func (m *Main) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// Skip cannot skip what has not started: a TestMain checks
// DockerMissing itself (see client's). Here it fails, so that nothing
// reports ok without having run.
func (m *Main) Skip(args ...any) {
	m.Fatalf("SKIP not possible from TestMain: %s", fmt.Sprint(args...))
}

func (m *Main) Failed() bool { return m.failed }

// Close runs the cleanups, last first.
func (m *Main) Close() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	m.cleanups = nil
}

// Binaries builds sandboxd, sandboxctl, sandbox-init and the shipped plugins
// into a directory shared by the whole test process, and returns it.
func Binaries(t T) string {
	t.Helper()
	buildOnce.Do(func() {
		root := repoRoot()
		binDir, buildErr = os.MkdirTemp("", "sandboxd-test-bin-")
		if buildErr != nil {
			return
		}
		targets := map[string]string{
			"sandboxd":     "./cmd/sandboxd",
			"sandboxctl":   "./cmd/sandboxctl",
			"sandbox-init": "./cmd/sandbox-init",
		}
		langs, _ := filepath.Glob(filepath.Join(root, "plugins", "lang", "*", "main.go"))
		for _, l := range langs {
			name := filepath.Base(filepath.Dir(l))
			targets["plugins/sandbox-lang-"+name] = "./plugins/lang/" + name
		}
		policies, _ := filepath.Glob(filepath.Join(root, "plugins", "policy", "*", "main.go"))
		for _, p := range policies {
			name := filepath.Base(filepath.Dir(p))
			targets["plugins/sandbox-policy-"+name] = "./plugins/policy/" + name
		}
		// A policy plugin that misbehaves on request, for the failure tests.
		targets["plugins/sandbox-policy-misbehave"] = "./internal/testutil/misbehave"
		for out, pkg := range targets {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, out), pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// RemoveBinaries removes what Binaries built (a few hundred MB); a test
// package's TestMain calls it once its tests are done.
func RemoveBinaries() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// RequireDocker skips the test without a Docker engine, or fails it when
// CI=true: an end-to-end test must never pass without the real engine.
func RequireDocker(t T, images ...string) {
	t.Helper()
	if why := DockerMissing(images...); why != "" {
		Missing(t, why)
	}
}

// DockerMissing says why end-to-end tests cannot run here (no engine, or
// one of images missing), or "" when they can.
func DockerMissing(images ...string) string {
	out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("no Docker engine answers (%v: %s); run scripts/docker-engine.sh", err, strings.TrimSpace(string(out)))
	}
	for _, img := range images {
		if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil {
			return fmt.Sprintf("image %s is missing; run `make images`", img)
		}
	}
	return ""
}

// RequireRuntime skips the test (fails it when CI=true) unless the engine
// has the OCI runtime name registered.
func RequireRuntime(t T, name string) {
	t.Helper()
	out, err := exec.Command("docker", "info", "--format", "{{json .Runtimes}}").Output()
	if err != nil {
		Missing(t, fmt.Sprintf("docker info: %v", err))
		return
	}
	var runtimes map[string]any
	if err := json.Unmarshal(out, &runtimes); err != nil || runtimes[name] == nil {
		Missing(t, fmt.Sprintf("the engine has no runtime %s; restart it with scripts/docker-engine.sh, which installs and registers runsc", name))
	}
}

// TestImages are the images every test daemon runs.
var TestImages = []string{"sandboxd/python:latest", "sandboxd/node:latest"}

// NPMTool returns the path of a file of the npm tools `make npm-tools`
// installs in e2e/npm (e.g. node_modules/.bin/mcp-inspector), skipping
// the test without it (failing it when CI=true).
func NPMTool(t T, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(), "e2e", "npm", name)
	if _, err := os.Stat(p); err != nil {
		Missing(t, fmt.Sprintf("%s is not installed; run `make npm-tools`", name))
	}
	return p
}

// Missing skips the test for why (fails it when CI=true): a tool it needs
// is not installed.
func Missing(t T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %s", why)
	}
	t.Skip(why)
}

// Daemon is a running sandboxd.
type Daemon struct {
	Socket   string
	StateDir string
	Config   string
	Bin      string
	Log      *os.File
	RunID    string
	UIDs     [2]int // the first and last of its sandbox_uids
	env      []string
	flags    []string // sandboxd's flags after --config
	cmd      *exec.Cmd
	done     chan error
	t        T
}

// Options shape a test daemon's config.
type Options struct {
	// Languages is the HCL of the language blocks; default: python and node
	// with one warm container each.
	Languages string
	// Defaults is the body of the defaults block; default: timeout 10s.
	Defaults string
	// StateDir and Socket reuse paths (restart tests); default: fresh.
	StateDir, Socket string
	// RunID reuses a label value across restarts; default: fresh.
	RunID string
	// Extra is more top-level HCL, e.g. a sessions block.
	Extra string
	// ImagesDir is where sandboxd builds images from; default: images/.
	ImagesDir string
	// DockerHost is the engine; default: the environment's.
	DockerHost string
	// DockerTLS is the docker block's tls block, if any.
	DockerTLS string
	// Runtime is the OCI runtime of every sandbox; default: runc.
	Runtime string
	// Env is added to sandboxd's environment (KEY=VALUE).
	Env []string
	// Cluster adds the Kubernetes runtime on it (RequireCluster), for
	// languages whose block says runtime = "kubernetes".
	Cluster *Cluster
	// ConfigFile is a config to run as it is (the repository's
	// sandboxd.hcl) instead of the one the other options write; of them
	// only Socket, StateDir, ImagesDir and Env apply. sandboxd reads a
	// copy as far from bin (the test binaries) and images (ImagesDir) as
	// the file is from the repository's (examples/e2b.hcl one folder
	// down), where its relative paths lead, with --socket and --state-dir. Its
	// containers carry no test label (Stop removes them), and its
	// sandbox_uids are the file's, not Daemon.UIDs.
	ConfigFile string
}

// DefaultLanguages is the language HCL of Options. Their queue_timeout
// is a minute, not 5 s: tests make several containers at once on a
// machine other tests load (4 node sessions at once took over 5 s in
// CI), and a test of the pool's own timing sets its own.
const DefaultLanguages = `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle      = 1
    max           = 6
    queue_timeout = "1m"
  }
}
language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle      = 1
    max           = 4
    queue_timeout = "1m"
  }
}
`

var daemons atomic.Int64

// uidRange gives each test daemon 1000 sandbox uids of its own, so that
// daemons of parallel test packages never share one.
func uidRange() [2]int {
	block := (os.Getpid()*64 + int(daemons.Add(1))) % 100000
	first := 1_100_000_000 + block*1000
	return [2]int{first, first + 999}
}

// StartDaemon writes a config and starts sandboxd; it returns once the
// daemon answers /v1/health. Cleanup stops it and removes its containers.
func StartDaemon(t T, opts Options) *Daemon {
	t.Helper()
	d := newDaemon(t, opts)
	d.start()
	t.Cleanup(func() {
		d.Stop()
		if t.Failed() {
			t.Logf("sandboxd log:\n%s", d.Logs())
		}
	})
	return d
}

// FailToStart writes a config and starts sandboxd, which must exit with an
// error within 30s; it returns what sandboxd said.
func FailToStart(t T, opts Options) string {
	t.Helper()
	d := newDaemon(t, opts)
	cmd := exec.Command(filepath.Join(d.Bin, "sandboxd"), append([]string{"--config", d.Config}, d.flags...)...)
	cmd.Env = append(os.Environ(), d.env...)
	timer := time.AfterFunc(30*time.Second, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	out, err := cmd.CombinedOutput()
	timer.Stop()
	if err == nil {
		t.Fatalf("sandboxd should have refused to start, and stopped cleanly:\n%s", out)
	}
	return string(out)
}

// newDaemon writes the config of a daemon; Cleanup removes its containers.
func newDaemon(t T, opts Options) *Daemon {
	t.Helper()
	RequireDocker(t, TestImages...)
	bin := Binaries(t)
	dir := t.TempDir()
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(dir, "state")
	}
	if opts.Socket == "" {
		// Unix socket paths are short: keep it out of the long TempDir.
		f, err := os.MkdirTemp("/tmp", "sbx-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(f) })
		opts.Socket = filepath.Join(f, "s.sock")
	}
	if opts.RunID == "" {
		opts.RunID = fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	if opts.Languages == "" {
		opts.Languages = DefaultLanguages
	}
	if opts.Defaults == "" {
		opts.Defaults = `timeout = "10s"`
	}
	if opts.Runtime == "" {
		opts.Runtime = "runc"
	}
	if opts.ImagesDir == "" {
		opts.ImagesDir = filepath.Join(repoRoot(), "images")
	}
	uids := uidRange()
	cfg := fmt.Sprintf(`
sandbox_uids = "%d-%d"
socket     = %q
state_dir  = %q
plugin_dir = %q
supervisor = %q
images_dir = %q
docker {
  host    = %q
  runtime = %q
  labels  = { %q = %q }
  %s
}
defaults {
  %s
}
%s
%s
`, uids[0], uids[1], opts.Socket, opts.StateDir, filepath.Join(bin, "plugins"), filepath.Join(bin, "sandbox-init"),
		opts.ImagesDir, opts.DockerHost, opts.Runtime, TestLabel, opts.RunID, opts.DockerTLS, opts.Defaults, opts.Extra, opts.Languages)
	if opts.Cluster != nil {
		cfg += opts.Cluster.Runtime()
		t.Cleanup(func() { opts.Cluster.removeTestPods(opts.RunID) })
	}
	var flags []string
	cfgPath := filepath.Join(dir, "sandboxd.hcl")
	if opts.ConfigFile != "" {
		b, err := os.ReadFile(opts.ConfigFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg = string(b)
		for link, target := range map[string]string{"bin": bin, "images": opts.ImagesDir} {
			if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
		flags = []string{"--socket", opts.Socket, "--state-dir", opts.StateDir}
		rel, err := filepath.Rel(repoRoot(), opts.ConfigFile)
		if err != nil || !filepath.IsLocal(rel) {
			t.Fatalf("ConfigFile %s is not in the repository", opts.ConfigFile)
		}
		cfgPath = filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.CreateTemp(dir, "sandboxd-*.log")
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Socket: opts.Socket, StateDir: opts.StateDir, Config: cfgPath, Bin: bin, Log: log, RunID: opts.RunID, UIDs: uids, env: opts.Env, flags: flags, t: t}
	t.Cleanup(func() { RemoveTestContainers(t, opts.RunID) })
	return d
}

func (d *Daemon) start() {
	d.t.Helper()
	d.cmd = exec.Command(filepath.Join(d.Bin, "sandboxd"), append([]string{"--config", d.Config, "--log-level", "debug"}, d.flags...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.Log, d.Log
	d.cmd.Env = append(os.Environ(), d.env...)
	// A test that go test's timeout ends cannot stop its daemon: the
	// kernel does (its plugins follow it; .ci/run removes its containers).
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.done = make(chan error, 1)
	go func() { d.done <- d.cmd.Wait() }()
	c := d.Client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		h, err := c.Health(ctx)
		cancel()
		if err == nil && h.Status == "ok" {
			return
		}
		select {
		case err := <-d.done:
			d.done <- err
			d.t.Fatalf("sandboxd exited during start (%v):\n%s", err, d.Logs())
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("sandboxd did not become healthy in 30s (last: %v):\n%s", err, d.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID is the daemon's process id.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Client returns a client for this daemon.
func (d *Daemon) Client() *client.Client { return client.New(d.Socket) }

// Logs returns the daemon's log so far.
func (d *Daemon) Logs() string {
	b, _ := os.ReadFile(d.Log.Name())
	return string(b)
}

// Ctl runs sandboxctl against this daemon and returns stdout, stderr and the
// exit code.
func (d *Daemon) Ctl(stdin string, args ...string) (string, string, int) {
	d.t.Helper()
	return d.ctl(exec.Command(filepath.Join(d.Bin, "sandboxctl"), append([]string{"--socket", d.Socket}, args...)...), stdin)
}

// Nobody is the uid and gid CtlAs's other user runs as by default.
const Nobody = 65534

// CtlAs runs sandboxctl as uid (gid the same), another user of the host:
// for it, the socket, its directory and the binaries' are opened to
// every user (the test's own files).
func (d *Daemon) CtlAs(uid uint32, stdin string, args ...string) (string, string, int) {
	d.t.Helper()
	for path, mode := range map[string]os.FileMode{d.Socket: 0o666, filepath.Dir(d.Socket): 0o755, d.Bin: 0o755} {
		if err := os.Chmod(path, mode); err != nil {
			d.t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(d.Bin, "sandboxctl"), append([]string{"--socket", d.Socket}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
	return d.ctl(cmd, stdin)
}

func (d *Daemon) ctl(cmd *exec.Cmd, stdin string) (string, string, int) {
	d.t.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("sandboxctl: %v", err)
	}
	return out.String(), errb.String(), code
}

// Stop sends SIGTERM and waits for the daemon to drain.
func (d *Daemon) Stop() { d.signal(syscall.SIGTERM, 90*time.Second) }

// Kill sends SIGKILL, as a crash would.
func (d *Daemon) Kill() { d.signal(syscall.SIGKILL, 10*time.Second) }

// Restart starts the daemon again with the same config, stopping it
// first (SIGTERM) if it still runs: a second daemon started beside the
// first would find the socket answering and the state locked, and the
// first would outlive the test.
func (d *Daemon) Restart() {
	d.Stop()
	d.start()
}

// Wait returns the daemon's exit error once it has exited.
func (d *Daemon) Wait() error {
	err := <-d.done
	d.done <- err
	return err
}

func (d *Daemon) signal(sig syscall.Signal, wait time.Duration) {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	select {
	case err := <-d.done:
		d.done <- err
		return
	default:
	}
	_ = d.cmd.Process.Signal(sig)
	select {
	case err := <-d.done:
		d.done <- err
	case <-time.After(wait):
		_ = d.cmd.Process.Kill()
		d.t.Errorf("sandboxd did not exit within %s of %v", wait, sig)
	}
}

// Containers lists the ids of containers (running or not) with a label.
func Containers(t T, label string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// RemoveTestContainers force-removes every container of a test run.
func RemoveTestContainers(t T, runID string) {
	ids := Containers(t, TestLabel+"="+runID)
	if len(ids) == 0 {
		return
	}
	_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
}
