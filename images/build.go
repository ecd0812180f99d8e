package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/runtime"
)

// buildTimeout bounds one image build: packages come from the network.
const buildTimeout = 30 * time.Minute

// Target is the image a language's containers are made from: its
// configured image, and the packages its block adds to it.
type Target struct {
	Language string
	Base     string   // the configured image (or the plugin's default)
	Packages []string // none: the base itself
	Install  []string // the plugin's install command (language.Info)

	// Registry, when set, is where a cluster pulls the language's image
	// from: the image is pushed there, with Supervisor in it.
	Registry   string
	Supervisor []byte
}

// Missing is runtime.ErrImageMissing with what to do about it.
type Missing string

func (e Missing) Error() string        { return string(e) }
func (e Missing) Is(target error) bool { return target == runtime.ErrImageMissing }
func (e Missing) Kind() errdefs.Kind   { return errdefs.ImageMissing }

// ErrBuilding means the image is being built: a request for it may be
// retried once the build ends.
var ErrBuilding = errdefs.New(errdefs.ImageBuilding, "image being built")

// RetryAfter is when a request for an image being built is worth trying
// again.
const RetryAfter = 15 * time.Second

// Building is ErrBuilding for a language's image, with how far its build
// has got and when to retry.
func Building(lang, image, step string, elapsed time.Duration) error {
	return fmt.Errorf("%w: sandboxd is building %s, the image of language %s (%s; %s so far): retry in %s; `sandboxctl languages` shows its progress",
		ErrBuilding, image, lang, step, elapsed.Round(time.Second), RetryAfter)
}

// Step is the step a build's output line says it has reached ("Step 3/9
// : RUN apt-get ..."), shortened.
func Step(line string) (string, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "Step ") {
		return "", false
	}
	if len(line) > 72 {
		line = line[:69] + "..."
	}
	return line, true
}

// Resolve finds the image t's containers are made from in the engine:
// its reference and what the engine says of it, or why there is none
// (Missing says how to build it). dir is the directory of Dockerfiles
// sandboxd builds from.
func Resolve(ctx context.Context, rt runtime.Runtime, dir string, t Target) (string, runtime.Image, error) {
	base, err := rt.Image(ctx, t.Base)
	switch {
	case errors.Is(err, runtime.ErrImageMissing):
		how := fmt.Sprintf("build it with `sandboxctl images build %s` (or `make images`)", t.Language)
		if _, ok := Source(dir, t.Base, nil); !ok {
			how = fmt.Sprintf("sandboxd builds only images with a Dockerfile in %s: build or load it into the engine yourself", dir)
		}
		return t.Base, runtime.Image{}, Missing(fmt.Sprintf("image %s of language %s is missing: %s", t.Base, t.Language, how))
	case err != nil:
		return t.Base, runtime.Image{}, err
	case len(t.Packages) == 0:
		return t.Base, base, nil
	}
	b := Derived(t.Language, t.Base, base, t.Install, t.Packages, nil)
	derived, err := rt.Image(ctx, b.Tag)
	switch {
	case errors.Is(err, runtime.ErrImageMissing):
		return b.Tag, runtime.Image{}, Missing(fmt.Sprintf("image %s (%s with packages %s) of language %s is not built yet: build it with `sandboxctl images build %s`",
			b.Tag, t.Base, strings.Join(t.Packages, " "), t.Language, t.Language))
	case err != nil:
		return b.Tag, runtime.Image{}, err
	}
	return b.Tag, derived, nil
}

// Built is what became of one image a build made, or would have.
type Built struct {
	Language string
	Image    string   // a registry's name: built and pushed
	Packages []string // set for an image derived with packages
	Took     time.Duration
	Note     string // e.g. an image sandboxd does not build
	// PulledBy are the cluster nodes that pulled the image once it was
	// pushed (a language in pods).
	PulledBy []string
	Error    string
}

