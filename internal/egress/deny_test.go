package egress

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/egress/egresstest"
)

// A deny list refuses what it covers, by name and by each address a name
// resolves to, unless the exceptions cover it; an entry written without
// a port denies every port.
func TestDenyList(t *testing.T) {
	_, port := origin(t, "hello")
	p := fmt.Sprint(port)
	resolve := fakeDNS{"a.test": {netip.MustParseAddr("127.0.0.1")}, "b.test": {netip.MustParseAddr("127.0.0.1")}}.resolve
	g, c, _ := testGate(t, Options{Resolve: resolve}, Limits{}, "127.0.0.0/8:"+p, "a.test:"+p, "b.test:"+p)
	ok := func(host string) bool {
		code, body, err := get(c, "http://"+host+":"+p+"/")
		return err == nil && code == 200 && body == "hello"
	}
	if !ok("a.test") || !ok("127.0.0.1") {
		t.Fatal("allowed before any deny")
	}
	deny, err := ParseDenyList([]string{"127.0.0.0/8"})
	if err != nil || !deny[0].AnyPort {
		t.Fatalf("a deny entry without a port: %+v %v", deny, err)
	}
	except, _ := ParseDenyList([]string{"b.test"})
	g.Deny(deny, except)
	if ok("a.test") || ok("127.0.0.1") {
		t.Error("a name resolving into a denied CIDR, or an address in it, went through")
	}
	code, body, _ := get(c, "http://a.test:"+p+"/")
	if code != http.StatusBadGateway || !strings.Contains(body, "deny list") {
		t.Errorf("the refusal: %d %q", code, body)
	}
	if !ok("b.test") {
		t.Error("an exception to the deny list was refused")
	}
	g.Deny(nil, nil)
	if !ok("a.test") {
		t.Error("still refused once the deny list is gone")
	}
}

// With a SOCKS5 proxy, every connection the gate lets through goes
// through it, with its credentials; the gate's checks come first; a proxy
// that refuses, or is not there, fails the connection closed.
func TestTunnelThroughSocks5(t *testing.T) {
	_, port := origin(t, "hello")
	p := fmt.Sprint(port)
	g, c, _ := testGate(t, Options{}, Limits{}, "127.0.0.1:"+p)
	socks := egresstest.NewSocks5(t, "u", "secret")
	g.Tunnel(&Socks{Address: socks.Addr, Username: "u", Password: "secret"})
	if code, body, err := get(c, "http://127.0.0.1:"+p+"/"); err != nil || code != 200 || body != "hello" {
		t.Fatalf("through the proxy: %d %q %v", code, body, err)
	}
	if got := socks.Targets(); len(got) != 1 || got[0] != "127.0.0.1:"+p {
		t.Fatalf("the proxy connected to %v", got)
	}
	if code, _, _ := get(c, "http://127.0.0.2:"+p+"/"); code != http.StatusForbidden || len(socks.Targets()) != 1 {
		t.Errorf("an address off the allow-list: %d, proxy targets %v", code, socks.Targets())
	}
	g.Tunnel(&Socks{Address: socks.Addr, Username: "u", Password: "wrong"})
	if code, _, _ := get(c, "http://127.0.0.1:"+p+"/"); code != http.StatusBadGateway || socks.Refused() != 1 {
		t.Errorf("wrong credentials: %d, refused %d", code, socks.Refused())
	}
	g.Tunnel(&Socks{Address: "127.0.0.1:1"})
	if code, _, _ := get(c, "http://127.0.0.1:"+p+"/"); code != http.StatusBadGateway {
		t.Errorf("a proxy that is not there: %d; want the connection to fail, not to go out directly", code)
	}
	g.Tunnel(nil)
	if code, _, _ := get(c, "http://127.0.0.1:"+p+"/"); code != 200 || len(socks.Targets()) != 1 {
		t.Errorf("without the proxy: %d", code)
	}
}
