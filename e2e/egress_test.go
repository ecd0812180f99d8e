package e2e

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// outside stands for the world beyond the host: servers on 127.0.0.1,
// which sandboxes reach only through sandboxd's egress proxy.
type outside struct {
	web, tls, big, hidden string // host:port
	hiddenHits            atomic.Int64
	caFile                string // the host's CA bundle and the TLS server's CA
}

func startOutside(t *testing.T) *outside {
	t.Helper()
	o := &outside{}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the outside")
	}))
	t.Cleanup(web.Close)
	secure := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over TLS")
	}))
	secure.StartTLS()
	t.Cleanup(secure.Close)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(int64(10)<<30)) // 10 GB, never all sent
		chunk := make([]byte, 64<<10)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(big.Close)
	hidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { o.hiddenHits.Add(1) }))
	t.Cleanup(hidden.Close)
	o.web, o.tls, o.big, o.hidden = web.Listener.Addr().String(), secure.Listener.Addr().String(), big.Listener.Addr().String(), hidden.Listener.Addr().String()

	bundle, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt") // so that the registries' certificates verify too
	bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})...)
	o.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(o.caFile, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	return o
}

func port(hostport string) string { _, p, _ := net.SplitHostPort(hostport); return p }

// fetch is a python program that fetches each URL in its arguments with
// the standard library, through the proxy its environment names.
const fetch = `
import sys, urllib.request, urllib.error
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            print(url, '->', r.status, r.read(200).decode(errors='replace'))
    except urllib.error.HTTPError as e:
        print(url, '->', 'HTTP', e.code, e.read().decode().strip())
    except Exception as e:
        print(url, '->', 'ERR', type(e).__name__, e)
`

// toOutside is the environment of a program that reaches the outside
// servers: they are on the host's 127.0.0.1, which NO_PROXY (loopback)
// would otherwise send to the sandbox's own loopback.
var toOutside = map[string]string{"NO_PROXY": "", "no_proxy": ""}

// egressDaemon is a daemon whose python sandboxes may reach o's servers;
// extra is more of its configuration.
func egressDaemon(t *testing.T, runtime string, o *outside, extra ...string) *testutil.Daemon {
	return testutil.StartDaemon(t, testutil.Options{Runtime: runtime,
		Extra: fmt.Sprintf(`
network {
  ca_file         = %q
  max_connections = 8
  max_bytes       = "4MiB"
  connect_timeout = "3s"
}
`, o.caFile) + strings.Join(extra, "\n"),
		Languages: fmt.Sprintf(`
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 1
    max      = 8
  }
  network {
    allow = ["127.0.0.1:%s", "127.0.0.1:%s", "127.0.0.1:%s", "localhost:%s", "localhost:%s", "host.sandboxd.internal:%s"]
  }
}
language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 0
    max      = 2
  }
}
`, port(o.web), port(o.tls), port(o.big), port(o.web), port(o.hidden), port(o.web))})
}

// lines maps each URL fetch printed to what came back.
func lines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if url, got, ok := strings.Cut(l, " -> "); ok {
			m[url] = got
		}
	}
	return m
}

func egressOf(res *api.RunResult, host string, port string) *api.Egress {
	for i := range res.Egress {
		if e := res.Egress[i]; e.Host == host && fmt.Sprint(e.Port) == port {
			return &res.Egress[i]
		}
	}
	return nil
}

// TestEgress: sandboxes reach what their allow-list names through
// sandboxd's proxy, and nothing else, under runc and under gVisor.
func TestEgress(t *testing.T) { ociRuntimes(t, testEgress) }

