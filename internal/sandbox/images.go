package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// imageState is what a language's containers are made from, as last
// resolved against the engine.
type imageState struct {
	ref string // the image containers are created from
	id  string // its engine id; empty when it is missing
	// workspaceAt is where its containers' workspace is mounted (see
	// runtime.WorkspaceMount).
	workspaceAt string
	err         error  // why no container can be made, and what to do
	version     string // what the runtime's version command printed
}

// Building is a language's image build under way: since when, and how
// far it has got (e.g. "Step 3/9 : RUN apt-get ...").
type Building struct {
	Since time.Time
	Step  string
}

// imageCell guards a language's imageState: builds and version probes
// change it while requests read it. While sandboxd builds the image in
// the background (see buildMissing), building says since when and how
// far it has got.
type imageCell struct {
	mu       sync.Mutex
	st       imageState
	building *Building
}

// startBuilding marks the image as being built from now.
func (c *imageCell) startBuilding(now time.Time) {
	c.mu.Lock()
	c.building = &Building{Since: now, Step: "waiting for another build to end"}
	c.mu.Unlock()
}

// buildStep records how far the build has got.
func (c *imageCell) buildStep(step string) {
	c.mu.Lock()
	if c.building != nil {
		b := *c.building
		b.Step = step
		c.building = &b
	}
	c.mu.Unlock()
}

// doneBuilding marks the build ended (its image resolved after).
func (c *imageCell) doneBuilding() {
	c.mu.Lock()
	c.building = nil
	c.mu.Unlock()
}

