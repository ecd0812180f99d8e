package sandbox

import (
	"context"
	"strings"

	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// gate is sb's egress gate; nil when its language has no egress.
func (p *Provider) gate(sb *runtime.Sandbox) *egress.Gate {
	key := sb.Labels[runtime.LabelEgress]
	if key == "" || p.egress == nil {
		return nil
	}
	return p.egress.Gate(key)
}

// createFor creates a container of l from spec; when l has egress, with
// its proxy socket (allowing nothing until the daemon says what) mounted,
// the proxy variables set and the CA bundle sandboxes trust.
func (p *Provider) createFor(ctx context.Context, l *kind, spec runtime.Spec) (*runtime.Sandbox, error) {
	if len(l.Egress()) == 0 {
		return p.start(ctx, spec)
	}
	key := state.RandomID(8)
	if _, err := p.egress.Open(key, l.Name(), l.EgressLimits()); err != nil {
		return nil, err
	}
	spec.Labels[runtime.LabelEgress] = key
	spec.Mounts = append(spec.Mounts, runtime.Mount{Source: p.egress.Dir(key), Target: supervisor.EgressDir, ReadOnly: true})
	proxy := "http://" + supervisor.EgressListen
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY"} {
		spec.Env = append(spec.Env, v+"="+proxy, strings.ToLower(v)+"="+proxy)
	}
	spec.Env = append(spec.Env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
	if p.cfg.EgressCAFile != "" {
		// The operator's bundle and the sandbox's own authority (see
		// egress.Bundle), in the egress directory mounted above.
		for _, v := range images.CAVariables {
			spec.Env = append(spec.Env, v+"="+supervisor.EgressDir+"/"+egress.Bundle)
		}
	}
	sb, err := p.start(ctx, spec)
	if err != nil {
		p.egress.Close(key)
	}
	return sb, err
}

// reconnect connects again to the supervisor of a sandbox whose channel
// dropped while the sandbox may run on (its runtime's control plane
// restarted): the sandbox as it is, with a new channel.
func (p *Provider) reconnect(ctx context.Context, sb *runtime.Sandbox) (*runtime.Sandbox, error) {
	// Not known to run (its channel dropped): the runtime asks first,
	// rather than waiting for a supervisor that may be gone.
	return p.rt.Attach(ctx, runtime.Container{ID: sb.ID, Labels: sb.Labels, Created: sb.Created, Language: sb.Language})
}

// attach connects again to a container of l a previous sandboxd made,
// listening again on its egress socket, which lets nothing through until
// the caller arms its gate.
func (p *Provider) attach(ctx context.Context, lang *languages.Language, c runtime.Container) (*runtime.Sandbox, error) {
	l := p.of[lang]
	return p.withGate(l, c, func() (*runtime.Sandbox, error) { return p.rt.Attach(ctx, c) })
}

// withGate listens on container c's egress socket (letting nothing
// through), which must be there before connect runs, and closes it again
// if connect fails.
func (p *Provider) withGate(l *kind, c runtime.Container, connect func() (*runtime.Sandbox, error)) (*runtime.Sandbox, error) {
	key := c.Labels[runtime.LabelEgress]
	if key != "" && p.egress != nil {
		if _, err := p.egress.Open(key, l.Name(), l.EgressLimits()); err != nil {
			return nil, err
		}
	}
	sb, err := connect()
	if err != nil {
		p.closeGate(c.Labels)
	}
	return sb, err
}