func testEgress(t *testing.T, runtime string) {
	o := startOutside(t)
	d := egressDaemon(t, runtime, o)
	c := d.Client()

	web, secure := "http://"+o.web+"/", "https://"+o.tls+"/"
	unlistedPort := "http://" + o.hidden + "/"
	byName, loopbackName := "http://localhost:"+port(o.web)+"/", "http://localhost:"+port(o.hidden)+"/"
	res := run(t, c, api.RunRequest{Language: "python", Code: fetch, Env: toOutside,
		Args: []string{web, secure, unlistedPort, "http://files.example.org/", byName, loopbackName}})
	got := lines(res.Stdout)
	for url, want := range map[string]string{
		web:                         "200 hello from the outside",
		secure:                      "200 hello over TLS",
		unlistedPort:                "HTTP 403 sandboxd egress: 127.0.0.1 port " + port(o.hidden) + " is not in the sandbox's allow-list",
		"http://files.example.org/": "HTTP 403 sandboxd egress: files.example.org port 80 is not in the sandbox's allow-list",
		byName:                      "200 hello from the outside",
		loopbackName:                "HTTP 502 sandboxd egress: localhost resolves to 127.0.0.1",
	} {
		if !strings.HasPrefix(got[url], want) {
			t.Errorf("%s: got %q, want %q", url, got[url], want)
		}
	}
	if o.hiddenHits.Load() != 0 {
		t.Errorf("the unlisted server was reached %d times", o.hiddenHits.Load())
	}
	if e := egressOf(res, "127.0.0.1", port(o.web)); e == nil || !e.Allowed || e.BytesReceived == 0 || e.BytesSent == 0 {
		t.Errorf("no allowed record with bytes for the web server: %+v", res.Egress)
	}
	if e := egressOf(res, "127.0.0.1", port(o.tls)); e == nil || !e.Allowed || e.BytesReceived < 500 {
		t.Errorf("no record of the TLS tunnel: %+v", res.Egress)
	}
	// The run's usage counts the bytes its connections carried.
	var sent, received int64
	for _, e := range res.Egress {
		sent, received = sent+e.BytesSent, received+e.BytesReceived
	}
	if u := res.Usage; received < 500 || u.NetworkSentBytes != sent || u.NetworkReceivedBytes != received {
		t.Errorf("the run's usage says %d bytes sent, %d received; its connections' records %d and %d", u.NetworkSentBytes, u.NetworkReceivedBytes, sent, received)
	}
	if e := egressOf(res, "files.example.org", "80"); e == nil || e.Allowed || !strings.Contains(e.Error, "allow-list") {
		t.Errorf("no denied record for the unlisted name: %+v", res.Egress)
	}
	if e := egressOf(res, "localhost", port(o.hidden)); e == nil || e.Allowed || !strings.Contains(e.Error, "loopback") {
		t.Errorf("no denied record for the name that resolves to loopback: %+v", res.Egress)
	}

	// A service on the host's loopback, by the name that says so, with
	// the sandbox's own NO_PROXY as it is: the listed port, no other.
	hostWeb, hostHidden := "http://host.sandboxd.internal:"+port(o.web)+"/", "http://host.sandboxd.internal:"+port(o.hidden)+"/"
	res = run(t, c, api.RunRequest{Language: "python", Code: fetch, Args: []string{hostWeb, hostHidden}})
	got = lines(res.Stdout)
	if !strings.HasPrefix(got[hostWeb], "200 hello from the outside") || !strings.HasPrefix(got[hostHidden], "HTTP 403") {
		t.Errorf("host services: %q", res.Stdout)
	}
	// The supervisor's own egress listener is part of a fresh sandbox:
	// runs with egress leave their containers fit for the next.
	waitFor(t, "both runs' containers recycled", func() bool {
		pools, err := c.Pools(ctx(t))
		return err == nil && pools["python"].Recycled+pools["python"].Retired == 2
	})
	if pools, _ := c.Pools(ctx(t)); pools["python"].Retired != 0 {
		t.Errorf("runs with egress retired their containers: %+v", pools["python"])
	}

	// Code that ignores the proxy has no way out: no route, no DNS.
	res = run(t, c, api.RunRequest{Language: "python", Code: `
import socket
for target in [('192.0.2.1', 80), ('203.0.113.80', 443), ('127.0.0.1', ` + port(o.web) + `)]:
    try:
        socket.create_connection(target, timeout=3); print(target[0], 'connected')
    except OSError as e:
        print(target[0], 'refused', e.errno)
try:
    print('dns', socket.getaddrinfo('registry.npmjs.org', 443))
except OSError as e:
    print('dns failed', type(e).__name__)
`})
	for _, want := range []string{"192.0.2.1 refused", "203.0.113.80 refused", "127.0.0.1 refused", "dns failed gaierror"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("direct connections: want %q in %q (stderr %q)", want, res.Stdout, res.Stderr)
		}
	}

	// A request narrows its language's list; more is refused, naming the ceiling.
	res = run(t, c, api.RunRequest{Language: "python", Code: fetch, Env: toOutside, Args: []string{web, secure},
		Network: &api.Network{Allow: []string{"127.0.0.1:" + port(o.tls)}}})
	if got := lines(res.Stdout); !strings.HasPrefix(got[web], "HTTP 403") || !strings.HasPrefix(got[secure], "200") {
		t.Errorf("narrowed run: %q", res.Stdout)
	}
	_, err := c.CreateSession(ctx(t), api.SessionRequest{Language: "python", Network: &api.Network{Allow: []string{"127.0.0.1:" + port(o.web), "files.example.org"}}})
	if apiCode(err) != api.CodeInvalidRequest || !strings.Contains(err.Error(), `"files.example.org" is beyond what language python allows: 127.0.0.1:`+port(o.web)) {
		t.Errorf("session beyond the ceiling: %v", err)
	}
	_, err = c.CreateSession(ctx(t), api.SessionRequest{Language: "node", Network: &api.Network{Allow: []string{"127.0.0.1:" + port(o.web)}}})
	if apiCode(err) != api.CodeInvalidRequest || !strings.Contains(err.Error(), "no egress") {
		t.Errorf("session of a language without egress: %v", err)
	}

	// Two sessions, two lists: each reaches only its own.
	a := newSession(t, c, api.SessionRequest{Network: &api.Network{Allow: []string{"127.0.0.1:" + port(o.web)}}})
	b := newSession(t, c, api.SessionRequest{Network: &api.Network{Allow: []string{"127.0.0.1:" + port(o.tls)}}})
	for id, reach := range map[string][2]string{a: {"200", "ERR"}, b: {"HTTP 403", "200"}} {
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: fetch, Args: []string{web, secure}, Env: toOutside})
		if err != nil {
			t.Fatal(err)
		}
		got := lines(res.Stdout)
		if !strings.HasPrefix(got[web], reach[0]) || !strings.HasPrefix(got[secure], reach[1]) {
			t.Errorf("session %s: %q", id, res.Stdout)
		}
		s, _ := c.Session(ctx(t), id)
		if len(s.Network.Allow) != 1 {
			t.Errorf("session %s record: %+v", id, s.Network)
		}
	}
	// A session's list changes while it lives, within the ceiling, from
	// the next connection on; the CLI's empty list allows nothing.
	if s, err := c.SetNetwork(ctx(t), b, []string{"127.0.0.1:" + port(o.web)}); err != nil || len(s.Network.Allow) != 1 || s.Network.Allow[0] != "127.0.0.1:"+port(o.web) {
		t.Errorf("changing session %s's network: %+v %v", b, s, err)
	}
	if res, err := c.Exec(ctx(t), b, api.ExecRequest{Code: fetch, Args: []string{web, secure}, Env: toOutside}); err != nil ||
		!strings.HasPrefix(lines(res.Stdout)[web], "200") || !strings.HasPrefix(lines(res.Stdout)[secure], "ERR") {
		t.Errorf("session %s after its network changed: %v %+v", b, err, res)
	}
	if _, err := c.SetNetwork(ctx(t), b, []string{"files.example.org"}); apiCode(err) != api.CodeInvalidRequest || !strings.Contains(err.Error(), "beyond what language python allows") {
		t.Errorf("a session's network beyond the ceiling: %v", err)
	}
	if out, errOut, code := d.Ctl("", "session", "network", b); code != 0 || strings.TrimSpace(out) != "" {
		t.Errorf("sandboxctl session network %s: %d %q %q", b, code, out, errOut)
	}
	if res, err := c.Exec(ctx(t), b, api.ExecRequest{Code: fetch, Args: []string{web}, Env: toOutside}); err != nil || !strings.HasPrefix(lines(res.Stdout)[web], "HTTP 403") {
		t.Errorf("session %s allowed nothing: %v %+v", b, err, res)
	}
	if runtime == "runc" {
		// A restarted sandboxd listens again for the sessions it keeps.
		d.Stop()
		d.Restart()
		res, err := c.Exec(ctx(t), a, api.ExecRequest{Code: fetch, Args: []string{web}, Env: toOutside})
		if err != nil || !strings.HasPrefix(lines(res.Stdout)[web], "200") {
			t.Errorf("after a restart: %v %+v", err, res)
		}
	}
}

