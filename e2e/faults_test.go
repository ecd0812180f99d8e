package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// The engine stopped under sandboxd (on an engine of the test's own): what
// was in flight ends with runtime_unavailable within a bound, health says
// degraded, sessions whose containers died are lost, and when the engine
// is back runs work again with no restart of sandboxd.
func TestEngineStoppedAndBack(t *testing.T) {
	t.Parallel() // on an engine of its own, mostly waiting for it
	e := testutil.StartEngine(t, "sandboxd/bash:latest")
	d := testutil.StartDaemon(t, testutil.Options{DockerHost: e.Host, Defaults: `timeout = "60s"`, Languages: `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 1
    max      = 4
  }
}`})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{Language: "bash"})
	inflight := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), api.RunRequest{Language: "bash", Code: "sleep 50"})
		inflight <- err
	}()
	waitFor(t, "the run in flight", func() bool {
		st, err := c.Stats(context.Background())
		return err == nil && st.InFlight > 0
	})

	e.Stop()
	healthTurns(t, c, "degraded")
	select {
	case err := <-inflight:
		if apiCode(err) != api.CodeRuntimeUnavailable {
			t.Fatalf("the run in flight: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run in flight did not end within 30s of the engine stopping")
	}
	start := time.Now()
	if _, err := c.Run(context.Background(), api.RunRequest{Language: "bash", Code: "echo 1"}); apiCode(err) != api.CodeRuntimeUnavailable {
		t.Fatalf("a run while the engine is down: %v", err)
	}
	if took := time.Since(start); took > 40*time.Second {
		t.Fatalf("a run while the engine is down took %s to fail", took)
	}
	if h, err := c.Health(context.Background()); err != nil || h.Status != "degraded" || h.Docker.OK {
		t.Fatalf("health while the engine is down: %+v %v", h, err)
	}
	// Frozen, the engine holds its socket and answers nothing: health
	// still answers, degraded, in a bounded time.
	e.Start()
	healthTurns(t, c, "ok")
	e.Freeze()
	healthTurns(t, c, "degraded")
	e.Thaw()
	healthTurns(t, c, "ok")
	e.Stop()
	if _, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"true"}}); apiCode(err) != api.CodeSessionLost && apiCode(err) != api.CodeRuntimeUnavailable {
		t.Fatalf("exec in a session whose container died: %v", err)
	}

	e.Start()
	healthTurns(t, c, "ok")
	waitFor(t, "runs working again", func() bool {
		res, err := c.Run(context.Background(), api.RunRequest{Language: "bash", Code: "echo back"})
		return err == nil && res.Stdout == "back\n"
	})
	// Kept while the engine could not say, lost once it says the
	// container is gone.
	waitFor(t, "the session whose container died lost", func() bool {
		s, err := c.Session(ctx(t), id)
		return err == nil && s.State == api.SessionLost
	})
	waitFor(t, "the pool refilled", func() bool {
		pools, err := c.Pools(context.Background())
		return err == nil && pools["bash"].Idle >= 1
	})
}

// healthTurns polls health, as a monitor would, until it says status, and
// fails if that took more than 5 s: health probes the engine itself, and
// a change of the engine's shows within that with no other request.
func healthTurns(t *testing.T, c *client.Client, status string) {
	t.Helper()
	start := time.Now()
	for {
		h, err := c.Health(context.Background())
		if err == nil && h.Status == status {
			return
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("health did not turn %s within 5s (%s): %+v %v", status, took.Round(time.Millisecond), h, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// An engine that stops answering (frozen, as one stuck removing a container
// is) while sandboxd shuts down: the shutdown still ends within the bound a
// service manager gives it (testutil's Stop fails the test past 90s; the
// daemon's shutdown_timeout is 10s here, where 60s ships), and
// the containers it could not remove go at the next start (or, for the
// removals it asked for, when the engine answers again).
func TestShutdownWithAnEngineThatHangs(t *testing.T) {
	t.Parallel() // on an engine of its own, mostly waiting for it
	e := testutil.StartEngine(t, "sandboxd/bash:latest")
	d := testutil.StartDaemon(t, testutil.Options{DockerHost: e.Host, Extra: `shutdown_timeout = "10s"`, Languages: `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 2
    max      = 4
  }
}`})
	label := testutil.TestLabel + "=" + d.RunID
	waitFor(t, "warm containers", func() bool { return len(e.Containers(label)) >= 2 })
	e.Freeze()
	d.Stop()
	if logs := d.Logs(); !strings.Contains(logs, "final cleanup failed") || !strings.Contains(logs, "sandboxd stopped cleanly") {
		t.Fatalf("the shutdown should end, saying what it could not remove:\n%s", logs)
	}
	e.Thaw()
	// The removals sandboxd asked for while the engine was frozen wait in
	// its socket, and a thawed engine may still carry some out: what is
	// left now is what the next start must remove.
	left := e.Containers(label)
	t.Logf("left after the shutdown: %v", left)
	d.Restart()
	waitFor(t, "the leftovers removed by the next start", func() bool {
		now := e.Containers(label)
		for _, id := range left {
			for _, n := range now {
				if n == id {
					return false
				}
			}
		}
		return true
	})
}

// The state dir's disk full (a 4 MiB tmpfs the test mounts): a write that
// fails says no_space and what to do, runs go on, nothing written before
// is lost, and once there is room again everything works.
func TestStateDiskFull(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", state).CombinedOutput(); err != nil {
		t.Fatalf("mounting a small tmpfs for the state dir: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", state).Run() }) // after the daemon stops
	d := testutil.StartDaemon(t, testutil.Options{StateDir: state})
	c := d.Client()
	first := run(t, c, api.RunRequest{Language: "python", Code: "print('before')"})
	waitFor(t, "the first run in history", func() bool {
		list, err := c.Executions(context.Background(), 10, api.ExecutionFilter{})
		return err == nil && len(list) == 1 && list[0].ID == first.ID
	})

	filler := filepath.Join(state, "filler")
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").Run() // until ENOSPC
	if res := run(t, c, api.RunRequest{Language: "python", Code: "print('still')"}); res.Stdout != "still\n" {
		t.Fatalf("a run with the state disk full: %+v", res)
	}
	// bbolt writes into free pages of its file first: a write fails only
	// once the file must grow, and then it says so.
	for i := 0; i < 10; i++ {
		_, err := c.CreateSession(ctx(t), api.SessionRequest{Language: "python"})
		if err != nil && (apiCode(err) != api.CodeNoSpace || !strings.Contains(err.Error(), "state_dir is full")) {
			t.Fatalf("a session with the state disk full: %v", err)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	id := newSession(t, c, api.SessionRequest{})
	if res := sh(t, c, id, "echo room"); res.Stdout != "room\n" {
		t.Fatalf("after freeing space: %+v", res)
	}
	list, err := c.Executions(context.Background(), 50, api.ExecutionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range list {
		found = found || e.ID == first.ID
	}
	if !found {
		t.Fatal("the record written before the disk filled is gone")
	}
}
