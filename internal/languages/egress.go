package languages

import (
	"context"
	"strings"

	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Egress is the most l's sandboxes may reach; empty: nothing, and they
// get no proxy at all.
func (l *Language) Egress() egress.List { return l.allow }

// Narrow is the allow-list a request asked for (nil: the language's
// own), refused when it reaches beyond the language's.
func (l *Language) Narrow(asked *state.Network) (egress.List, error) {
	if asked == nil {
		return l.allow, nil
	}
	list, err := egress.Parse(asked.Allow)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Invalid, "network.allow: %v; each entry is %s", err, egress.RuleSyntax)
	}
	if len(list) > 0 && len(l.allow) == 0 {
		return nil, errdefs.Errorf(errdefs.Invalid, "network.allow: language %s has no egress: an operator allows hosts in its network block in sandboxd.hcl", l.Name())
	}
	if beyond := list.Within(l.allow); beyond != "" {
		return nil, errdefs.Errorf(errdefs.Invalid, "network.allow: %q is beyond what language %s allows: %s", beyond, l.Name(), strings.Join(l.allow.Strings(), ", "))
	}
	return list, nil
}

func (l *Language) egressLimits() egress.Limits {
	n := l.Config.Network
	return egress.Limits{MaxConnections: n.MaxConnections, MaxBytes: n.MaxBytes, ConnectTimeout: n.ConnectTimeout}
}

// Gate is sb's egress gate; nil when its language has no egress.
func (r *Registry) Gate(sb *runtime.Sandbox) *egress.Gate {
	key := sb.Labels[runtime.LabelEgress]
	if key == "" || r.egress == nil {
		return nil
	}
	return r.egress.Gate(key)
}

// createFor creates a container of l from spec; when l has egress, with
// its proxy socket (allowing nothing until the daemon says what) mounted,
// the proxy variables set and the CA bundle sandboxes trust.
func (r *Registry) createFor(ctx context.Context, l *Language, spec runtime.Spec) (*runtime.Sandbox, error) {
	if len(l.allow) == 0 {
		return r.Create(ctx, spec)
	}
	key := state.RandomID(8)
	if _, err := r.egress.Open(key, l.Name(), l.egressLimits()); err != nil {
		return nil, err
	}
	spec.Labels[runtime.LabelEgress] = key
	spec.Mounts = append(spec.Mounts, runtime.Mount{Source: r.egress.Dir(key), Target: supervisor.EgressDir, ReadOnly: true})
	proxy := "http://" + supervisor.EgressListen
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY"} {
		spec.Env = append(spec.Env, v+"="+proxy, strings.ToLower(v)+"="+proxy)
	}
	spec.Env = append(spec.Env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
	if r.cfg.EgressCAFile != "" {
		// The operator's bundle and the sandbox's own authority (see
		// egress.Bundle), in the egress directory mounted above.
		for _, v := range images.CAVariables {
			spec.Env = append(spec.Env, v+"="+supervisor.EgressDir+"/"+egress.Bundle)
		}
	}
	sb, err := r.Create(ctx, spec)
	if err != nil {
		r.egress.Close(key)
	}
	return sb, err
}

// Reconnect connects again to the supervisor of a sandbox whose channel
// dropped while the sandbox may run on (its runtime's control plane
// restarted): the sandbox as it is, with a new channel.
func (r *Registry) Reconnect(ctx context.Context, sb *runtime.Sandbox) (*runtime.Sandbox, error) {
	return r.rt.Attach(ctx, runtime.Container{ID: sb.ID, Labels: sb.Labels, Created: sb.Created, Running: true, Language: sb.Language})
}

// Attach connects again to a container of l a previous sandboxd made,
// listening again on its egress socket (allowing allow).
func (r *Registry) Attach(ctx context.Context, l *Language, c runtime.Container, allow egress.List) (*runtime.Sandbox, error) {
	return r.withGate(l, c, allow, func() (*runtime.Sandbox, error) { return r.rt.Attach(ctx, c) })
}

// withGate listens on container c's egress socket (allowing allow), which
// must be there before connect runs, and closes it again if connect fails.
func (r *Registry) withGate(l *Language, c runtime.Container, allow egress.List, connect func() (*runtime.Sandbox, error)) (*runtime.Sandbox, error) {
	key := c.Labels[runtime.LabelEgress]
	if key != "" && r.egress != nil {
		g, err := r.egress.Open(key, l.Name(), l.egressLimits())
		if err != nil {
			return nil, err
		}
		g.Allow(allow)
	}
	sb, err := connect()
	if err != nil {
		r.closeGate(c.Labels)
	}
	return sb, err
}
