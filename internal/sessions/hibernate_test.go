package sessions_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/fake"
)

// hibernating makes a bash session with a file in a nested directory and
// an empty one, on a daemon with extra HCL.
func hibernating(t *testing.T, extra string) (*daemon.Daemon, *fake.Runtime, string) {
	t.Helper()
	d, rt := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: extra})
	ctx := context.Background()
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, _, aerr := d.Sessions.PutFile(ctx, s.ID, "src/app/main.sh", 0o750, nil, strings.NewReader("echo hi\n")); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Exec(ctx, s.ID, daemon.ExecRequest{Argv: []string{"sh", "-c", "mkdir empty && ln -s src/app/main.sh link && touch -d @1000000000.5 src/app/main.sh"}}, nil); aerr != nil {
		t.Fatal(aerr)
	}
	return d, rt, s.ID
}

// listing is a session's workspace as the files API lists it.
func listing(t *testing.T, d *daemon.Daemon, id string) map[string]sessions.Entry {
	t.Helper()
	_, entries, aerr := d.Sessions.ListFiles(context.Background(), id, ".", true)
	if aerr != nil {
		t.Fatal(aerr)
	}
	out := map[string]sessions.Entry{}
	for _, e := range entries {
		out[e.Path] = e
	}
	return out
}

// A paused session has no container and an archive; the next call
// resumes it with the same files, modes, links, empty directories and
// mtimes, and says it did.
func TestPauseAndResume(t *testing.T) {
	d, rt, id := hibernating(t, "")
	ctx := context.Background()
	before := listing(t, d, id)
	containers := rt.Created()
	active, _ := d.Sessions.Get(id)
	s, aerr := d.Sessions.Pause(ctx, id)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if s.State != state.SessionHibernated || s.Hibernation == nil || s.Hibernation.Bytes == 0 || s.ContainerID != "" {
		t.Fatalf("paused: %+v", s)
	}
	if list, _ := rt.List(ctx); slices.ContainsFunc(list, func(c runtime.Container) bool { return c.ID == active.ContainerID }) {
		t.Fatal("a hibernated session kept its container")
	}
	if c := d.Sessions.Counts(); c.Active != 0 || c.Hibernated != 1 {
		t.Fatalf("counts: %+v", c)
	}
	if again, aerr := d.Sessions.Pause(ctx, id); aerr != nil || again.Hibernation.SHA256 != s.Hibernation.SHA256 {
		t.Fatalf("pausing twice: %v", aerr)
	}

	var took time.Duration
	res, aerr := d.Exec(sessions.OnResume(ctx, func(d time.Duration) { took = d }), id, daemon.ExecRequest{Argv: []string{"cat", "link"}}, nil)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if res.Resume <= 0 || took <= 0 || string(res.Stdout) != "echo hi\n" {
		t.Fatalf("the exec that woke it: resumed in %v (%v), stdout %q", res.Resume, took, res.Stdout)
	}
	if rt.Created() == containers {
		t.Error("resumed without a container of its own")
	}
	after := listing(t, d, id)
	for p, e := range before {
		if got := after[p]; !reflect.DeepEqual(got, e) {
			t.Errorf("%s: %+v before, %+v after", p, e, got)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d entries before, %d after", len(before), len(after))
	}
	if s, _ := d.Sessions.Get(id); s.State != state.SessionActive || s.Resumes != 1 || s.Hibernation != nil {
		t.Errorf("resumed: %+v", s)
	}
	if res, _ := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"true"}}, nil); res.Resume > 0 {
		t.Error("a second exec says it resumed too")
	}
}

// An idle session hibernates rather than ends, and wakes on the next call.
func TestIdleSessionHibernates(t *testing.T) {
	d, _, id := hibernating(t, "sessions {\n  idle_timeout = \"1s\"\n}")
	waitState(t, d, id, state.SessionHibernated)
	res, aerr := d.Exec(context.Background(), id, daemon.ExecRequest{Argv: []string{"cat", "src/app/main.sh"}}, nil)
	if aerr != nil || res.Resume <= 0 || string(res.Stdout) != "echo hi\n" {
		t.Fatalf("after idling: %+v %v", res, aerr)
	}
}

