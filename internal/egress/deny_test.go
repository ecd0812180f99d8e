package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

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
	g.SetPolicy(g.Allowed(), deny, except, nil)
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
	g.SetPolicy(g.Allowed(), nil, nil, nil)
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
	socks := egresstest.NewSocks5(t, "u", "secret")
	g, c, _ := testGate(t, Options{}, Limits{}, "127.0.0.1:"+p, socks.Addr) // the proxy is in the allow-list, as a session's must be
	g.SetPolicy(g.Allowed(), nil, nil, &Socks{Address: socks.Addr, Username: "u", Password: "secret"})
	if code, body, err := get(c, "http://127.0.0.1:"+p+"/"); err != nil || code != 200 || body != "hello" {
		t.Fatalf("through the proxy: %d %q %v", code, body, err)
	}
	if got := socks.Targets(); len(got) != 1 || got[0] != "127.0.0.1:"+p {
		t.Fatalf("the proxy connected to %v", got)
	}
	if code, _, _ := get(c, "http://127.0.0.2:"+p+"/"); code != http.StatusForbidden || len(socks.Targets()) != 1 {
		t.Errorf("an address off the allow-list: %d, proxy targets %v", code, socks.Targets())
	}
	g.SetPolicy(g.Allowed(), nil, nil, &Socks{Address: socks.Addr, Username: "u", Password: "wrong"})
	if code, _, _ := get(c, "http://127.0.0.1:"+p+"/"); code != http.StatusBadGateway || socks.Refused() != 1 {
		t.Errorf("wrong credentials: %d, refused %d", code, socks.Refused())
	}
	g.SetPolicy(g.Allowed(), nil, nil, &Socks{Address: "127.0.0.1:1"})
	if code, _, _ := get(c, "http://127.0.0.1:"+p+"/"); code != http.StatusBadGateway {
		t.Errorf("a proxy that is not there: %d; want the connection to fail, not to go out directly", code)
	}
	g.SetPolicy(g.Allowed(), nil, nil, nil)
	if code, _, _ := get(c, "http://127.0.0.1:"+p+"/"); code != 200 || len(socks.Targets()) != 1 {
		t.Errorf("without the proxy: %d", code)
	}
}

// Outside review: with a proxy, the host's services by name go directly
// (their secrets in the clear never cross to the proxy); the sandbox may
// not use the proxy itself; a deny of the loopback range covers the
// host's services' name; an IPv4-mapped CIDR covers its IPv4 addresses;
// a change of policy closes the tunnels opened under the last one.
func TestReviewDenyAndProxy(t *testing.T) {
	_, port := origin(t, "hello")
	p := fmt.Sprint(port)
	socks := egresstest.NewSocks5(t, "", "")
	_, socksPort, _ := strings.Cut(socks.Addr, ":")
	g, c, sock := testGate(t, Options{}, Limits{}, "127.0.0.1:"+p, "127.0.0.1:"+socksPort, HostName+":"+p)
	allow := g.Allowed()
	g.SetPolicy(allow, nil, nil, &Socks{Address: socks.Addr})
	if code, _, _ := get(c, "http://"+HostName+":"+p+"/"); code != 200 || len(socks.Targets()) != 0 {
		t.Errorf("the host's services through the proxy: %d, proxy targets %v", code, socks.Targets())
	}
	if code, body, _ := get(c, "http://127.0.0.1:"+socksPort+"/"); code != http.StatusForbidden || strings.Contains(body, socks.Addr) && !strings.Contains(body, "own egress proxy") {
		t.Errorf("the sandbox using the session's proxy itself: %d %q", code, body)
	}
	deny, _ := ParseDenyList([]string{"127.0.0.0/8"})
	g.SetPolicy(allow, deny, nil, nil)
	if code, _, _ := get(c, "http://"+HostName+":"+p+"/"); code == 200 {
		t.Error("the host's services' name escaped a deny of the loopback range")
	}
	mapped, err := ParseDenyList([]string{"::ffff:127.0.0.0/104"})
	if err != nil {
		t.Fatal(err)
	}
	g.SetPolicy(allow, mapped, nil, nil)
	if code, _, _ := get(c, "http://127.0.0.1:"+p+"/"); code == 200 {
		t.Error("an IPv4-mapped CIDR in the deny list matched nothing")
	}
	g.SetPolicy(allow, nil, nil, nil)
	conn, br, status := connect(t, sock, "127.0.0.1:"+p)
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT: %s", status)
	}
	g.SetPolicy(allow, deny, nil, nil)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := br.ReadString('\n'); err == nil {
		t.Error("a tunnel opened before a deny list still carries bytes")
	}
}

// A client's half-close goes through the SOCKS5 proxy to the server, as
// it goes directly (outside review).
func TestHalfCloseThroughSocks5(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { b, _ := io.ReadAll(c); fmt.Fprintf(c, "got %d bytes", len(b)); c.Close() }()
		}
	}()
	addr := ln.Addr().String()
	socks := egresstest.NewSocks5(t, "", "")
	g, _, sock := testGate(t, Options{}, Limits{}, addr, socks.Addr)
	g.SetPolicy(g.Allowed(), nil, nil, &Socks{Address: socks.Addr})
	c, br, status := connect(t, sock, addr)
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT: %s", status)
	}
	io.WriteString(c, "hello")
	c.(*net.UnixConn).CloseWrite()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(br); string(b) != "got 5 bytes" {
		t.Errorf("after a half-close through the proxy: %q %v", b, err)
	}
}