// TestEgressHostile: programs that attack the proxy get nothing, are
// recorded, and the daemon stays healthy.
func TestEgressHostile(t *testing.T) {
	o := startOutside(t)
	d := egressDaemon(t, "runc", o)
	c := d.Client()
	healthy := func(what string) {
		t.Helper()
		h, err := c.Health(ctx(t))
		if err != nil || h.Status != "ok" {
			t.Fatalf("after %s: health %v %+v", what, err, h)
		}
	}

	// 10 GB offered, the byte limit (4 MiB) taken.
	began := time.Now()
	res := run(t, c, api.RunRequest{Language: "python", Env: toOutside, Code: `
import urllib.request
n = 0
try:
    with urllib.request.urlopen('http://` + o.big + `/', timeout=20) as r:
        while True:
            b = r.read(1 << 16)
            if not b: break
            n += len(b)
except Exception as e:
    print('ended', type(e).__name__)
print('read', n)
`})
	e := egressOf(res, "127.0.0.1", port(o.big))
	var read int64
	fmt.Sscanf(res.Stdout[strings.Index(res.Stdout, "read"):], "read %d", &read)
	if e == nil || !strings.Contains(e.Error, "limit of 4MiB") || e.BytesReceived > 5<<20 || read == 0 || read > 5<<20 {
		t.Errorf("download over the byte limit (%s): %q %+v", time.Since(began), res.Stdout, res.Egress)
	}
	healthy("a download over the limit")

	// A flood of tunnels, a slowloris client, a CONNECT to the proxy
	// itself and a smuggled request, in one program.
	res = run(t, c, api.RunRequest{Language: "python", Env: toOutside, Code: `
import socket, time, threading, urllib.request
def raw(payload, wait=5):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=wait)
    s.sendall(payload.encode())
    return s
def status(s):
    try: return s.recv(4096).decode(errors='replace').split('\r\n')[0]
    except OSError as e: return 'ERR ' + str(e)
flood = []
for i in range(60):
    try: flood.append(raw('CONNECT ` + o.web + ` HTTP/1.1\r\nHost: x\r\n\r\n'))
    except OSError as e: pass
codes = {}
for s in flood:
    st = status(s); codes[st] = codes.get(st, 0) + 1
print('flood', sorted(codes.items()))
for s in flood: s.close()
time.sleep(0.5)
slow = []
for i in range(6):
    slow.append(raw('GET http://` + o.web + `/ HTTP/1.1\r\n'))
ok = urllib.request.urlopen('http://` + o.web + `/', timeout=10).read().decode()
print('beside slowloris', ok)
for s in slow: s.close()
print('self', status(raw('CONNECT 127.0.0.1:3128 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n')))
s = raw('POST http://` + o.web + `/ HTTP/1.1\r\nHost: ` + o.web + `\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://` + o.hidden + `/ HTTP/1.1\r\nHost: ` + o.hidden + `\r\n\r\n')
time.sleep(1)
print('smuggle', s.recv(65536).decode(errors='replace').count('403 Forbidden'))
`})
	// Eight tunnels at once (max_connections); the rest are refused: 502
	// once the proxy read their CONNECT, 503 when too many clients wait.
	if !strings.Contains(res.Stdout, "('HTTP/1.1 200 Connection established', 8)") || !strings.Contains(res.Stdout, "HTTP/1.1 50") {
		t.Errorf("flood: %q", res.Stdout)
	}
	for _, want := range []string{"beside slowloris hello from the outside", "self HTTP/1.1 403", "smuggle 1"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("want %q in %q (stderr %q)", want, res.Stdout, res.Stderr)
		}
	}
	if o.hiddenHits.Load() != 0 {
		t.Errorf("the smuggled request reached the unlisted server")
	}
	tooMany := 0
	for _, e := range res.Egress {
		if strings.Contains(e.Error, "too many connections") {
			tooMany++
		}
	}
	if tooMany == 0 {
		t.Errorf("no record of the refused flood: %+v", res.Egress)
	}
	healthy("a flood, a slowloris client, a self CONNECT and a smuggled request")

	// Counted by language, host and decision; made-up names as one.
	families := scrape(t, d.Socket)
	if v, _ := value(families, "sandboxd_egress_connections_total", "decision=denied", "host=(unlisted)", "language=python"); v < 1 {
		t.Errorf("denied connections counted %v", v)
	}
	if v, _ := value(families, "sandboxd_egress_connections_total", "decision=allowed", "host=127.0.0.1:"+port(o.web), "language=python"); v < 8 {
		t.Errorf("allowed connections counted %v", v)
	}
	if v, _ := value(families, "sandboxd_egress_bytes_total", "direction=received", "language=python"); v < 4<<20 {
		t.Errorf("bytes received counted %v", v)
	}

	// The denied attempts are in the history and on the CLI's stderr.
	_, stderr, code := d.Ctl(`import urllib.request
try: urllib.request.urlopen('http://files.example.org/')
except Exception as e: print(e)`, "run", "--lang", "python", "-")
	if code != 0 || !strings.Contains(stderr, "egress denied: files.example.org:80") {
		t.Errorf("sandboxctl run: exit %d, stderr %q", code, stderr)
	}
	waitFor(t, "the run in the history", func() bool {
		out, _, _ := d.Ctl("", "history", "--limit", "1")
		return strings.Contains(out, "egress denied: files.example.org:80")
	})
}

