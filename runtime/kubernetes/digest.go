package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/sandboxd/sandboxd/runtime"
)

// Pods name their image by digest: the one the registry gives for the
// tag when the pod is made (and the pre-pull DaemonSet's when it is), so
// each pod runs the bytes it names, whatever the tag or a node's cache
// says later, and every node of a pull pulls the same. A registry that
// cannot be asked leaves the digest it gave last. Without an
// image_registry the nodes' own images are used, by tag.

// resolve asks the registry for the digest of ref (as the cluster pulls
// it), and remembers it as ref's pin. A registry that cannot be asked
// leaves an earlier pin in place.
func (k *Kubernetes) resolve(ctx context.Context, ref string) (string, error) {
	full := k.image(ref)
	parsed, err := name.ParseReference(full)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", full, err)
	}
	if d, ok := parsed.(name.Digest); ok {
		return d.String(), nil
	}
	desc, err := remote.Head(parsed, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		k.mu.Lock()
		earlier, ok := k.pins[ref]
		k.mu.Unlock()
		var terr *transport.Error
		switch {
		case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
			return "", fmt.Errorf("%w: the registry has no image %s: push the images with `sandboxctl images build` or images/push.sh", runtime.ErrImageMissing, full)
		case ok:
			k.log.Warn("the registry did not say the image's digest; pods keep the one it said last", "image", full, "digest", earlier, "error", err)
			return earlier, nil
		}
		return "", fmt.Errorf("%w: asking the registry for the digest of %s: %v", runtime.ErrUnavailable, full, err)
	}
	pin := parsed.Context().Digest(desc.Digest.String()).String()
	k.mu.Lock()
	k.pins[ref] = pin
	k.mu.Unlock()
	return pin, nil
}

// pin is ref as a pod made now names it (see resolve).
func (k *Kubernetes) pin(ctx context.Context, ref string) (string, error) {
	if k.opts.ImageRegistry == "" {
		return ref, nil
	}
	return k.resolve(ctx, ref)
}

// pinned is ref by the digest resolve found last.
func (k *Kubernetes) pinned(ref string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if pin, ok := k.pins[ref]; ok {
		return pin
	}
	return k.image(ref)
}
