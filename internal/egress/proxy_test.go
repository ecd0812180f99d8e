package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDNS answers from a table; no lookup leaves the test.
type fakeDNS map[string][]netip.Addr

func (f fakeDNS) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

type counts struct {
	conns, bytes atomic.Int64
	mu           sync.Mutex
	labels       map[string]int
}

func (c *counts) EgressConnection(language, host, decision string) {
	c.conns.Add(1)
	c.mu.Lock()
	c.labels[host+" "+decision]++
	c.mu.Unlock()
}

func (c *counts) EgressBytes(language string, sent, received int64) { c.bytes.Add(sent + received) }

// testGate opens a gate allowing entries and returns a client whose
// requests go through it, as a sandbox's would.
func testGate(t *testing.T, opts Options, limits Limits, entries ...string) (*Gate, *http.Client, string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "egress-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	opts.Dir = dir
	if opts.Upstream == nil {
		opts.Upstream = func(string) (*url.URL, error) { return nil, nil }
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if limits.MaxConnections == 0 {
		limits = Limits{MaxConnections: 4, MaxBytes: 1 << 20, ConnectTimeout: 2 * time.Second}
	}
	g, err := p.Open("k1", "python", limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close("k1") })
	allow, err := Parse(entries)
	if err != nil {
		t.Fatal(err)
	}
	g.Allow(allow)
	g.Begin()
	sock := filepath.Join(p.Dir("k1"), Socket)
	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}, Timeout: 10 * time.Second}
	return g, client, sock
}

func origin(t *testing.T, body string) (*httptest.Server, uint16) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	t.Cleanup(srv.Close)
	return srv, netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
}

