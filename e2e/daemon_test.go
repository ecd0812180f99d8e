package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, what, 20*time.Second, cond)
}

func waitForWithin(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sandboxd runs the daemon binary with args and returns its output and code.
func sandboxd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(testutil.Binaries(t), "sandboxd"), args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestSecondDaemonRefused(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	// Same socket, another state dir.
	cfg := strings.Replace(readFile(t, d.Config), d.StateDir, filepath.Join(t.TempDir(), "state"), 1)
	out, code := sandboxd(t, "--config", writeFile(t, "a.hcl", cfg))
	if code == 0 || !strings.Contains(out, "another sandboxd answers on "+d.Socket) {
		t.Fatalf("same socket: code %d\n%s", code, out)
	}
	// A state dir other users may enter (its sessions' egress and
	// records are below it): refused, saying what to do.
	open := t.TempDir()
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	out, code = sandboxd(t, "--config", d.Config, "--state-dir", open, "--socket", filepath.Join(filepath.Dir(d.Socket), "third.sock"))
	if code == 0 || !strings.Contains(out, "chmod 700 "+open) {
		t.Fatalf("an open state dir: code %d\n%s", code, out)
	}
	// Same state dir, another socket.
	out, code = sandboxd(t, "--config", d.Config, "--socket", filepath.Join(filepath.Dir(d.Socket), "other.sock"))
	if code == 0 || !strings.Contains(out, "locked by another sandboxd") {
		t.Fatalf("same state dir: code %d\n%s", code, out)
	}
	// The first one is unharmed.
	if out, _, code := d.Ctl("", "status"); code != 0 {
		t.Fatalf("first daemon unhealthy: %s", out)
	}
}

func TestKilledDaemonLeavesNoOrphans(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	label := testutil.TestLabel + "=" + d.RunID
	waitFor(t, "warm containers", func() bool { return len(testutil.Containers(t, label)) >= 2 })
	before := testutil.Containers(t, label)
	plugins := children(t, d.PID())
	if len(plugins) == 0 {
		t.Fatal("no plugin processes found under the daemon")
	}
	d.Kill()
	waitFor(t, "the killed daemon's plugin processes to die with it", func() bool {
		for _, pid := range plugins {
			if syscall.Kill(pid, 0) == nil {
				return false
			}
		}
		return true
	})
	// The stale socket file stays behind after SIGKILL.
	if _, err := os.Stat(d.Socket); err != nil {
		t.Fatalf("expected a stale socket: %v", err)
	}
	d.Restart() // serves at once, and removes them in the background
	waitFor(t, "the killed daemon's containers removed", func() bool {
		for _, id := range before {
			if exec.Command("docker", "inspect", id).Run() == nil {
				return false
			}
		}
		return true
	})
	if out, _, code := d.Ctl("", "run", writeFile(t, "a.py", "print('after restart')")); code != 0 || out != "after restart\n" {
		t.Fatalf("after restart: %d %q", code, out)
	}
}

// children are the live child processes of pid that are not zombies.
func children(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			if child, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, child)
			}
		}
	}
	return out
}

