package docker

import (
	"archive/tar"
	"bufio"
	"context"
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
// which every engine since 1.41 has (BuildKit needs the buildx plugin).
func (d *Docker) BuildImage(ctx context.Context, b runtime.ImageBuild, progress func(string)) error {
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
	dec := json.NewDecoder(resp.Body)
	for {
		var msg jsonmessage.JSONMessage
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("building %s: reading the engine's answer: %w", b.Tag, err)
		}
		if msg.Error != nil {
			text := failedStep.ReplaceAllString(strings.TrimSpace(msg.Error.Message), "a RUN step exited with code $1 (its output is in the build's progress)")
			return fmt.Errorf("building %s: %s", b.Tag, text)
		}
		sc := bufio.NewScanner(strings.NewReader(ansi.ReplaceAllString(msg.Stream+msg.Status, "")))
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
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
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
