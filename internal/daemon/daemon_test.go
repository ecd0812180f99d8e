package daemon_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/runtime"
)

func TestMain(m *testing.M) { daemontest.Main(m, "bash", "generic", "node") }

// The request path without Docker: a run is planned by the language
// plugin, judged, given a pooled sandbox, executed and recorded; the
// sandbox is made fresh and serves the next run, which finds nothing the
// first left.
func TestRunsReuseAFreshSandbox(t *testing.T) {
	d, _ := daemontest.New(t, daemontest.Bash)
	ctx := context.Background()
	res, aerr := d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: "echo hello; echo left > left.txt; exit 3"}}, nil)
	if aerr != nil || res.ExitCode != 3 || string(res.Stdout) != "hello\n" {
		t.Fatalf("first run: %+v %v", res, aerr)
	}
	// Creations the first run set off (the pool's refill) land before the
	// count is taken. The pool's count: the runtime's has the version
	// probe too, which runs when it may.
	pool := func() stats.Pool { return d.Stats().Pools["bash"] }
	for deadline := time.Now().Add(5 * time.Second); pool().Starting > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	created := pool().Created
	for i := range 3 {
		res, aerr = d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: "ls"}}, nil)
		if aerr != nil || res.ExitCode != 0 || bytes.Contains(res.Stdout, []byte("left.txt")) {
			t.Fatalf("run %d after: %+v %v", i, res, aerr)
		}
	}
	if p := pool(); p.Created != created {
		t.Errorf("%d sandboxes created for runs a recycled one could serve: %+v", p.Created-created, p)
	}
	if st := d.Stats(); st.Executions < 4 {
		t.Errorf("recorded %d executions of 4", st.Executions)
	}
}

// Errors keep their codes across the request path: an unknown language,
// a bad program, a timeout, and an engine that went away.
func TestRunErrors(t *testing.T) {
	d, rt := daemontest.New(t, daemontest.Bash)
	ctx := context.Background()
	if _, aerr := d.Run(ctx, daemon.RunRequest{Language: "cobol", Program: request.Program{Code: "x"}}, nil); aerr == nil || !errdefs.Is(aerr, errdefs.UnknownLanguage) {
		t.Errorf("unknown language: %v", aerr)
	}
	res, aerr := d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: "sleep 30"}, Timeout: 300e6}, nil)
	if aerr != nil || !res.TimedOut {
		t.Errorf("a run past its deadline: %+v %v", res, aerr)
	}
	rt.Stop()
	if h := d.Health(ctx); h.Status != "degraded" || h.EngineErr == nil {
		t.Errorf("health with the engine stopped: %+v", h)
	}
}

// A session's lifecycle without Docker: it keeps the files put there and
// what its execs write, lists them, resets to a new session's workspace,
// and is gone once deleted.
func TestSessionLifecycle(t *testing.T) {
	d, _ := daemontest.New(t, daemontest.Bash)
	ctx := context.Background()
	if _, aerr := d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: "true"}}, nil); aerr != nil {
		t.Fatal(aerr)
	}
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.PutFile(ctx, s.ID, "in/data.txt", 0o644, nil, strings.NewReader("42\n")); aerr != nil {
		t.Fatal(aerr)
	}
	exec := func(script string) *daemon.Result {
		t.Helper()
		res, aerr := d.Exec(ctx, s.ID, daemon.ExecRequest{Argv: []string{"sh", "-c", script}}, nil)
		if aerr != nil {
			t.Fatalf("exec %q: %v", script, aerr)
		}
		return res
	}
	if res := exec("cat in/data.txt > out.txt"); res.ExitCode != 0 {
		t.Fatalf("first exec: %+v", res)
	}
	if res := exec("cat out.txt"); string(res.Stdout) != "42\n" {
		t.Fatalf("a later exec sees %q", res.Stdout)
	}
	_, entries, aerr := d.Sessions.ListFiles(ctx, s.ID, ".", true)
	if aerr != nil || len(entries) < 3 {
		t.Fatalf("files: %+v %v", entries, aerr)
	}
	if _, aerr := d.Sessions.Reset(ctx, s.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if res := exec("ls"); string(res.Stdout) != "outputs\n" { // as a new session's
		t.Fatalf("after a reset the workspace holds %q", res.Stdout)
	}
	if aerr := d.Sessions.Delete(s.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Exec(ctx, s.ID, daemon.ExecRequest{Argv: []string{"true"}}, nil); aerr == nil || !errdefs.Is(aerr, errdefs.NotFound) {
		t.Fatalf("exec in a deleted session: %v", aerr)
	}
}

// A container serves max_runs runs, then is retired and another serves.
func TestMaxRunsRetires(t *testing.T) {
	d, rt := daemontest.New(t, `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 1
    max      = 2
    max_runs = 2
  }
}`)
	ctx := context.Background()
	seen := map[string]int{}
	for range 6 {
		res, aerr := d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: "pwd"}}, nil)
		if aerr != nil || res.ExitCode != 0 {
			t.Fatalf("%+v %v", res, aerr)
		}
		seen[filepath.Base(filepath.Dir(strings.TrimSpace(string(res.Stdout))))]++ // the fake sandbox's id
	}
	for id, n := range seen {
		if n > 2 {
			t.Errorf("sandbox %s served %d runs, max_runs is 2", id, n)
		}
	}
	if len(seen) < 3 || rt.Created() < 3 {
		t.Errorf("6 runs at max_runs 2 in %d sandboxes (%d created)", len(seen), rt.Created())
	}
}

// A run that waits for a sandbox on something outside sandboxd (a node
// pulling the image) is told what, as an event, and its result says so.
func TestRunIsToldWhatItWaitsOn(t *testing.T) {
	d, rt := daemontest.New(t, strings.Replace(daemontest.Bash, "min_idle = 1", "min_idle = 0", 1))
	rt.OnCreate(func(spec runtime.Spec) {
		if spec.Waiting != nil {
			spec.Waiting("node a is pulling image x")
			time.Sleep(1500 * time.Millisecond)
		}
	})
	var queued []string
	res, aerr := d.Run(context.Background(), daemon.RunRequest{Language: "bash", Program: request.Program{Code: "echo ran"}}, func(stream string, data []byte) {
		if stream == daemon.Queued {
			queued = append(queued, string(data))
		}
	})
	if aerr != nil || string(res.Stdout) != "ran\n" {
		t.Fatalf("%+v %v", res, aerr)
	}
	if len(queued) != 1 || queued[0] != "node a is pulling image x" || res.Timings.QueueReason != queued[0] {
		t.Errorf("told %q; the result says %q", queued, res.Timings.QueueReason)
	}
}

// A start that fails after the languages and their sandboxes are up (a
// policy block whose plugin is not there) says why, and closes what it
// opened: no panic on pools that never started.
func TestFailedStartSaysWhy(t *testing.T) {
	_, _, err := daemontest.Open(t, daemontest.Options{Languages: daemontest.Bash, Extra: `
policy "missing" {
  plugin = "sandbox-policy-nowhere"
}`})
	if err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("a start with a missing policy plugin: %v", err)
	}
}