func get(c *http.Client, u string) (int, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestNamesAreResolvedAndCheckedPerConnection(t *testing.T) {
	_, port := origin(t, "hello")
	lookups := 0
	dns := fakeDNS{"private.test": {netip.MustParseAddr("10.0.0.5")}, "meta.test": {netip.MustParseAddr("169.254.169.254")}}
	resolve := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "rebind.test" {
			// First a listed loopback address, then a private one.
			lookups++
			if lookups%2 == 0 {
				return []netip.Addr{netip.MustParseAddr("10.9.9.9")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		if host == "local.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return dns.resolve(ctx, host)
	}
	ev := &counts{labels: map[string]int{}}
	p := fmt.Sprint(port)
	g, c, _ := testGate(t, Options{Resolve: resolve, Events: ev}, Limits{},
		"127.0.0.1:"+p, "local.test:"+p, "rebind.test:"+p, "private.test:"+p, "meta.test:"+p, "unlisted-addr.test:"+p)

	if code, body, err := get(c, "http://local.test:"+p+"/"); err != nil || code != 200 || body != "hello" {
		t.Fatalf("a listed name on a listed address: %d %q %v", code, body, err)
	}
	for _, host := range []string{"private.test", "meta.test"} {
		code, body, _ := get(c, "http://"+host+":"+p+"/")
		if code != http.StatusBadGateway || !strings.Contains(body, "resolves to") {
			t.Errorf("%s: %d %q", host, code, body)
		}
	}
	if code, _, _ := get(c, "http://rebind.test:"+p+"/"); code != 200 {
		t.Errorf("rebind, first lookup: %d", code)
	}
	if code, body, _ := get(c, "http://rebind.test:"+p+"/"); code != http.StatusBadGateway || !strings.Contains(body, "10.9.9.9") {
		t.Errorf("rebind, second lookup: %d %q", code, body)
	}
	if code, body, _ := get(c, "http://other.test:"+p+"/"); code != http.StatusForbidden || !strings.Contains(body, "not in the sandbox's allow-list") {
		t.Errorf("unlisted: %d %q", code, body)
	}
	if code, _, _ := get(c, "http://127.0.0.1:1/"); code != http.StatusForbidden {
		t.Errorf("unlisted port: %d", code)
	}
	recs, _ := g.Records()
	want := []struct {
		host    string
		allowed bool
	}{{"local.test", true}, {"private.test", false}, {"meta.test", false}, {"rebind.test", true}, {"rebind.test", false}, {"other.test", false}, {"127.0.0.1", false}}
	if len(recs) != len(want) {
		t.Fatalf("records %+v", recs)
	}
	for i, w := range want {
		if recs[i].Host != w.host || recs[i].Allowed != w.allowed {
			t.Errorf("record %d: %+v, want %s allowed=%v", i, recs[i], w.host, w.allowed)
		}
	}
	if recs[0].BytesReceived == 0 || recs[0].BytesSent == 0 {
		t.Errorf("no bytes counted: %+v", recs[0])
	}
	if ev.conns.Load() != int64(len(want)) || ev.bytes.Load() == 0 {
		t.Errorf("events: %d connections, %d bytes", ev.conns.Load(), ev.bytes.Load())
	}
	// Labelled by the entry that matched; refused after resolving, still
	// by the entry; made-up names as one.
	for label, n := range map[string]int{"local.test:" + p + " allowed": 1, "private.test:" + p + " denied": 1,
		"rebind.test:" + p + " allowed": 1, "rebind.test:" + p + " denied": 1, "(unlisted) denied": 2} {
		if ev.labels[label] != n {
			t.Errorf("metric labels %v: want %d of %q", ev.labels, n, label)
		}
	}
}

// connect opens a tunnel through the gate's socket; the response's status
// line is returned with the connection.
func connect(t *testing.T, sock, target string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			break
		}
	}
	return c, br, strings.TrimSpace(status)
}

func TestTunnelAndByteLimit(t *testing.T) {
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(int64(10)<<30))
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(big.Close)
	addr := big.Listener.Addr().String()
	g, _, sock := testGate(t, Options{}, Limits{MaxConnections: 2, MaxBytes: 1 << 20, ConnectTimeout: time.Second}, addr)
	c, br, status := connect(t, sock, addr)
	defer c.Close()
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT: %s", status)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	n, _ := io.Copy(io.Discard, br)
	if n > 2<<20 {
		t.Errorf("read %d bytes past a 1 MiB limit", n)
	}
	recs, _ := g.Records()
	if len(recs) != 1 || !strings.Contains(recs[0].Error, "limit") || recs[0].BytesReceived > 2<<20 {
		t.Errorf("records %+v", recs)
	}

	// The slot is back; a connection to the proxy's own address is refused.
	g.Allow(mustList(t, addr))
	_, _, status = connect(t, sock, "127.0.0.1:3128")
	if !strings.Contains(status, "403") {
		t.Errorf("CONNECT to the proxy's own address: %s", status)
	}
}

func TestConnectionsAtOnce(t *testing.T) {
	srv, port := origin(t, "x")
	_ = srv
	target := fmt.Sprintf("127.0.0.1:%d", port)
	g, _, sock := testGate(t, Options{}, Limits{MaxConnections: 2, MaxBytes: 1 << 20, ConnectTimeout: time.Second}, target)
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := 0; i < 2; i++ {
		c, _, status := connect(t, sock, target)
		open = append(open, c)
		if !strings.Contains(status, "200") {
			t.Fatalf("tunnel %d: %s", i, status)
		}
	}
	c, _, status := connect(t, sock, target)
	open = append(open, c)
	if !strings.Contains(status, "502") {
		t.Errorf("third tunnel: %s", status)
	}
	recs, _ := g.Records()
	if last := recs[len(recs)-1]; last.Allowed || !strings.Contains(last.Error, "too many connections") {
		t.Errorf("last record %+v", last)
	}
	// Idle clients past twice the limit and a few more are turned away.
	for i := 0; i < 16; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, _ = g.Records()
		if strings.Contains(recs[len(recs)-1].Error, "too many connections") && recs[len(recs)-1].Host == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if last := recs[len(recs)-1]; last.Host != "" {
		t.Errorf("no client was turned away: %+v", last)
	}
}

