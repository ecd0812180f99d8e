package languages

import (
	"net"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
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

// EgressLimits are the bounds of each of l's sandboxes' egress.
func (l *Language) EgressLimits() egress.Limits {
	n := l.Config.Network
	return egress.Limits{MaxConnections: n.MaxConnections, MaxBytes: n.MaxBytes, ConnectTimeout: n.ConnectTimeout}
}