// buildingNow is the build under way, if one is.
func (c *imageCell) buildingNow() *Building {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.building
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

func (l *kind) target() images.Target {
	return images.Target{Language: l.Config.Name, Base: l.BaseImage(), Packages: l.Config.Packages, Install: l.Info.InstallCommand}
}

// ready tells why a language's containers cannot be made, if they cannot.
// A missing image is looked for again: it may have been built since, by
// `make images` as well as by Build.
func (p *Provider) ready(ctx context.Context, l *kind) error {
	if l.img.get().err == nil {
		return nil
	}
	if b := l.img.buildingNow(); b != nil {
		return images.Building(l.Config.Name, l.BaseImage(), b.Step, time.Since(b.Since))
	}
	st := p.resolveImage(ctx, l)
	if st.err == nil {
		l.pool.Renew()
	}
	return st.err
}

// resolveImage finds the image a language's containers are made from now.
func (p *Provider) resolveImage(ctx context.Context, l *kind) imageState {
	var st imageState
	var img runtime.Image
	st.ref, img, st.err = images.Resolve(ctx, p.rt, p.cfg.ImagesDir, l.target())
	if st.err == nil {
		if st.workspaceAt, st.err = runtime.WorkspaceMount(img.Labels); st.err != nil {
			st.err = fmt.Errorf("image %s of language %s: %w", st.ref, l.Name(), st.err)
		}
	}
	if st.err == nil {
		st.id = img.ID
		st.version, _ = p.store.Version(st.id)
	}
	l.img.set(st)
	return st
}

// Build builds the images of the named languages (every language when
// none is named) and moves their pools to what was built. Version probes
// follow.
func (p *Provider) Build(ctx context.Context, names []string, progress func(image, line string)) ([]images.Built, error) {
	langs := p.kinds
	if len(names) > 0 {
		langs = nil
		for _, name := range names {
			l, aerr := p.langs.Resolve(name)
			if aerr != nil {
				return nil, aerr
			}
			langs = append(langs, p.of[l])
		}
	}
	p.buildMu.Lock()
	defer p.buildMu.Unlock()
	targets, ca, err := p.targets(langs)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	res := images.Build(ctx, p.rt, p.cfg.ImagesDir, ca, targets, progress)
	for _, l := range p.kinds {
		before := l.img.get()
		if after := p.resolveImage(ctx, l); after.id != before.id {
			l.pool.Renew()
		}
	}
	p.pullOnNodes(ctx, langs, res, progress)
	p.probe()
	return res, nil
}

// pullOnNodes has the nodes that may run the cluster languages among langs
// pull the images just pushed for them, so that no first run waits for a
// pull. Each node's word comes as progress; a failure is the error of the
// language's entry (its image was pushed all the same).
func (p *Provider) pullOnNodes(ctx context.Context, langs []*kind, res []images.Built, progress func(image, line string)) {
	puller := runtime.Pulls(p.rt)
	for _, l := range langs {
		last := -1
		for i, e := range res {
			if e.Language == l.Config.Name {
				last = i
			}
		}
		st := l.img.get()
		if l.Config.Runtime != config.KubernetesRuntime || last < 0 || res[last].Error != "" || st.err != nil {
			continue
		}
		e := &res[last]
		var err error
		e.PulledBy, err = puller.Pull(ctx, l.Config.Runtime, l.Config.Name, st.ref, func(line string) {
			progress(e.Image, line)
		})
		if err != nil {
			e.Error = "pushed, but the nodes did not all pull it: " + err.Error()
		}
	}
}

// targets are the builds of langs' images, with the CA bundle they
// trust.
func (p *Provider) targets(langs []*kind) ([]images.Target, []byte, error) {
	var ca []byte
	if p.cfg.BuildCAFile != "" {
		var err error
		if ca, err = os.ReadFile(p.cfg.BuildCAFile); err != nil {
			return nil, nil, fmt.Errorf("reading build_ca_file: %w", err)
		}
	}
	var init []byte // the supervisor, for the images a cluster pulls
	targets := make([]images.Target, len(langs))
	for i, l := range langs {
		targets[i] = l.target()
		if k := p.cfg.Kubernetes; l.Config.Runtime == config.KubernetesRuntime && k.ImageRegistry != "" {
			if init == nil {
				var err error
				if init, err = os.ReadFile(p.cfg.Supervisor); err != nil {
					return nil, nil, fmt.Errorf("reading the supervisor to put in the images of the cluster: %w", err)
				}
			}
			targets[i].Registry, targets[i].Supervisor = k.ImageRegistry, init
		}
		p.log.Info("building the images of a language", "language", l.Config.Name, "image", l.BaseImage(), "packages", l.Config.Packages)
	}
	return targets, ca, nil
}

// backgroundBuilds is how many images buildMissing builds at once: a
// build waits mostly on the network and the disk, so two overlap well on
// two cores without starving the languages already serving.
const backgroundBuilds = 2

// missingImages marks the languages whose image is missing and that
// sandboxd can build (see buildsMissing) as building, and groups them by
// image, in config order: the work of buildMissing.
func (p *Provider) missingImages() [][]*kind {
	var groups [][]*kind
	byImage := map[string]int{}
	for _, l := range p.kinds {
		if !p.buildsMissing(l) || !errors.Is(l.img.get().err, runtime.ErrImageMissing) {
			continue
		}
		l.img.startBuilding(time.Now())
		if i, ok := byImage[l.BaseImage()]; ok {
			groups[i] = append(groups[i], l)
			continue
		}
		byImage[l.BaseImage()] = len(groups)
		groups = append(groups, []*kind{l})
	}
	return groups
}

// buildMissing builds the images of groups (see missingImages), one
// build per group, backgroundBuilds at once. Each language says it is
// building until its own image lands, then its pool fills and it serves.
func (p *Provider) buildMissing(groups [][]*kind) {
	slots := make(chan struct{}, backgroundBuilds)
	var wg sync.WaitGroup
	for _, langs := range groups {
		select {
		case slots <- struct{}{}:
		case <-p.closing.Done():
			for _, l := range langs {
				l.img.doneBuilding()
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			p.buildInBackground(langs)
		}()
	}
	wg.Wait()
	p.probe()
}

// buildsMissing says whether buildMissing would build l's image if it
// were missing: the config asks for it, and a Dockerfile in images_dir
// builds it, or it is packages to add to an image (a missing base is
// then reported by the build).
func (p *Provider) buildsMissing(l *kind) bool {
	if !p.cfg.BuildMissingImages {
		return false
	}
	_, ok := images.Source(p.cfg.ImagesDir, l.BaseImage(), nil)
	return ok || len(l.Config.Packages) > 0
}

// buildInBackground builds the image langs share and puts them to work
// on it.
func (p *Provider) buildInBackground(langs []*kind) {
	defer func() {
		for _, l := range langs {
			l.img.doneBuilding()
		}
	}()
	if p.closing.Err() != nil {
		return
	}
	started := time.Now()
	for _, l := range langs {
		l.img.buildStep("starting")
	}
	targets, ca, err := p.targets(langs)
	if err != nil {
		p.log.Error("building a missing image failed", "language", langs[0].Config.Name, "error", err)
		return
	}
	res := images.Build(p.closing, p.rt, p.cfg.ImagesDir, ca, targets, func(_, line string) {
		if step, ok := images.Step(line); ok {
			for _, l := range langs {
				l.img.buildStep(step)
			}
		}
	})
	for _, b := range res {
		if b.Error != "" {
			p.log.Error("building a missing image failed", "language", b.Language, "image", b.Image, "error", b.Error)
		}
	}
	for _, l := range langs {
		if st := p.resolveImage(p.closing, l); st.err == nil {
			p.log.Info("a missing image was built; the language serves", "language", l.Config.Name, "image", st.ref,
				"took", time.Since(started).Round(time.Second))
			l.pool.Renew()
		}
	}
}

// probe starts learning the runtimes' versions in the background.
func (p *Provider) probe() { p.background(p.probeVersions) }

// background runs fn on a goroutine of its own that Close waits for.
func (p *Provider) background(fn func()) {
	p.work.Add(1)
	go func() {
		defer p.work.Done()
		fn()
	}()
}

// probeVersions learns what each language's version command prints, one
// language at a time once the pools have filled, and once per image: the
// answer is kept in the store by image id.
func (p *Provider) probeVersions() {
	p.probeMu.Lock()
	defer p.probeMu.Unlock()
	for waited := 0; waited < 150 && p.poolsStarting(); waited++ {
		select {
		case <-p.closing.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, l := range p.kinds {
		st := l.img.get()
		if st.id == "" || st.version != "" || len(l.Info.VersionCommand) == 0 {
			continue
		}
		select {
		case <-p.closing.Done():
			return
		case p.starts <- struct{}{}:
		}
		version, err := p.runtimeVersion(l, st)
		<-p.starts
		if err != nil && p.closing.Err() != nil {
			return // shutting down
		}
		if err != nil {
			p.log.Warn("asking the runtime for its version failed", "language", l.Config.Name, "image", st.ref, "error", err)
			continue
		}
		if err := p.store.PutVersion(st.id, version); err != nil {
			p.log.Warn("recording a runtime version failed", "error", err)
		}
		l.img.setVersion(st.id, version)
	}
}

func (p *Provider) poolsStarting() bool {
	for _, l := range p.kinds {
		if l.pool.Stats().Starting > 0 {
			return true
		}
	}
	return false
}

// runtimeVersion runs the version command in a container of its own (a
// warm one would then have run something before its user) and keeps the
// first line it prints: `java -version` writes to stderr, most to stdout.
func (p *Provider) runtimeVersion(l *kind, st imageState) (string, error) {
	ctx, cancel := context.WithTimeout(p.closing, 30*time.Second)
	defer cancel()
	spec := p.spec(l)
	spec.Image = st.ref
	sb, err := p.start(ctx, spec)
	if err != nil {
		return "", err
	}
	defer p.remove(sb)
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
