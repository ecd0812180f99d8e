package plugins_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/policy"
)

// misbehaving starts the test policy plugin that fails on request, over
// real go-plugin gRPC.
func misbehaving(t *testing.T, callTimeout time.Duration) plugins.Policy {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, plugins.KindPolicy.BinaryName("misbehave"))
	if out, err := exec.Command("go", "build", "-o", bin, "../internal/testutil/misbehave").CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	p, err := plugins.NewProcess(dir, plugins.KindPolicy, "misbehave", callTimeout, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return plugins.Policy{Process: p}
}

func check(p plugins.Policy, behave string) error {
	_, err := p.Check(context.Background(), policy.Request{Options: map[string]string{"behave": behave}})
	return err
}

// recovers waits, bounded, for the plugin to answer again after its backoff.
func recovers(t *testing.T, p plugins.Policy) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for err := check(p, "ok"); err != nil; err = check(p, "ok") {
		if !errors.Is(err, plugins.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("no recovery: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval; the backoff is 200 ms
	}
	if h := p.Health(); !h.Running || h.Restarts < 1 {
		t.Fatalf("health after a restart: %+v", h)
	}
}

func TestCrashMidCallIsUnavailableAndRestarts(t *testing.T) {
	p := misbehaving(t, 10*time.Second)
	if err := check(p, "ok"); err != nil {
		t.Fatal(err)
	}
	err := check(p, "crash")
	if !errors.Is(err, plugins.ErrUnavailable) || !strings.Contains(err.Error(), "crashed") {
		t.Fatalf("a crash mid-call: %v", err)
	}
	recovers(t, p)
}

func TestHangIsUnavailableAfterTheCallDeadline(t *testing.T) {
	p := misbehaving(t, 300*time.Millisecond)
	err := check(p, "hang")
	if !errors.Is(err, plugins.ErrUnavailable) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("a hung call: %v", err)
	}
	recovers(t, p)
}

func TestPluginErrorIsNotUnavailable(t *testing.T) {
	p := misbehaving(t, 10*time.Second)
	err := check(p, "fail")
	if err == nil || errors.Is(err, plugins.ErrUnavailable) || !strings.Contains(err.Error(), "the plugin's own error") {
		t.Fatalf("a plugin's own error: %v", err)
	}
	if h := p.Health(); !h.Running || h.Restarts != 0 {
		t.Fatalf("the plugin was restarted for its own error: %+v", h)
	}
}