func TestChainsToTheUpstreamProxy(t *testing.T) {
	// A stand-in for the host's outbound proxy: it answers the tunnel
	// itself and never connects anywhere.
	var asked atomic.Value
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				asked.Store(req.Method + " " + req.Host + " " + req.Header.Get("Proxy-Authorization"))
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\npong from upstream\n")
			}()
		}
	}()
	upstream := &url.URL{Scheme: "http", Host: up.Addr().String(), User: url.UserPassword("u", "p")}
	_, _, sock := testGate(t, Options{Upstream: func(string) (*url.URL, error) { return upstream, nil }}, Limits{}, "203.0.113.7:443")
	c, br, status := connect(t, sock, "203.0.113.7:443")
	defer c.Close()
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT: %s", status)
	}
	line, _ := br.ReadString('\n')
	if line != "pong from upstream\n" {
		t.Errorf("through the tunnel: %q", line)
	}
	if got, _ := asked.Load().(string); got != "CONNECT 203.0.113.7:443 Basic dTpw" {
		t.Errorf("upstream was asked %q", got)
	}
}

func TestUpstreamFromEnvironment(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.corp:3128")
	t.Setenv("NO_PROXY", "internal.corp")
	p, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := p.opts.Upstream("203.0.113.7:443"); err != nil || u == nil || u.Host != "proxy.corp:3128" {
		t.Errorf("upstream %v %v", u, err)
	}
}

func TestSmuggledRequestIsJudgedOnItsOwn(t *testing.T) {
	var hits atomic.Int64
	hidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(hidden.Close)
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.Store(r.Method + " " + string(b))
	}))
	t.Cleanup(srv.Close)
	g, _, sock := testGate(t, Options{}, Limits{}, srv.Listener.Addr().String())
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	smuggled := fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", hidden.Listener.Addr(), hidden.Listener.Addr())
	fmt.Fprintf(c, "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n%s",
		srv.Listener.Addr(), srv.Listener.Addr(), 5, smuggled)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	out, _ := io.ReadAll(c)
	if hits.Load() != 0 {
		t.Errorf("the smuggled request reached the unlisted server")
	}
	recs, _ := g.Records()
	for _, r := range recs {
		if r.Host == "127.0.0.1" && r.Port == int(netip.MustParseAddrPort(hidden.Listener.Addr().String()).Port()) && r.Allowed {
			t.Errorf("smuggled request allowed: %+v", r)
		}
	}
	if !strings.Contains(string(out), "403 Forbidden") || seen.Load() != "POST " {
		t.Errorf("proxy answered %q; origin saw %v", out, seen.Load())
	}
}

// host.sandboxd.internal leads to the host's loopback, on the ports its
// entry lists, and is never looked up.
func TestHostServicesByName(t *testing.T) {
	_, port := origin(t, "a service on the host")
	_, other := origin(t, "another")
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		t.Error("the host's name was looked up")
		return nil, errors.New("no lookups")
	}
	_, c, _ := testGate(t, Options{Resolve: resolve}, Limits{}, fmt.Sprintf("%s:%d", HostName, port), "*.sandboxd.internal", fmt.Sprintf("*.sandboxd.internal:%d", other))
	if code, body, err := get(c, fmt.Sprintf("http://%s:%d/", HostName, port)); err != nil || code != 200 || body != "a service on the host" {
		t.Fatalf("the listed port: %d %q %v", code, body, err)
	}
	// A wildcard does not name the host's services: only their exact
	// entries do.
	for _, p := range []uint16{other, 80, 443} {
		if code, body, _ := get(c, fmt.Sprintf("http://%s:%d/", HostName, p)); code != http.StatusForbidden || !strings.Contains(body, "allow-list") {
			t.Fatalf("port %d of the host, under a wildcard: %d %q", p, code, body)
		}
	}
	if ceiling := mustList(t, "*.sandboxd.internal"); (mustList(t, HostName+":8080")).Within(ceiling) == "" {
		t.Error("a wildcard ceiling covers the host's services")
	}
	if code, _, _ := get(c, fmt.Sprintf("http://127.0.0.1:%d/", port)); code != http.StatusForbidden {
		t.Fatalf("the host's address, unlisted: %d", code)
	}
}
