package languages

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// imageState is what a language's containers are made from, as last
// resolved against the engine.
type imageState struct {
	ref     string // the image containers are created from
	id      string // its engine id; empty when it is missing
	err     error  // why no container can be made, and what to do
	version string // what the runtime's version command printed
}

// imageCell guards a language's imageState: builds and version probes
// change it while requests read it.
type imageCell struct {
	mu sync.Mutex
	st imageState
}

func (c *imageCell) get() imageState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *imageCell) set(st imageState) {
	c.mu.Lock()
	c.st = st
	c.mu.Unlock()
}

// setVersion records a version if the image is still the one probed.
func (c *imageCell) setVersion(id, version string) {
	c.mu.Lock()
	if c.st.id == id {
		c.st.version = version
	}
	c.mu.Unlock()
}

func (l *Language) target() images.Target {
	return images.Target{Language: l.Config.Name, Base: l.baseImage, Packages: l.Config.Packages, Install: l.Info.InstallCommand}
}

// ready tells why a language's containers cannot be made, if they cannot.
// A missing image is looked for again: it may have been built since, by
// `make images` as well as by Build.
func (r *Registry) ready(ctx context.Context, l *Language) error {
	if l.img.get().err == nil {
		return nil
	}
	st := r.resolveImage(ctx, l)
	if st.err == nil {
		l.pool.Renew()
	}
	return st.err
}

// resolveImage finds the image a language's containers are made from now.
func (r *Registry) resolveImage(ctx context.Context, l *Language) imageState {
	var st imageState
	st.ref, st.id, st.err = images.Resolve(ctx, r.rt, r.cfg.ImagesDir, l.target())
	if st.id != "" {
		st.version, _ = r.store.Version(st.id)
	}
	l.img.set(st)
	return st
}

// Build builds the images of the named languages (every language when
// none is named) and moves their pools to what was built. Version probes
// follow.
func (r *Registry) Build(ctx context.Context, names []string, progress func(api.ImageBuildEvent)) (*api.ImageBuildResult, *api.Error) {
	langs := r.langs
	if len(names) > 0 {
		langs = nil
		for _, name := range names {
			l, aerr := r.Resolve(name)
			if aerr != nil {
				return nil, aerr
			}
			langs = append(langs, l)
		}
	}
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	var ca []byte
	if r.cfg.BuildCAFile != "" {
		var err error
		if ca, err = os.ReadFile(r.cfg.BuildCAFile); err != nil {
			return nil, api.Errorf(api.CodeInternal, "reading build_ca_file: %v", err)
		}
	}
	var init []byte // the supervisor, for the images a cluster pulls
	targets := make([]images.Target, len(langs))
	for i, l := range langs {
		targets[i] = l.target()
		if k := r.cfg.Kubernetes; l.Config.Runtime == config.KubernetesRuntime && k.ImageRegistry != "" {
			if init == nil {
				var err error
				if init, err = os.ReadFile(r.cfg.Supervisor); err != nil {
					return nil, api.Errorf(api.CodeInternal, "reading the supervisor to put in the images of the cluster: %v", err)
				}
			}
			targets[i].Registry, targets[i].Supervisor = k.ImageRegistry, init
		}
		r.log.Info("building the images of a language", "language", l.Config.Name, "image", l.baseImage, "packages", l.Config.Packages)
	}
	res := images.Build(ctx, r.rt, r.cfg.ImagesDir, ca, targets, progress)
	for _, l := range r.langs {
		before := l.img.get()
		if after := r.resolveImage(ctx, l); after.id != before.id {
			l.pool.Renew()
		}
	}
	r.probe()
	return res, nil
}

// probe starts learning the runtimes' versions in the background.
func (r *Registry) probe() {
	r.probes.Add(1)
	go func() {
		defer r.probes.Done()
		r.probeVersions()
	}()
}

// probeVersions learns what each language's version command prints, one
// language at a time once the pools have filled, and once per image: the
// answer is kept in the store by image id.
func (r *Registry) probeVersions() {
	r.probeMu.Lock()
	defer r.probeMu.Unlock()
	for waited := 0; waited < 150 && r.poolsStarting(); waited++ {
		select {
		case <-r.closing.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, l := range r.langs {
		st := l.img.get()
		if st.id == "" || st.version != "" || len(l.Info.VersionCommand) == 0 {
			continue
		}
		select {
		case <-r.closing.Done():
			return
		case r.starts <- struct{}{}:
		}
		version, err := r.runtimeVersion(l, st)
		<-r.starts
		if err != nil && r.closing.Err() != nil {
			return // shutting down
		}
		if err != nil {
			r.log.Warn("asking the runtime for its version failed", "language", l.Config.Name, "image", st.ref, "error", err)
			continue
		}
		if err := r.store.PutVersion(st.id, version); err != nil {
			r.log.Warn("recording a runtime version failed", "error", err)
		}
		l.img.setVersion(st.id, version)
	}
}

func (r *Registry) poolsStarting() bool {
	for _, l := range r.langs {
		if l.pool.Stats().Starting > 0 {
			return true
		}
	}
	return false
}

// runtimeVersion runs the version command in a container of its own (a
// warm one would then have run something before its user) and keeps the
// first line it prints: `java -version` writes to stderr, most to stdout.
func (r *Registry) runtimeVersion(l *Language, st imageState) (string, error) {
	ctx, cancel := context.WithTimeout(r.closing, 30*time.Second)
	defer cancel()
	spec := r.spec(l)
	spec.Image = st.ref
	sb, err := r.Create(ctx, spec)
	if err != nil {
		return "", err
	}
	defer r.Remove(sb)
	var out [2]bytes.Buffer
	res, err := sb.Exec(ctx, supervisor.ExecRequest{Argv: l.Info.VersionCommand, TimeoutMS: 10_000, OutputLimit: 4 << 10, KillOnExit: true}, nil,
		func(stream string, data []byte) {
			if stream == supervisor.Stderr {
				out[1].Write(data)
			} else {
				out[0].Write(data)
			}
		})
	if err != nil {
		return "", err
	}
	for _, text := range []string{out[0].String(), out[1].String()} {
		for _, line := range strings.Split(text, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				return line[:min(len(line), 120)], nil
			}
		}
	}
	return "", fmt.Errorf("%v printed nothing (exit code %d)", l.Info.VersionCommand, res.ExitCode)
}
