// Package daemontest makes daemons for unit tests: on runtime/fake (the
// real supervisor in the test's process, no engine), with language
// plugins built from this module. No Docker, no network.
package daemontest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime/fake"
)

// Bash is a language block for the bash plugin (programs run by the
// host's sh), with a pool of one.
const Bash = `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 1
    max      = 2
  }
}`

// Main is a test package's TestMain: it builds the language plugins the
// tests name (bash by default) into a directory New uses, runs the tests
// and removes it. The built-in policies need no binary.
func Main(m *testing.M, plugins ...string) {
	if len(plugins) == 0 {
		plugins = []string{"bash"}
	}
	dir, err := os.MkdirTemp("", "daemontest-")
	if err != nil {
		panic(err)
	}
	pluginDir = filepath.Join(dir, "plugins")
	for _, name := range plugins {
		bin, pkg := "sandbox-lang-"+name, "github.com/sandboxd/sandboxd/plugins/lang/"+name
		build := exec.Command("go", "build", "-o", filepath.Join(pluginDir, bin), pkg)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the %s plugin: %v\n%s", name, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var pluginDir string

// New is a daemon on the fake runtime configured with the HCL of
// languages (their images all present); Cleanup closes it.
func New(t testing.TB, languages string) (*daemon.Daemon, *fake.Runtime) {
	t.Helper()
	return NewWith(t, Options{Languages: languages})
}

// Options are a test daemon's configuration.
type Options struct {
	Languages string   // the language blocks
	Extra     string   // more top-level HCL
	ImagesDir string   // images_dir; default none
	Missing   []string // images the fake engine lacks at start
	// HoldBuilds holds every image build until the test sends on (or
	// closes) the runtime's Builds.
	HoldBuilds bool
	// Freezes makes the fake runtime a Freezer (see fake.Runtime.Freezes).
	Freezes bool
}

// NewWith is New with more to say.
func NewWith(t testing.TB, o Options) (*daemon.Daemon, *fake.Runtime) {
	t.Helper()
	d, rt, err := Open(t, o)
	if err != nil {
		t.Fatal(err)
	}
	return d, rt
}

// Open is NewWith that returns the error of a daemon that does not
// start (its configuration parsed).
func Open(t testing.TB, o Options) (*daemon.Daemon, *fake.Runtime, error) {
	t.Helper()
	if pluginDir == "" {
		t.Fatal("daemontest.New needs daemontest.Main as the package's TestMain")
	}
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "sandboxd.hcl"), []byte(fmt.Sprintf(`
socket     = %q
state_dir  = %q
plugin_dir = %q
supervisor = "/bin/true"
images_dir = %q
%s
%s
`, filepath.Join(dir, "s.sock"), filepath.Join(dir, "state"), pluginDir, o.ImagesDir, o.Extra, o.Languages)))
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, l := range cfg.Languages {
		if !slices.Contains(o.Missing, l.Image) {
			images = append(images, l.Image)
		}
	}
	rt := fake.New(filepath.Join(dir, "sandboxes"), images...)
	if o.HoldBuilds {
		rt.Builds = make(chan struct{})
	}
	rt.Freezes = o.Freezes
	d, err := daemon.New(context.Background(), cfg, rt, store, hclog.NewNullLogger())
	if err != nil {
		store.Close()
		rt.Close()
		return nil, nil, err
	}
	t.Cleanup(func() {
		d.Close(context.Background())
		store.Close()
		rt.Close()
	})
	return d, rt, nil
}
