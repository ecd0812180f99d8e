// Package egress owns the sandboxes' only way out: an HTTP proxy per
// sandbox, on a Unix socket sandboxd listens on and mounts into the
// container, that lets a connection through only to what the sandbox's
// allow-list names. Names are resolved here, never inside the sandbox,
// and every connection's outcome is recorded with the execution.
//
// The package knows allow-lists, proxying and records; which list a
// sandbox has is the daemon's choice (the language's, narrowed by the
// request).
package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPorts are the ports an entry without one allows.
var DefaultPorts = []uint16{80, 443}

// Rule is one allow-list entry: a host name, a "*." wildcard (any name
// below the suffix, not the suffix itself), an IP or a CIDR, with ports.
type Rule struct {
	Name    string       // lower case; "*.example.net" for a wildcard; empty for an address rule
	Prefix  netip.Prefix // valid for an address rule
	Ports   []uint16
	AnyPort bool // a deny entry written without a port (ParseDenyList)
	text    string
}

func (r Rule) hasPort(port uint16) bool { return r.AnyPort || slices.Contains(r.Ports, port) }

func (r Rule) String() string { return r.text }

// List is an allow-list. The empty list allows nothing.
type List []Rule

// Strings is the list as written.
func (l List) Strings() []string {
	out := make([]string, len(l))
	for i, r := range l {
		out[i] = r.text
	}
	return out
}

// RuleSyntax is what an entry may be, for error messages.
const RuleSyntax = `a host name ("files.example.org"), a wildcard ("*.example.net"), an IP ("203.0.113.7") or a CIDR ("203.0.113.0/24"), each with an optional ":port" (default 80 and 443); IPv6 in brackets ("[2001:db8::1]:443")`

// ParseRule reads one entry.
func ParseRule(s string) (Rule, error) {
	return parseRule(s, false)
}

// MaxDenyEntries bounds a deny list, which every connection is checked
// against.
const MaxDenyEntries = 1000

// ParseDenyList reads a deny list: entries as ParseRule reads them, where
// one written without a port (the host's services' name included) covers
// every port.
func ParseDenyList(entries []string) (List, error) {
	if len(entries) > MaxDenyEntries {
		return nil, fmt.Errorf("%d entries; %d at most", len(entries), MaxDenyEntries)
	}
	l := make(List, 0, len(entries))
	for _, e := range entries {
		r, err := parseRule(e, true)
		if err != nil {
			return nil, err
		}
		l = append(l, r)
	}
	return l, nil
}

// parseRule reads one entry; anyPort: one without a port covers every
// port.
func parseRule(s string, anyPort bool) (r Rule, err error) {
	r = Rule{Ports: DefaultPorts}
	portGiven := false
	if len(s) > 255 {
		return r, fmt.Errorf("an entry of %d bytes; 255 at most", len(s))
	}
	defer func() { r.AnyPort = anyPort && !portGiven }()
	host := strings.TrimSpace(s)
	if host == "" {
		return r, fmt.Errorf("empty entry")
	}
	if _, rest, ok := strings.Cut(host, "://"); ok {
		return r, fmt.Errorf("%q is a URL: write the host alone, such as %q", s, strings.SplitN(rest, "/", 2)[0])
	}
	if strings.HasPrefix(host, "[") {
		end := strings.Index(host, "]")
		if end < 0 {
			return r, fmt.Errorf("%q: no closing ]", s)
		}
		rest := host[end+1:]
		host = host[1:end]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return r, fmt.Errorf("%q: expected :port after ]", s)
			}
			port, err := parsePort(p)
			if err != nil {
				return r, fmt.Errorf("%q: %w", s, err)
			}
			r.Ports, portGiven = []uint16{port}, true
		}
	} else if i := strings.LastIndex(host, ":"); i >= 0 && strings.Count(host, ":") == 1 {
		port, err := parsePort(host[i+1:])
		if err != nil {
			return r, fmt.Errorf("%q: %w", s, err)
		}
		host, r.Ports, portGiven = host[:i], []uint16{port}, true
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	r.text = s
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return r, fmt.Errorf("%q: not a CIDR: %v", s, err)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 { // ::ffff:a.b.c.d/n: the IPv4 range, as addresses are compared
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		r.Prefix = p.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		r.Prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		return r, nil
	}
	name, wild := strings.CutPrefix(host, "*.")
	if !validName(name) {
		return r, fmt.Errorf("%q is not a host name", s)
	}
	if host == HostName && !portGiven && !anyPort {
		return r, fmt.Errorf("%q needs a port: the host's services are let through one port at a time, such as %s:11434", s, HostName)
	}
	r.Name = host
	if wild && !strings.Contains(name, ".") {
		return r, fmt.Errorf("%q: a wildcard needs a domain of at least two labels, such as *.example.net", s)
	}
	return r, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// validName accepts DNS names: labels of letters, digits, - and _.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Parse reads an allow-list.
func Parse(entries []string) (List, error) {
	l := make(List, 0, len(entries))
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		l = append(l, r)
	}
	return l, nil
}

