package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	imagebuild "github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/plugins/language"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sandbox"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// A missing image sandboxd can build (build_missing_images) is built in
// the background: meanwhile the language says how far the build has got
// and its runs get image_building; once built, its pool fills and it
// serves.
func TestMissingImageBuildsThenServes(t *testing.T) {
	images := t.TempDir()
	if err := os.MkdirAll(filepath.Join(images, "held"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(images, "held", "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, rt := daemontest.NewWith(t, daemontest.Options{ImagesDir: images, Extra: "build_missing_images = true",
		Missing: []string{"sandboxd/held:latest"}, HoldBuilds: true, Languages: `
language "bash" {
  image = "sandboxd/held:latest"
  pool { min_idle = 1 }
}`})
	ctx := context.Background()
	langs := d.Sandboxes.List(ctx)
	if len(langs) != 1 || langs[0].Building == nil || langs[0].Error != "" {
		t.Fatalf("while the image builds: %+v", langs)
	}
	if _, aerr := d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: "true"}}, nil); aerr == nil || !errors.Is(aerr, imagebuild.ErrBuilding) {
		t.Fatalf("a run while the image builds: %v", aerr)
	}
	close(rt.Builds)
	waitFor(t, "the built image to serve", func() bool {
		res, aerr := d.Run(ctx, daemon.RunRequest{Language: "bash", Program: request.Program{Code: "echo served"}}, nil)
		return aerr == nil && string(res.Stdout) == "served\n"
	})
	if langs := d.Sandboxes.List(ctx); langs[0].Building != nil || !langs[0].ImagePresent {
		t.Fatalf("once built: %+v", langs[0])
	}
}

// A container whose run did not end cleanly is removed, never recycled;
// one whose run did is kept for the next.
func TestOnlyCleanRunsAreRecycled(t *testing.T) {
	d, rt := daemontest.New(t, daemontest.Bash)
	ctx := context.Background()
	l, aerr := d.Languages.Resolve("bash")
	if aerr != nil {
		t.Fatal(aerr)
	}
	listed := func(id string) bool {
		list, _ := rt.List(ctx)
		for _, c := range list {
			if c.ID == id {
				return true
			}
		}
		return false
	}
	dirty, err := d.Sandboxes.Acquire(ctx, sandbox.Ask{Language: l, Limits: l.Limits()})
	if err != nil {
		t.Fatal(err)
	}
	dirty.Spoil("1 processes survived the kill at the deadline")
	dirty.Release()
	waitFor(t, "the container of a run that did not end cleanly to go", func() bool { return !listed(dirty.Sandbox().ID) })

	clean, err := d.Sandboxes.Acquire(ctx, sandbox.Ask{Language: l, Limits: l.Limits()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clean.Run(ctx, sandbox.Job{Steps: []language.Step{{Name: "run", Argv: []string{"true"}}}}, l.Limits(), nil); err != nil {
		t.Fatal(err)
	}
	clean.Release()
	waitFor(t, "the container of a clean run back in the pool", func() bool {
		p := d.Sandboxes.Pools()["bash"]
		return p.Recycling == 0 && p.Recycled == 1 && p.IdleUsed == 1
	})
	if !listed(clean.Sandbox().ID) {
		t.Error("the container of a clean run was removed")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