// TestEgressPackageInstall: npm and pip install packages through the
// proxy from the registries this machine reaches; a registry that does
// not answer here skips its half, saying so.
func TestEgressPackageInstall(t *testing.T) {
	o := startOutside(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Defaults: `timeout = "60s"`,
		Extra: fmt.Sprintf(`network {
  ca_file = %q
}`, o.caFile),
		Languages: `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 0
    max      = 2
  }
  network {
    allow = ["pypi.org:443", "files.pythonhosted.org:443"]
  }
}
language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 0
    max      = 2
  }
  network {
    allow = ["registry.npmjs.org:443"]
  }
}
`})
	c := d.Client()
	for _, tc := range []struct{ lang, install, check, host string }{
		{"node", "npm install --no-audit --no-fund is-number@7.0.0", "node -e 'console.log(require(\"is-number\")(5))'", "registry.npmjs.org"},
		{"python", "python3 -m pip install --quiet --retries 1 tabulate", "python3 -c 'import tabulate; print(True)'", "pypi.org"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			id := newSession(t, c, api.SessionRequest{Language: tc.lang})
			res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", tc.install}, Timeout: api.Duration(50 * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				for _, e := range res.Egress {
					if e.Host == tc.host && (strings.Contains(e.Error, "resolving") || strings.Contains(e.Error, "connecting")) {
						t.Skipf("%s does not answer on this machine (%s): %s", tc.host, e.Error, res.Stderr)
					}
				}
				t.Fatalf("%s: exit %d\n%s\n%s\negress %+v", tc.install, res.ExitCode, res.Stdout, res.Stderr, res.Egress)
			}
			if res := sh(t, c, id, tc.check); !strings.EqualFold(strings.TrimSpace(res.Stdout), "true") {
				t.Errorf("%s: %q %q", tc.check, res.Stdout, res.Stderr)
			}
			if e := egressOf(res, tc.host, "443"); e == nil || !e.Allowed || e.BytesReceived == 0 {
				t.Errorf("no record of %s: %+v", tc.host, res.Egress)
			}
		})
	}
}
