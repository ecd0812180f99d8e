package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// The engine stopped under sandboxd (on an engine of the test's own): what
// was in flight ends with runtime_unavailable within a bound, health says
// degraded, sessions whose containers died are lost, and when the engine
// is back runs work again with no restart of sandboxd.
func TestEngineStoppedAndBack(t *testing.T) {
	e := testutil.StartEngine(t, "sandboxd/python:latest")
	d := testutil.StartDaemon(t, testutil.Options{DockerHost: e.Host, Defaults: `timeout = "60s"`, Languages: `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 1
    max      = 4
  }
}`})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	inflight := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "import time\ntime.sleep(50)"})
		inflight <- err
	}()
	waitFor(t, "the run in flight", func() bool {
		st, err := c.Stats(context.Background())
		return err == nil && st.InFlight > 0
	})

	e.Stop()
	select {
	case err := <-inflight:
		if apiCode(err) != api.CodeRuntimeUnavailable {
			t.Fatalf("the run in flight: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run in flight did not end within 30s of the engine stopping")
	}
	start := time.Now()
	if _, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "print(1)"}); apiCode(err) != api.CodeRuntimeUnavailable {
		t.Fatalf("a run while the engine is down: %v", err)
	}
	if took := time.Since(start); took > 40*time.Second {
		t.Fatalf("a run while the engine is down took %s to fail", took)
	}
	if h, err := c.Health(context.Background()); err != nil || h.Status != "degraded" || h.Docker.OK {
		t.Fatalf("health while the engine is down: %+v %v", h, err)
	}
	if _, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"true"}}); apiCode(err) != api.CodeSessionLost && apiCode(err) != api.CodeRuntimeUnavailable {
		t.Fatalf("exec in a session whose container died: %v", err)
	}

	e.Start()
	waitFor(t, "runs working again", func() bool {
		res, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "print('back')"})
		return err == nil && res.Stdout == "back\n"
	})
	if h, err := c.Health(context.Background()); err != nil || h.Status != "ok" {
		t.Fatalf("health with the engine back: %+v %v", h, err)
	}
	s, err := c.Session(ctx(t), id)
	if err != nil || s.State != api.SessionLost {
		t.Fatalf("the session whose container died: %+v %v", s, err)
	}
	waitFor(t, "the pool refilled", func() bool {
		pools, err := c.Pools(context.Background())
		return err == nil && pools["python"].Idle >= 1
	})
}
