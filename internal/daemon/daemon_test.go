package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime/fake"
)

// pluginDir holds the bash language plugin, built once for the package's
// tests (from the module cache: no network, no Docker).
var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "daemon-unit-")
	if err != nil {
		panic(err)
	}
	pluginDir = filepath.Join(dir, "plugins")
	build := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "sandbox-lang-bash"), "github.com/sandboxd/sandboxd/plugins/lang/bash")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the bash plugin: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// newDaemon is a daemon on the fake runtime, with bash (run by the host's
// sh) as its one language.
func newDaemon(t *testing.T, languageBlock string) (*Daemon, *fake.Runtime) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "sandboxd.hcl"), []byte(fmt.Sprintf(`
socket     = %q
state_dir  = %q
plugin_dir = %q
supervisor = "/bin/true"
images_dir = ""
%s
`, filepath.Join(dir, "s.sock"), filepath.Join(dir, "state"), pluginDir, languageBlock)))
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	rt := fake.New(filepath.Join(dir, "sandboxes"), "sandboxd/bash:latest")
	d, err := New(context.Background(), cfg, rt, store, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close(context.Background())
		store.Close()
		rt.Close()
	})
	return d, rt
}

const bashLanguage = `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 1
    max      = 2
  }
}`

// The request path without Docker: a run is planned by the language
// plugin, judged, given a pooled sandbox, executed and recorded; the
// sandbox is made fresh and serves the next run, which finds nothing the
// first left.
func TestRunsReuseAFreshSandbox(t *testing.T) {
	d, rt := newDaemon(t, bashLanguage)
	ctx := context.Background()
	res, aerr := d.Run(ctx, api.RunRequest{Language: "bash", Code: "echo hello; echo left > left.txt; exit 3"}, nil)
	if aerr != nil || res.ExitCode != 3 || res.Stdout != "hello\n" {
		t.Fatalf("first run: %+v %v", res, aerr)
	}
	created := rt.Creates
	for i := range 3 {
		res, aerr = d.Run(ctx, api.RunRequest{Language: "bash", Code: "ls"}, nil)
		if aerr != nil || res.ExitCode != 0 || strings.Contains(res.Stdout, "left.txt") {
			t.Fatalf("run %d after: %+v %v", i, res, aerr)
		}
	}
	if rt.Creates != created {
		t.Errorf("%d sandboxes created for runs a recycled one could serve", rt.Creates-created)
	}
	if st := d.Stats(); st.Executions < 4 {
		t.Errorf("recorded %d executions of 4", st.Executions)
	}
}

// Errors keep their codes across the request path: an unknown language,
// a bad program, a timeout, and an engine that went away.
func TestRunErrors(t *testing.T) {
	d, rt := newDaemon(t, bashLanguage)
	ctx := context.Background()
	if _, aerr := d.Run(ctx, api.RunRequest{Language: "cobol", Code: "x"}, nil); aerr == nil || aerr.Code != api.CodeUnknownLanguage {
		t.Errorf("unknown language: %v", aerr)
	}
	if _, aerr := d.Run(ctx, api.RunRequest{Language: "bash"}, nil); aerr == nil || aerr.Code != api.CodeInvalidRequest {
		t.Errorf("no program: %v", aerr)
	}
	res, aerr := d.Run(ctx, api.RunRequest{Language: "bash", Code: "sleep 30", Timeout: api.Duration(300e6)}, nil)
	if aerr != nil || !res.TimedOut {
		t.Errorf("a run past its deadline: %+v %v", res, aerr)
	}
	rt.Stop()
	if h := d.Health(ctx); h.Status != "degraded" || h.Docker.OK {
		t.Errorf("health with the engine stopped: %+v", h)
	}
}

// A session's lifecycle without Docker: it keeps the files put there and
// what its execs write, lists them, resets to a new session's workspace,
// and is gone once deleted.
func TestSessionLifecycle(t *testing.T) {
	d, _ := newDaemon(t, bashLanguage)
	ctx := context.Background()
	if _, aerr := d.Run(ctx, api.RunRequest{Language: "bash", Code: "true"}, nil); aerr != nil {
		t.Fatal(aerr)
	}
	s, aerr := d.Sessions.Create(ctx, api.SessionRequest{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.PutFile(ctx, s.ID, "in/data.txt", 0o644, strings.NewReader("42\n")); aerr != nil {
		t.Fatal(aerr)
	}
	exec := func(script string) *api.RunResult {
		t.Helper()
		res, aerr := d.Exec(ctx, s.ID, api.ExecRequest{Argv: []string{"sh", "-c", script}}, nil)
		if aerr != nil {
			t.Fatalf("exec %q: %v", script, aerr)
		}
		return res
	}
	if res := exec("cat in/data.txt > out.txt"); res.ExitCode != 0 {
		t.Fatalf("first exec: %+v", res)
	}
	if res := exec("cat out.txt"); res.Stdout != "42\n" {
		t.Fatalf("a later exec sees %q", res.Stdout)
	}
	list, aerr := d.Sessions.ListFiles(ctx, s.ID, ".", true)
	if aerr != nil || len(list.Entries) < 3 {
		t.Fatalf("files: %+v %v", list, aerr)
	}
	if _, aerr := d.Sessions.Reset(ctx, s.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if res := exec("ls"); res.Stdout != "outputs\n" { // as a new session's
		t.Fatalf("after a reset the workspace holds %q", res.Stdout)
	}
	if aerr := d.Sessions.Delete(s.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Exec(ctx, s.ID, api.ExecRequest{Argv: []string{"true"}}, nil); aerr == nil || aerr.Code != api.CodeNotFound {
		t.Fatalf("exec in a deleted session: %v", aerr)
	}
}

// A container serves max_runs runs, then is retired and another serves.
func TestMaxRunsRetires(t *testing.T) {
	d, rt := newDaemon(t, `
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
		res, aerr := d.Run(ctx, api.RunRequest{Language: "bash", Code: "pwd"}, nil)
		if aerr != nil || res.ExitCode != 0 {
			t.Fatalf("%+v %v", res, aerr)
		}
		seen[filepath.Base(filepath.Dir(strings.TrimSpace(res.Stdout)))]++ // the fake sandbox's id
	}
	for id, n := range seen {
		if n > 2 {
			t.Errorf("sandbox %s served %d runs, max_runs is 2", id, n)
		}
	}
	if len(seen) < 3 || rt.Creates < 3 {
		t.Errorf("6 runs at max_runs 2 in %d sandboxes (%d created)", len(seen), rt.Creates)
	}
}