// With on_idle = "end", an idle session ends as it did before.
func TestIdleSessionEnds(t *testing.T) {
	d, _, id := hibernating(t, "sessions {\n  idle_timeout = \"1s\"\n  on_idle = \"end\"\n}")
	waitFor(t, "the idle session to end", func() bool {
		_, aerr := d.Sessions.Get(id)
		return aerr != nil && errdefs.Is(aerr, errdefs.NotFound)
	})
}

// An archive changed on disk makes the resume fail with session_lost
// naming it; the session's new container is never used.
func TestCorruptArchive(t *testing.T) {
	d, _, id := hibernating(t, "")
	ctx := context.Background()
	if _, aerr := d.Sessions.Pause(ctx, id); aerr != nil {
		t.Fatal(aerr)
	}
	archive := hibernationPath(t, d, id)
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(archive, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, aerr := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"true"}}, nil)
	if aerr == nil || !errdefs.Is(aerr, errdefs.SessionLost) || !strings.Contains(aerr.Error(), archive) {
		t.Fatalf("resuming from a damaged archive: %v", aerr)
	}
	if s, _ := d.Sessions.Get(id); s.State != state.SessionLost {
		t.Fatalf("after a damaged archive: %+v", s)
	}
	if aerr := d.Sessions.Delete(id); aerr != nil {
		t.Fatal(aerr)
	}
	if _, err := os.Stat(archive); !os.IsNotExist(err) {
		t.Errorf("the deleted session's archive is still there: %v", err)
	}
}

// A missing archive is as lost as a damaged one.
func TestMissingArchive(t *testing.T) {
	d, _, id := hibernating(t, "")
	ctx := context.Background()
	if _, aerr := d.Sessions.Pause(ctx, id); aerr != nil {
		t.Fatal(aerr)
	}
	if err := os.Remove(hibernationPath(t, d, id)); err != nil {
		t.Fatal(err)
	}
	if _, aerr := d.Sessions.Resume(ctx, id); aerr == nil || !errdefs.Is(aerr, errdefs.SessionLost) {
		t.Fatalf("resuming without an archive: %v", aerr)
	}
}

// A workspace over max_hibernated_bytes is refused whole, too_large, and
// the session stays active with its files. What counts is what the
// workspace holds: a 1 TiB file of holes (and a second name of a file)
// pauses in a few KiB and comes back as it was.
func TestPauseTooLarge(t *testing.T) {
	d, _, id := hibernating(t, "sessions {\n  max_hibernated_bytes = \"1MiB\"\n}")
	ctx := context.Background()
	if _, aerr := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"sh", "-c", "truncate -s 1T sparse && printf end | dd of=sparse bs=1 seek=1099511627773 conv=notrunc 2>/dev/null && ln src/app/main.sh second"}}, nil); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Sessions.Pause(ctx, id); aerr != nil {
		t.Fatalf("pausing a 1 TiB sparse file: %v", aerr)
	}
	if _, aerr := d.Sessions.Resume(ctx, id); aerr != nil {
		t.Fatal(aerr)
	}
	res, aerr := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"sh", "-c", "stat -c '%s %b %h' sparse second; tail -c 3 sparse"}}, nil)
	if f := strings.Fields(string(res.Stdout)); aerr != nil || len(f) != 7 || f[0] != "1099511627776" || len(f[1]) > 4 || f[5] != "2" || f[6] != "end" {
		t.Fatalf("the sparse file and the link after a pause: %q %v", res.Stdout, aerr)
	}
	if _, aerr := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"sh", "-c", "rm sparse && head -c 2097152 /dev/urandom > dense"}}, nil); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Sessions.Pause(ctx, id); aerr == nil || !errdefs.Is(aerr, errdefs.TooLarge) {
		t.Fatalf("pausing 2 MiB of data: %v", aerr)
	}
	if s, _ := d.Sessions.Get(id); s.State != state.SessionActive {
		t.Fatalf("after a refused pause: %+v", s)
	}
	if res, aerr := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"cat", "src/app/main.sh"}}, nil); aerr != nil || string(res.Stdout) != "echo hi\n" {
		t.Fatalf("after a refused pause: %+v %v", res, aerr)
	}
	// Once it fits, it pauses, and only its archive is there.
	if _, aerr := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"rm", "dense"}}, nil); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Sessions.Pause(ctx, id); aerr != nil {
		t.Fatal(aerr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(hibernationPath(t, d, id))); len(entries) != 1 {
		t.Errorf("a refused pause left files behind: %v", entries)
	}
}

