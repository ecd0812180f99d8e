package sessions_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/runtime"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// sessions.max bounds the sessions open at once; a deleted one frees its
// place, and its container goes with it.
func TestMaxSessions(t *testing.T) {
	d, rt := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: "sessions {\n  max = 1\n}"})
	ctx := context.Background()
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"}); aerr == nil || !errdefs.Is(aerr, errdefs.TooManySessions) {
		t.Fatalf("a session past sessions.max: %v", aerr)
	}
	if aerr := d.Sessions.Delete(s.ID); aerr != nil {
		t.Fatal(aerr)
	}
	list, _ := rt.List(ctx)
	for _, c := range list {
		if c.ID == s.ContainerID {
			t.Errorf("the deleted session's container %s is still there", c.ID)
		}
	}
	if _, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"}); aerr != nil {
		t.Fatalf("a session after one was deleted: %v", aerr)
	}
}

// A session past its TTL is ended by the janitor, its container removed.
func TestSessionsExpire(t *testing.T) {
	d, rt := daemontest.New(t, daemontest.Bash)
	ctx := context.Background()
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash", TTL: time.Second})
	if aerr != nil {
		t.Fatal(aerr)
	}
	gone := func() bool { // the record first, then the container
		list, _ := rt.List(ctx)
		_, aerr := d.Sessions.Get(s.ID)
		return aerr != nil && errdefs.Is(aerr, errdefs.NotFound) && !slices.ContainsFunc(list, func(c runtime.Container) bool { return c.ID == s.ContainerID })
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if gone() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a session with a TTL of 1s, or its container, outlived it by 14s")
		}
	}
}

// A session's network changes within its language's ceiling, and its
// record keeps the change.
func TestSetNetwork(t *testing.T) {
	d, _ := daemontest.New(t, `
language "bash" {
  image = "sandboxd/bash:latest"
  pool { min_idle = 0 }
  network { allow = ["example.org", "pypi.org:443"] }
}`)
	ctx := context.Background()
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash", Network: &state.Network{Allow: []string{}}})
	if aerr != nil {
		t.Fatal(aerr)
	}
	got, aerr := d.Sessions.SetNetwork(ctx, s.ID, &state.Network{Allow: []string{"pypi.org:443"}})
	if aerr != nil || len(got.Network.Allow) != 1 || got.Network.Allow[0] != "pypi.org:443" {
		t.Fatalf("within the ceiling: %+v %v", got, aerr)
	}
	if _, aerr := d.Sessions.SetNetwork(ctx, s.ID, &state.Network{Allow: []string{"files.example.net"}}); aerr == nil || !errdefs.Is(aerr, errdefs.Invalid) {
		t.Fatalf("beyond the ceiling: %v", aerr)
	}
	if got, _ := d.Sessions.Get(s.ID); len(got.Network.Allow) != 1 {
		t.Fatalf("a refused change changed the record: %+v", got.Network)
	}
	if _, aerr := d.Sessions.SetNetwork(ctx, "s-none", &state.Network{}); aerr == nil || !errdefs.Is(aerr, errdefs.NotFound) {
		t.Fatalf("no such session: %v", aerr)
	}
}

// Ports lists what listens where the session's programs run: the fake
// runtime's sandboxes share the test's network, so the test's own
// listener is among them.
func TestPorts(t *testing.T) {
	d, _ := daemontest.New(t, daemontest.Bash)
	ctx := context.Background()
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	list, aerr := d.Sessions.Ports(ctx, s.ID)
	if aerr != nil {
		t.Fatal(aerr)
	}
	want := sessions.Port{Address: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}
	if !slices.Contains(list, want) {
		t.Errorf("%+v not among %+v", want, list)
	}
	if _, aerr := d.Sessions.Ports(ctx, "s-none"); aerr == nil || !errdefs.Is(aerr, errdefs.NotFound) {
		t.Errorf("no such session: %v", aerr)
	}
}

// What a session uses is sampled while it is awake; asking for it never
// wakes a hibernated session, whose series is kept.
func TestSessionMetrics(t *testing.T) {
	d, _ := daemontest.New(t, daemontest.Bash)
	ctx := context.Background()
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	var m *stats.SessionUsage
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if m, aerr = d.Sessions.Metrics(ctx, s.ID); aerr != nil {
			t.Fatal(aerr)
		}
		if len(m.Series) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 15 s the series has %d samples; one every %s was due", len(m.Series), time.Duration(m.Every))
		}
	}
	if m.Now == nil || m.Now.CPUSeconds <= 0 || m.Now.MemoryBytes <= 0 || m.Language != "bash" || m.Limits.Memory == 0 {
		t.Fatalf("an awake session's metrics: %+v", m)
	}
	if _, aerr := d.Sessions.Pause(ctx, s.ID); aerr != nil {
		t.Fatal(aerr)
	}
	if m, aerr = d.Sessions.Metrics(ctx, s.ID); aerr != nil || m.Now != nil || len(m.Series) < 2 {
		t.Fatalf("a hibernated session's metrics: %+v, %v", m, aerr)
	}
	if got, _ := d.Sessions.Get(s.ID); got.State != state.SessionHibernated {
		t.Fatalf("asking for its metrics woke the session: %s", got.State)
	}
	if _, aerr := d.Sessions.Metrics(ctx, "nosuchsession"); aerr == nil || !errdefs.Is(aerr, errdefs.NotFound) {
		t.Fatalf("an unknown session's metrics: %v", aerr)
	}
}