func TestSigtermDrainsAndCleansUp(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	waitFor(t, "warm containers", func() bool { return len(testutil.Containers(t, testutil.TestLabel+"="+d.RunID)) >= 2 })
	// A run in flight when SIGTERM arrives still completes.
	type result struct {
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() {
		out, _, code := d.Ctl("", "run", writeFile(t, "slow.py", "import time\ntime.sleep(1.5)\nprint('finished')\n"))
		done <- result{out, code}
	}()
	c := d.Client()
	waitFor(t, "the run in flight", func() bool {
		st, err := c.Stats(context.Background())
		return err == nil && st.InFlight > 0
	})
	d.Stop()
	r := <-done
	if r.code != 0 || r.out != "finished\n" {
		t.Fatalf("in-flight run: %d %q", r.code, r.out)
	}
	if err := d.Wait(); err != nil {
		t.Fatalf("sandboxd exited with %v\n%s", err, d.Logs())
	}
	if ids := testutil.Containers(t, testutil.TestLabel+"="+d.RunID); len(ids) != 0 {
		t.Fatalf("%d containers left after SIGTERM", len(ids))
	}
	if _, err := os.Stat(d.Socket); !os.IsNotExist(err) {
		t.Fatalf("socket file left behind: %v", err)
	}
}

func TestConfigErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct{ hcl, want string }{
		{`bogus = 1` + "\n" + `language "python" {}`, `x.hcl:1,1: Unsupported argument; An argument named "bogus"`},
		{"defaults {\n  memory = \"lots\"\n}\nlanguage \"python\" {}", `x.hcl:2,3: "memory" is "lots"`},
		{"language \"python\" {\n  pool {\n    min_idle = 9\n    max = 2\n  }\n}", `x.hcl:3,5: "min_idle" (9) is above max (2)`},
		{"defaults {\n  network = \"host\"\n}\nlanguage \"python\" {}", `only "none" is supported`},
		{`socket = "/tmp/x.sock"`, `no language blocks`},
		{`language "python" {`, `x.hcl:1,`},
		{"socket_group = \"no-such-group\"\nlanguage \"python\" {}", `x.hcl:1,1: "socket_group" is "no-such-group", which is no group on this machine; an existing group: create it (groupadd --system no-such-group)`},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "x.hcl")
		if err := os.WriteFile(p, []byte(tc.hcl), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := sandboxd(t, "--config", p, "--validate")
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("config %q: code %d, want %q in:\n%s", tc.hcl, code, tc.want, out)
		}
	}
	out, code := sandboxd(t, "--config", "../sandboxd.hcl", "--validate")
	if code != 0 {
		t.Fatalf("the shipped sandboxd.hcl is invalid:\n%s", out)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCrashedPluginIsRestarted kills the python plugin under the daemon:
// the daemon stays up and the plugin comes back for the next requests.
func TestCrashedPluginIsRestarted(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	pid := pluginPID(t, d.PID(), "sandbox-lang-python")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var out string
	var code int
	waitFor(t, "a run after the plugin crash", func() bool {
		out, _, code = d.Ctl("", "run", writeFile(t, "a.py", "print('back')"))
		return code == 0
	})
	if out != "back\n" {
		t.Fatalf("stdout %q", out)
	}
	if pluginPID(t, d.PID(), "sandbox-lang-python") == pid {
		t.Fatal("the same plugin process answered after SIGKILL")
	}
	list, _, _ := d.Ctl("", "plugins")
	if !strings.Contains(list, "sandbox-lang-python") {
		t.Fatalf("plugins: %s", list)
	}
	if out, _, code := d.Ctl("", "status"); code != 0 {
		t.Fatalf("status after restart: %s", out)
	}
}

// pluginPID finds a plugin process among the daemon's children.
func pluginPID(t *testing.T, daemon int, name string) int {
	t.Helper()
	// Each thread lists the children it forked; Go forks from any thread.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", daemon))
	var children []string
	for _, task := range tasks {
		children = append(children, strings.Fields(readFile(t, task))...)
	}
	for _, f := range children {
		pid, _ := strconv.Atoi(f)
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Base(exe) == name {
			return pid
		}
	}
	t.Fatalf("no %s process under sandboxd %d", name, daemon)
	return 0
}

// Stopped as a service manager stops it (SIGTERM to sandboxd and to its
// plugins at once: systemd's control group), sandboxd drains, closes its
// plugins itself and says nothing went wrong; no plugin outlives it.
func TestServiceStopIsClean(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	plugins := children(t, d.PID())
	if len(plugins) == 0 {
		t.Fatal("no plugin processes found under the daemon")
	}
	for _, pid := range plugins {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	if out, _, code := d.Ctl("", "run", writeFile(t, "a.py", "print('still served')")); code != 0 || out != "still served\n" {
		t.Fatalf("a run after the plugins got SIGTERM: %d %q", code, out)
	}
	d.Stop()
	logs := d.Logs()
	if strings.Contains(logs, "[ERROR]") || !strings.Contains(logs, "sandboxd stopped cleanly") {
		t.Fatalf("a clean stop logged errors:\n%s", logs)
	}
	waitFor(t, "no plugin to outlive sandboxd", func() bool {
		for _, pid := range plugins {
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
				return false
			}
		}
		return true
	})
}
