package languages

import (
	"context"
	"net"
	"strconv"
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
	if asked == nil || asked.Allow == nil && (len(asked.Deny) > 0 || len(asked.Except) > 0 || asked.Proxy != nil) {
		return l.allow, nil // a deny list or a proxy alone narrows nothing
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

// Extras is what a session asks of its egress beyond its allow-list: a
// deny list, its exceptions, and a SOCKS5 proxy.
type Extras struct {
	Deny, Except egress.List
	Socks        *egress.Socks
}

// Extras reads asked's deny list, exceptions and proxy. The proxy must be
// a host:port l's network allows: the operator's ceiling holds for where
// a sandbox's bytes go first too.
func (l *Language) Extras(asked *state.Network) (Extras, error) {
	var x Extras
	if asked == nil {
		return x, nil
	}
	var err error
	if x.Deny, err = egress.ParseDenyList(asked.Deny); err != nil {
		return x, errdefs.Errorf(errdefs.Invalid, "network.deny: %v; each entry is %s (without a port: every port)", err, egress.RuleSyntax)
	}
	if x.Except, err = egress.ParseDenyList(asked.Except); err != nil {
		return x, errdefs.Errorf(errdefs.Invalid, "network.except: %v; each entry is %s (without a port: every port)", err, egress.RuleSyntax)
	}
	if p := asked.Proxy; p != nil {
		host, port, err := net.SplitHostPort(p.Address)
		n, perr := strconv.ParseUint(port, 10, 16)
		switch {
		case err != nil || perr != nil || host == "" || n == 0:
			return x, errdefs.Errorf(errdefs.Invalid, "network.proxy.address %q is not host:port, such as proxy.example.com:1080", p.Address)
		case l.allow.Entry(strings.ToLower(host), uint16(n)) == "":
			return x, errdefs.Errorf(errdefs.Invalid, "network.proxy.address %s is not a host:port language %s's network allows (%s): an operator allows it in sandboxd.hcl", p.Address, l.Name(), strings.Join(l.allow.Strings(), ", "))
		case len(p.Username) > 255 || len(p.Password) > 255:
			return x, errdefs.Errorf(errdefs.Invalid, "network.proxy: a SOCKS5 user name and password are 255 bytes at most")
		case p.Password != "" && p.Username == "":
			return x, errdefs.Errorf(errdefs.Invalid, "network.proxy: a password needs a user name")
		}
		x.Socks = &egress.Socks{Address: p.Address, Username: p.Username, Password: p.Password}
	}
	return x, nil
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
// listening again on its egress socket, which lets nothing through until
// the caller arms its gate.
func (r *Registry) Attach(ctx context.Context, l *Language, c runtime.Container) (*runtime.Sandbox, error) {
	return r.withGate(l, c, func() (*runtime.Sandbox, error) { return r.rt.Attach(ctx, c) })
}

// withGate listens on container c's egress socket (letting nothing
// through), which must be there before connect runs, and closes it again
// if connect fails.
func (r *Registry) withGate(l *Language, c runtime.Container, connect func() (*runtime.Sandbox, error)) (*runtime.Sandbox, error) {
	key := c.Labels[runtime.LabelEgress]
	if key != "" && r.egress != nil {
		if _, err := r.egress.Open(key, l.Name(), l.egressLimits()); err != nil {
			return nil, err
		}
	}
	sb, err := connect()
	if err != nil {
		r.closeGate(c.Labels)
	}
	return sb, err
}
