package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/runtime"
)

// A pod names the digest the registry gave when it was made: a tag
// pushed anew is the image of the pods made after, never of one made
// before; a registry that cannot be asked keeps the last digest; a tag
// it does not have is a missing image.
func TestImagesArePinnedByDigest(t *testing.T) {
	host, first := testRegistry(t)
	k, _ := testRuntime(t)
	k.opts.ImageRegistry = host
	ctx := context.Background()
	const ref = "sandboxd/python:latest"
	img, err := k.Image(ctx, ref)
	if err != nil || img.ID != host+"/sandboxd/python@"+first {
		t.Fatalf("Image: %+v %v, want the digest %s", img, err, first)
	}
	spec := runtime.Spec{Language: "python", Image: ref, Limits: runtime.Limits{Memory: 64 << 20, CPUs: 0.5, Disk: 16 << 20, Pids: 64}}
	if got := k.podFor(spec, "sbx-1", "tok", 61000).Spec.Containers[0].Image; got != img.ID {
		t.Errorf("the pod's image %q, want %q", got, img.ID)
	}

	made := k.podFor(spec, "sbx-2", "tok", 61000)
	second := pushRandom(t, host+"/"+ref)
	if got := made.Spec.Containers[0].Image; !strings.HasSuffix(got, first) {
		t.Errorf("a tag pushed anew changed a pod made before: %q", got)
	}
	if pin, err := k.pin(ctx, ref); err != nil || !strings.HasSuffix(pin, second) { // as Create and Pull do
		t.Errorf("a pod made after the push: %q %v, want the digest %s", pin, err, second)
	}
	if got := k.podFor(spec, "sbx-3", "tok", 61000).Spec.Containers[0].Image; !strings.HasSuffix(got, second) {
		t.Errorf("the pod's image %q after the new digest", got)
	}

	if _, err := k.Image(ctx, "sandboxd/none:latest"); !errors.Is(err, runtime.ErrImageMissing) {
		t.Errorf("a tag the registry does not have: %v", err)
	}

	k.opts.ImageRegistry = "127.0.0.1:1" // nothing listens there
	k.pins[ref] = "127.0.0.1:1/sandboxd/python@" + second
	if img, err = k.Image(ctx, ref); err != nil || !strings.HasSuffix(img.ID, second) {
		t.Errorf("a registry that cannot be asked: %+v %v, want the last digest kept", img, err)
	}
	if _, err := k.Image(ctx, "sandboxd/other:latest"); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("a registry that cannot be asked, no digest known: %v", err)
	}
}
