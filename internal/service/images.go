package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// imageState is what a language's containers are made from, as last
// resolved against the engine.
type imageState struct {
	ref     string // the image containers are created from
	id      string // its engine id; empty when it is missing
	err     error  // why no container can be made, and what to do
	version string // what the runtime's version command printed
}

// ready tells why a language's containers cannot be made, if they cannot.
// A missing image is looked for again: it may have been built since, by
// `make images` as well as by BuildImages.
func (s *Service) ready(ctx context.Context, l *lang) error {
	if l.img.get().err == nil {
		return nil
	}
	st := s.resolveImage(ctx, l)
	if st.err == nil {
		l.pool.Renew()
	}
	return st.err
}

// imageMissing is runtime.ErrImageMissing with what to do about it.
type imageMissing string

func (e imageMissing) Error() string        { return string(e) }
func (e imageMissing) Is(target error) bool { return target == runtime.ErrImageMissing }

// langImage guards a language's imageState: builds and version probes
// change it while requests read it.
type langImage struct {
	mu sync.Mutex
	st imageState
}

func (li *langImage) get() imageState {
	li.mu.Lock()
	defer li.mu.Unlock()
	return li.st
}

func (li *langImage) set(st imageState) {
	li.mu.Lock()
	li.st = st
	li.mu.Unlock()
}

// setVersion records a version if the image is still the one probed.
func (li *langImage) setVersion(id, version string) {
	li.mu.Lock()
	if li.st.id == id {
		li.st.version = version
	}
	li.mu.Unlock()
}

// resolveImage finds the image a language's containers are made from: the
// configured one, or the image derived from it with the block's packages.
func (s *Service) resolveImage(ctx context.Context, l *lang) imageState {
	st := imageState{ref: l.baseImage}
	base, err := s.rt.Image(ctx, l.baseImage)
	switch {
	case errors.Is(err, runtime.ErrImageMissing):
		how := fmt.Sprintf("build it with `sandboxctl images build %s` (or `make images`)", l.cfg.Name)
		if _, ok := images.Source(s.cfg.ImagesDir, l.baseImage); !ok {
			how = fmt.Sprintf("sandboxd builds only images with a Dockerfile in %s: build or load it into the engine yourself", s.cfg.ImagesDir)
		}
		st.err = imageMissing(fmt.Sprintf("image %s of language %s is missing: %s", l.baseImage, l.cfg.Name, how))
	case err != nil:
		st.err = err
	case len(l.cfg.Packages) == 0:
		st.id = base.ID
	default:
		b := images.Derived(l.cfg.Name, l.baseImage, base, l.info.InstallCommand, l.cfg.Packages, nil)
		st.ref = b.Tag
		derived, err := s.rt.Image(ctx, b.Tag)
		switch {
		case errors.Is(err, runtime.ErrImageMissing):
			st.err = imageMissing(fmt.Sprintf("image %s (%s with packages %s) of language %s is not built yet: build it with `sandboxctl images build %s`",
				b.Tag, l.baseImage, strings.Join(l.cfg.Packages, " "), l.cfg.Name, l.cfg.Name))
		case err != nil:
			st.err = err
		default:
			st.id = derived.ID
		}
	}
	if st.id != "" {
		st.version, _ = s.store.Version(st.id)
	}
	l.img.set(st)
	return st
}

// probeVersions learns what each language's version command prints, one
// language at a time once the pools have filled, and once per image: the
// answer is kept in the store by image id.
func (s *Service) probeVersions() {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	for waited := 0; waited < 150 && s.poolsStarting(); waited++ {
		select {
		case <-s.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, l := range s.langs {
		st := l.img.get()
		if st.id == "" || st.version != "" || len(l.info.VersionCommand) == 0 {
			continue
		}
		if s.enter() != nil {
			return
		}
		s.starts <- struct{}{}
		version, err := s.runtimeVersion(l, st)
		<-s.starts
		s.leave()
		if err != nil {
			s.log.Warn("asking the runtime for its version failed", "language", l.cfg.Name, "image", st.ref, "error", err)
			continue
		}
		if err := s.store.PutVersion(st.id, version); err != nil {
			s.log.Warn("recording a runtime version failed", "error", err)
		}
		l.img.setVersion(st.id, version)
	}
}

func (s *Service) poolsStarting() bool {
	for _, l := range s.langs {
		if l.pool.Stats().Starting > 0 {
			return true
		}
	}
	return false
}

// runtimeVersion runs the version command in a container of its own (a
// warm one would then have run something before its user) and keeps the
// first line it prints: `java -version` writes to stderr, most to stdout.
func (s *Service) runtimeVersion(l *lang, st imageState) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := s.spec(l)
	spec.Image = st.ref
	sb, err := s.createSandbox(ctx, spec)
	if err != nil {
		return "", err
	}
	defer s.removeSandbox(sb)
	col := &collector{}
	limits := config.Limits{Timeout: 10 * time.Second, OutputLimit: 4 << 10}
	plan := language.Plan{Steps: []language.Step{{Name: "version", Argv: l.info.VersionCommand}}}
	res, _, err := runSteps(ctx, sb, plan, nil, nil, limits, "", true, col)
	if err != nil {
		return "", err
	}
	for _, out := range []string{col.bufs[0].String(), col.bufs[1].String()} {
		for _, line := range strings.Split(out, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				return line[:min(len(line), 120)], nil
			}
		}
	}
	return "", fmt.Errorf("%v printed nothing (exit code %d)", l.info.VersionCommand, res.ExitCode)
}