// When sessions.max are active, a resume hibernates the least recently
// used idle session to make room.
func TestResumeEvictsLeastRecentlyUsed(t *testing.T) {
	d, _, first := hibernating(t, "sessions {\n  max = 2\n}")
	ctx := context.Background()
	if _, aerr := d.Sessions.Pause(ctx, first); aerr != nil {
		t.Fatal(aerr)
	}
	var others []string
	for range 2 {
		s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
		if aerr != nil {
			t.Fatal(aerr)
		}
		others = append(others, s.ID)
		time.Sleep(10 * time.Millisecond) // distinct last uses
	}
	if _, aerr := d.Sessions.Resume(ctx, first); aerr != nil {
		t.Fatal(aerr)
	}
	if s, _ := d.Sessions.Get(others[0]); s.State != state.SessionHibernated {
		t.Errorf("the least recently used session: %s", s.State)
	}
	if s, _ := d.Sessions.Get(others[1]); s.State != state.SessionActive {
		t.Errorf("the most recently used session: %s", s.State)
	}
}

// max_hibernated bounds the hibernated sessions: past it a pause is
// refused and the session stays active.
func TestMaxHibernated(t *testing.T) {
	d, _, id := hibernating(t, "sessions {\n  max_hibernated = 0\n}")
	if _, aerr := d.Sessions.Pause(context.Background(), id); aerr == nil || !errdefs.Is(aerr, errdefs.TooLarge) {
		t.Fatalf("a pause past max_hibernated: %v", aerr)
	}
}

// hibernationPath is where session id's archive is, as its record says.
func hibernationPath(t *testing.T, d *daemon.Daemon, id string) string {
	t.Helper()
	s, aerr := d.Sessions.Get(id)
	if aerr != nil || s.Hibernation == nil {
		t.Fatalf("session %s is not hibernated: %+v %v", id, s, aerr)
	}
	return s.Hibernation.Path
}

func waitState(t *testing.T, d *daemon.Daemon, id, state string) {
	t.Helper()
	waitFor(t, "session "+id+" to be "+state, func() bool {
		s, aerr := d.Sessions.Get(id)
		return aerr == nil && s.State == state
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Many hibernated sessions called at once, more than sessions.max or
// than their language's pool holds: each waits for room, made by
// hibernating those whose call is done, and none is lost.
func TestResumeStorm(t *testing.T) {
	t.Run("sessions.max", func(t *testing.T) {
		d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: "sessions {\n  max = 2\n}"})
		resumeStorm(t, d)
		if c := d.Sessions.Counts(); c.Active > 2 {
			t.Errorf("%d sessions active, past sessions.max", c.Active)
		}
	})
	t.Run("pool max", func(t *testing.T) {
		d, _ := daemontest.New(t, `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle      = 0
    max           = 2
  }
}`)
		resumeStorm(t, d)
	})
}

func resumeStorm(t *testing.T, d *daemon.Daemon) {
	ctx := context.Background()
	var ids []string
	for i := range 8 {
		s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
		if aerr != nil {
			t.Fatal(aerr)
		}
		if _, _, aerr := d.Sessions.PutFile(ctx, s.ID, "marker", 0o644, nil, strings.NewReader(s.ID)); aerr != nil {
			t.Fatal(aerr)
		}
		if _, aerr := d.Sessions.Pause(ctx, s.ID); aerr != nil {
			t.Fatalf("pausing session %d: %v", i, aerr)
		}
		ids = append(ids, s.ID)
	}
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() {
			res, aerr := d.Exec(ctx, id, daemon.ExecRequest{Argv: []string{"cat", "marker"}}, nil)
			switch {
			case aerr != nil:
				errs <- fmt.Errorf("%s: %v", id, aerr)
			case string(res.Stdout) != id:
				errs <- fmt.Errorf("%s: read %q", id, res.Stdout)
			default:
				errs <- nil
			}
		}()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if c := d.Sessions.Counts(); c.Active+c.Hibernated != len(ids) || c.Lost != 0 {
		t.Errorf("after the storm: %+v", c)
	}
}
