package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/sandboxd/sandboxd/runtime"
)

// Image implements runtime.Runtime.
func (d *Docker) Image(ctx context.Context, ref string) (runtime.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	img, err := d.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return runtime.Image{}, fmt.Errorf("%w: %s", runtime.ErrImageMissing, ref)
	}
	if err != nil {
		return runtime.Image{}, d.engineError("inspecting image "+ref, err)
	}
	out := runtime.Image{ID: img.ID}
	if img.Config != nil {
		out.User, out.Labels = img.Config.User, img.Config.Labels
	}
	return out, nil
}

// BuildImage implements runtime.Runtime with the engine's classic builder,
// which every engine since 1.41 has (BuildKit needs the buildx plugin),
// and pushes the image when the build asks.
func (d *Docker) BuildImage(ctx context.Context, b runtime.ImageBuild, progress func(string)) error {
	if err := d.build(ctx, b, progress); err != nil || !b.Push {
		return err
	}
	// No credentials: the registries a cluster of this host pulls from
	// without them. The engine wants the header all the same.
	resp, err := d.cli.ImagePush(ctx, b.Tag, image.PushOptions{RegistryAuth: base64.URLEncoding.EncodeToString([]byte("{}"))})
	if err != nil {
		return d.engineError("pushing "+b.Tag, err)
	}
	defer resp.Close()
	return follow(resp, "pushing "+b.Tag, progress)
}

func (d *Docker) build(ctx context.Context, b runtime.ImageBuild, progress func(string)) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(buildContext(pw, b)) }()
	defer pr.Close()
	resp, err := d.cli.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags: []string{b.Tag}, Labels: b.Labels, NetworkMode: "host",
		Remove: true, ForceRemove: true, Version: build.BuilderV1,
	})
	if err != nil {
		return d.engineError("building "+b.Tag, err)
	}
	defer resp.Body.Close()
	return follow(resp.Body, "building "+b.Tag, progress)
}

// follow reads the engine's progress messages of a build or a push to
// the end, telling progress their lines; the first error ends it.
func follow(r io.Reader, what string, progress func(string)) error {
	dec := json.NewDecoder(r)
	for {
		var msg jsonmessage.JSONMessage
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: reading the engine's answer: %w", what, err)
		}
		if msg.Error != nil {
			text := failedStep.ReplaceAllString(strings.TrimSpace(msg.Error.Message), "a RUN step exited with code $1 (its output is in the build's progress)")
			return fmt.Errorf("%s: %s", what, text)
		}
		line := msg.Stream + msg.Status
		switch {
		case msg.Progress != nil && msg.Progress.Current > 0:
			continue // a layer's progress bar
		case msg.ID != "" && msg.Status != "":
			line = msg.ID + ": " + msg.Status // a layer's step
		}
		sc := bufio.NewScanner(strings.NewReader(ansi.ReplaceAllString(line, "")))
		for sc.Scan() {
			if line := strings.TrimRight(sc.Text(), " \r"); line != "" {
				progress(line)
			}
		}
	}
}

// buildContext writes the tar the engine builds from: the directory, or
// the files.
func buildContext(w io.Writer, b runtime.ImageBuild) error {
	tw := tar.NewWriter(w)
	if b.Dir != "" {
		if err := tw.AddFS(os.DirFS(b.Dir)); err != nil {
			return fmt.Errorf("packing %s: %w", b.Dir, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		data := b.Files[name]
		mode := int64(0o644)
		if slices.Contains(b.Executables, name) {
			mode = 0o555
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// failedStep shortens the classic builder's "The command '<whole script>'
// returned a non-zero code: N": the script is in the Dockerfile, its
// output was in the progress.
var failedStep = regexp.MustCompile(`(?s)^The command .* returned a non-zero code: (\d+)$`)

// ansi matches the colour codes the builder wraps a step's stderr in.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)