// Build builds the targets' images: each base from its Dockerfile in dir
// (from the engine's layer cache when nothing changed), then the image
// derived from it with the target's packages, trusting the CA bundle ca
// while they install, then the image pushed to the target's registry, if
// it has one. Targets sharing an image build it once. progress
// receives the builds' output lines; a failed image is reported in its
// entry, and the others are still built.
func Build(ctx context.Context, rt runtime.Runtime, dir string, ca []byte, targets []Target, progress func(image, line string)) []Built {
	res := []Built{}
	done := map[string]bool{}
	var build func(t Target, b runtime.ImageBuild, packages []string) error
	build = func(t Target, b runtime.ImageBuild, packages []string) error {
		if done[b.Tag] {
			return nil
		}
		done[b.Tag] = true
		// What a Dockerfile builds on of sandboxd's is made here first, or
		// found, never pulled: a registry's sandboxd/... is anyone's.
		for _, ref := range buildsOn(b) {
			if _, err := rt.Image(ctx, ref); !errors.Is(err, runtime.ErrImageMissing) {
				continue
			}
			src, ok := Source(dir, ref, ca)
			if !ok {
				err := fmt.Errorf("%s builds on %s, which the engine lacks: `make images` makes it (a base, with debootstrap), or load it", b.Tag, ref)
				res = append(res, Built{Language: t.Language, Image: b.Tag, Packages: packages, Error: err.Error()})
				return err
			}
			if err := build(t, src, nil); err != nil {
				return err
			}
		}
		started := time.Now()
		ctx, cancel := context.WithTimeout(ctx, buildTimeout)
		defer cancel()
		err := rt.BuildImage(ctx, b, func(line string) {
			progress(b.Tag, line)
		})
		entry := Built{Language: t.Language, Image: b.Tag, Packages: packages, Took: time.Since(started)}
		if err != nil {
			entry.Error = err.Error()
		}
		res = append(res, entry)
		return err
	}
	for _, t := range targets {
		if src, ok := Source(dir, t.Base, ca); ok {
			if build(t, src, nil) != nil {
				continue
			}
		} else if len(t.Packages) == 0 && !done[t.Base] {
			done[t.Base] = true
			entry := Built{Language: t.Language, Image: t.Base, Note: "not built by sandboxd (no Dockerfile for it in " + dir + ")"}
			if _, _, err := Resolve(ctx, rt, dir, t); err != nil {
				entry.Error = err.Error()
			}
			res = append(res, entry)
		}
		if len(t.Packages) > 0 {
			base, err := rt.Image(ctx, t.Base)
			if err != nil {
				res = append(res, Built{Language: t.Language, Image: t.Base, Packages: t.Packages,
					Error: fmt.Sprintf("the image to add packages to: %v", err)})
				continue
			}
			if build(t, Derived(t.Language, t.Base, base, t.Install, t.Packages, ca), t.Packages) != nil {
				continue
			}
		}
		if t.Registry != "" {
			ref, img, err := Resolve(ctx, rt, dir, t)
			if err != nil {
				res = append(res, Built{Language: t.Language, Image: t.Registry + "/" + ref, Packages: t.Packages,
					Error: fmt.Sprintf("the image to push: %v", err)})
				continue
			}
			_ = build(t, Pushed(t.Registry, ref, img.ID, t.Supervisor), t.Packages)
		}
	}
	return res
}

// sandboxdImage is a line of a Dockerfile that builds on one of
// sandboxd's images: FROM it, or a build argument's default naming it.
var sandboxdImage = regexp.MustCompile(`(?m)^\s*(?:FROM|ARG\s+\w+=)\s*(sandboxd/[a-z0-9._-]+(?::[\w.-]+)?)`)

// buildsOn are the images of sandboxd's that b's Dockerfile builds on.
func buildsOn(b runtime.ImageBuild) []string {
	if b.Dir == "" {
		return nil
	}
	df, err := os.ReadFile(filepath.Join(b.Dir, "Dockerfile"))
	if err != nil {
		return nil
	}
	var refs []string
	for _, m := range sandboxdImage.FindAllStringSubmatch(string(df), -1) {
		if ref := m[1]; ref != b.Tag && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return refs
}