// NameEntry is the first entry that names host (a name, not an address)
// at port, as written; "" when none does.
func (l List) NameEntry(host string, port uint16) string {
	for _, r := range l {
		if r.Name != "" && r.hasPort(port) && nameCovers(r.Name, host) {
			return r.text
		}
	}
	return ""
}

// Entry is the first entry that covers host (an address or a name) at
// port, as written; "" when none does.
func (l List) Entry(host string, port uint16) string {
	if a, err := netip.ParseAddr(host); err == nil {
		return l.AddrEntry(a, port)
	}
	if validName(host) {
		return l.NameEntry(host, port)
	}
	return ""
}

// AddrEntry is the first address entry that covers a at port, as written;
// "" when none does.
func (l List) AddrEntry(a netip.Addr, port uint16) string {
	a = a.Unmap()
	for _, r := range l {
		if r.Prefix.IsValid() && r.hasPort(port) && r.Prefix.Contains(a) {
			return r.text
		}
	}
	return ""
}

// nameCovers reports whether pattern (a name or "*." wildcard) covers
// name (a name or wildcard).
func nameCovers(pattern, name string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		// The host's own services are named one by one, never by a
		// wildcard.
		return name != HostName && strings.HasSuffix(strings.TrimPrefix(name, "*"), "."+suffix)
	}
	return pattern == name
}

// Within returns the first entry of l that ceiling does not cover, or ""
// when every one is covered: a request may narrow its language's list,
// never widen it.
func (l List) Within(ceiling List) string {
	for _, r := range l {
		covered := false
		for _, c := range ceiling {
			if !subset(r.Ports, c.Ports) {
				continue
			}
			if r.Name != "" && c.Name != "" && nameCovers(c.Name, r.Name) ||
				r.Prefix.IsValid() && c.Prefix.IsValid() && c.Prefix.Bits() <= r.Prefix.Bits() && c.Prefix.Contains(r.Prefix.Addr()) {
				covered = true
				break
			}
		}
		if !covered {
			return r.text
		}
	}
	return ""
}

func subset(a, b []uint16) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// special are the addresses a name may not lead to unless an address rule
// lists them: the host's own, the private networks it may sit in, and the
// clouds' metadata services.
var special = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT; Alibaba's metadata at 100.100.100.200
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("64:ff9b::/96"),  // NAT64: may embed any of the above
}

// Special reports whether a is loopback, private, link-local (the
// 169.254.169.254 metadata address among them), unspecified, multicast or
// another range that reaches the host's own networks.
func Special(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return true
	}
	for _, p := range special {
		if p.Contains(a) {
			return true
		}
	}
	return a.Is4() && a.As4()[0] == 0 // "this network"
}
