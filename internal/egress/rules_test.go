package egress

import (
	"net/netip"
	"slices"
	"testing"
)

func TestParseRule(t *testing.T) {
	good := map[string]Rule{
		"files.example.org":      {Name: "files.example.org", Ports: DefaultPorts},
		"Files.Example.ORG.":     {Name: "files.example.org", Ports: DefaultPorts},
		"*.example.net:443":      {Name: "*.example.net", Ports: []uint16{443}},
		"203.0.113.0/24:8080":    {Prefix: netip.MustParsePrefix("203.0.113.0/24"), Ports: []uint16{8080}},
		"203.0.113.9/24":         {Prefix: netip.MustParsePrefix("203.0.113.0/24"), Ports: DefaultPorts},
		"127.0.0.1:5000":         {Prefix: netip.MustParsePrefix("127.0.0.1/32"), Ports: []uint16{5000}},
		"[2001:db8::1]:443":      {Prefix: netip.MustParsePrefix("2001:db8::1/128"), Ports: []uint16{443}},
		"2001:db8::/32":          {Prefix: netip.MustParsePrefix("2001:db8::/32"), Ports: DefaultPorts},
		"[::ffff:10.0.0.1]:80":   {Prefix: netip.MustParsePrefix("10.0.0.1/32"), Ports: []uint16{80}},
		"registry.npmjs.org:443": {Name: "registry.npmjs.org", Ports: []uint16{443}},
	}
	for in, want := range good {
		got, err := ParseRule(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got.Name != want.Name || got.Prefix != want.Prefix || !slices.Equal(got.Ports, want.Ports) || got.String() != in {
			t.Errorf("%q: got %+v, want %+v", in, got, want)
		}
	}
	for _, in := range []string{"", "http://example.org", "example.org:0", "example.org:99999", "exa mple.org",
		"*.com", "*", "-bad.example.org", "10.0.0.0/33", "[2001:db8::1", "example.org:http", "a..b", "*.*.example.org", HostName, HostName + "."} {
		if r, err := ParseRule(in); err == nil {
			t.Errorf("%q parsed as %+v", in, r)
		}
	}
}

func mustList(t *testing.T, entries ...string) List {
	t.Helper()
	l, err := Parse(entries)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMatchAndWithin(t *testing.T) {
	ceiling := mustList(t, "files.example.org", "*.example.net:443", "203.0.113.0/24:8080", "127.0.0.1:5000")
	for _, c := range []struct {
		host string
		port uint16
		want bool
	}{
		{"files.example.org", 80, true}, {"files.example.org", 443, true}, {"files.example.org", 22, false},
		{"a.example.net", 443, true}, {"a.b.example.net", 443, true}, {"example.net", 443, false},
		{"a.example.net", 80, false}, {"evilexample.net", 443, false}, {"other.org", 80, false},
	} {
		if got := ceiling.NameEntry(c.host, c.port) != ""; got != c.want {
			t.Errorf("NameEntry(%s, %d) = %v", c.host, c.port, got)
		}
	}
	if ceiling.AddrEntry(netip.MustParseAddr("203.0.113.77"), 8080) != "203.0.113.0/24:8080" || ceiling.AddrEntry(netip.MustParseAddr("203.0.114.1"), 8080) != "" ||
		ceiling.AddrEntry(netip.MustParseAddr("::ffff:127.0.0.1"), 5000) != "127.0.0.1:5000" || ceiling.AddrEntry(netip.MustParseAddr("127.0.0.1"), 80) != "" {
		t.Error("AddrEntry")
	}
	if ceiling.NameEntry("a.b.example.net", 443) != "*.example.net:443" {
		t.Error("NameEntry names the entry as written")
	}
	for _, c := range []struct {
		req    []string
		beyond string
	}{
		{nil, ""},
		{[]string{"files.example.org:443"}, ""},
		{[]string{"x.example.net:443", "*.y.example.net:443"}, ""},
		{[]string{"203.0.113.128/25:8080", "127.0.0.1:5000"}, ""},
		{[]string{"files.example.org:8443"}, "files.example.org:8443"},
		{[]string{"*.example.net"}, "*.example.net"}, // port 80 is beyond
		{[]string{"203.0.0.0/16:8080"}, "203.0.0.0/16:8080"},
		{[]string{"files.example.org", "other.org"}, "other.org"},
		{[]string{"203.0.113.5:8080", "example.net:443"}, "example.net:443"},
	} {
		if got := mustList(t, c.req...).Within(ceiling); got != c.beyond {
			t.Errorf("Within(%v) = %q, want %q", c.req, got, c.beyond)
		}
	}
}

func TestSpecial(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.8.9.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.100.100.200", "0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "::1", "::", "fe80::1", "fd00:ec2::254",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"} {
		if !Special(netip.MustParseAddr(a)) {
			t.Errorf("%s is not special", a)
		}
	}
	for _, a := range []string{"203.0.113.80", "8.8.8.8", "2001:4860:4860::8888", "151.101.0.223"} {
		if Special(netip.MustParseAddr(a)) {
			t.Errorf("%s is special", a)
		}
	}
}