// BuildImages builds the images of the named languages (every language
// when none is named): each language's image from its Dockerfile under
// images_dir (from the engine's layer cache when nothing changed), then
// the image derived from it with the block's packages. Languages sharing
// an image build it once. progress receives the builds' output; warm
// containers of a rebuilt image are replaced.
func (s *Service) BuildImages(ctx context.Context, req api.ImageBuildRequest, progress func(api.ImageBuildEvent)) (*api.ImageBuildResult, *api.Error) {
	if aerr := s.enter(); aerr != nil {
		return nil, aerr
	}
	defer s.leave()
	langs := s.langs
	if len(req.Languages) > 0 {
		langs = nil
		for _, name := range req.Languages {
			l, aerr := s.resolve(name)
			if aerr != nil {
				return nil, aerr
			}
			langs = append(langs, l)
		}
	}
	s.buildMu.Lock()
	defer s.buildMu.Unlock()

	var ca []byte
	if s.cfg.BuildCAFile != "" {
		var err error
		if ca, err = os.ReadFile(s.cfg.BuildCAFile); err != nil {
			return nil, apiErr(api.CodeInternal, "reading build_ca_file: %v", err)
		}
	}
	res := &api.ImageBuildResult{Images: []api.ImageBuilt{}}
	done := map[string]bool{}
	build := func(l *lang, b runtime.ImageBuild, packages []string) error {
		if done[b.Tag] {
			return nil
		}
		done[b.Tag] = true
		started := time.Now()
		s.log.Info("building an image", "language", l.cfg.Name, "image", b.Tag)
		err := s.rt.BuildImage(ctx, b, func(line string) {
			progress(api.ImageBuildEvent{Type: "progress", Image: b.Tag, Line: line})
		})
		entry := api.ImageBuilt{Language: l.cfg.Name, Image: b.Tag, Packages: packages, DurationMS: ms(time.Since(started))}
		if err != nil {
			entry.Error = err.Error()
			if len(packages) == 0 {
				entry.Error += " (a missing sandboxd/base image is made by `make images`, which needs debootstrap)"
			}
		}
		res.Images = append(res.Images, entry)
		return err
	}
	for _, l := range langs {
		if src, ok := images.Source(s.cfg.ImagesDir, l.baseImage); ok {
			if build(l, src, nil) != nil {
				continue
			}
		} else if len(l.cfg.Packages) == 0 && !done[l.baseImage] {
			done[l.baseImage] = true
			entry := api.ImageBuilt{Language: l.cfg.Name, Image: l.baseImage, Note: "not built by sandboxd (no Dockerfile for it in " + s.cfg.ImagesDir + ")"}
			if err := s.resolveImage(ctx, l).err; err != nil {
				entry.Error = err.Error()
			}
			res.Images = append(res.Images, entry)
		}
		if len(l.cfg.Packages) > 0 {
			base, err := s.rt.Image(ctx, l.baseImage)
			if err != nil {
				res.Images = append(res.Images, api.ImageBuilt{Language: l.cfg.Name, Image: l.baseImage, Packages: l.cfg.Packages,
					Error: fmt.Sprintf("the image to add packages to: %v", err)})
				continue
			}
			_ = build(l, images.Derived(l.cfg.Name, l.baseImage, base, l.info.InstallCommand, l.cfg.Packages, ca), l.cfg.Packages)
		}
	}
	for _, l := range s.langs {
		before := l.img.get()
		if after := s.resolveImage(ctx, l); after.id != before.id {
			l.pool.Renew()
		}
	}
	go s.probeVersions()
	return res, nil
}
