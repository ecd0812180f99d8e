package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestPreview opens a server a session runs to a browser through a
// preview link, and knocks on it as someone without the right token would:
// a token for another port or session, odd spellings of the port, one
// expired or revoked, and a port nothing listens on.
func TestPreview(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Extra: `http { listen = "127.0.0.1:0" }`})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	other := newSession(t, c, api.SessionRequest{})
	serveSite(t, c, id, 8765, "hello from the preview")
	p, err := c.Preview(ctx(t), id, 8765, 0)
	if err != nil {
		t.Fatal(err)
	}
	link, err := url.Parse(p.URL)
	if err != nil || link.Hostname() != "8765-"+id+".localhost" || link.Query().Get("sandboxd_preview") == "" {
		t.Fatalf("preview link %q: %v", p.URL, err)
	}
	listen := link.Port()

	// browser reaches every *.localhost name at the listener, as browsers
	// resolve them to loopback, and keeps its cookies.
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+listen)
		}
		return &http.Client{Jar: jar, Transport: &http.Transport{DialContext: dial}, Timeout: 30 * time.Second}
	}
	get := func(b *http.Client, u string) (int, string) {
		t.Helper()
		resp, err := b.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	at := func(host, path string, q url.Values) string {
		u := url.URL{Scheme: "http", Host: host + ":" + listen, Path: path, RawQuery: q.Encode()}
		return u.String()
	}
	tokenOf := func(p *api.Preview) url.Values { return url.Values{"sandboxd_preview": {p.Token}} }

	b := browser()
	if code, body := get(b, p.URL); code != 200 || body != "hello from the preview\n" {
		t.Fatalf("the preview link: %d %q", code, body)
	}
	if code, body := get(b, at("8765-"+id+".localhost", "/index.html", nil)); code != 200 || body != "hello from the preview\n" {
		t.Fatalf("the preview again, with its cookie alone: %d %q", code, body)
	}
	if code, _ := get(browser(), at("8765-"+id+".localhost", "/", nil)); code != 401 {
		t.Errorf("the preview without a token: %d, want 401", code)
	}
	// The port is read as a number: another spelling is the same port.
	for _, spelling := range []string{"08765", "+8765"} {
		if code, body := get(browser(), at(spelling+"-"+id+".localhost", "/", tokenOf(p))); code != 200 || body != "hello from the preview\n" {
			t.Errorf("port spelled %s: %d %q", spelling, code, body)
		}
	}
	// A token opens its own port of its own session, nothing else.
	p8766, err := c.Preview(ctx(t), id, 8766, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(browser(), at("8765-"+id+".localhost", "/", tokenOf(p8766))); code != 401 {
		t.Errorf("port 8766's token on port 8765: %d, want 401", code)
	}
	if code, _ := get(browser(), at("8765-"+other+".localhost", "/", tokenOf(p))); code != 401 {
		t.Errorf("session %s's token on session %s: %d, want 401", id, other, code)
	}
	// A port nothing listens on: its own token, and the sandbox's answer.
	if code, body := get(browser(), p8766.URL); code != 502 || !strings.Contains(body, "nothing listens") {
		t.Errorf("a port nothing listens on: %d %q", code, body)
	}
	// The preview's origin is the app's alone: the API is not behind it.
	if code, body := get(b, at("8765-"+id+".localhost", "/v1/health", nil)); code != 404 || strings.Contains(body, `"status"`) {
		t.Errorf("the API through the preview's origin: %d %q", code, body)
	}
	// Expired, then revoked.
	short, err := c.Preview(ctx(t), id, 8765, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if code, _ := get(browser(), short.URL); code != 401 {
		t.Errorf("an expired token: %d, want 401", code)
	}
	if err := c.RevokePreviews(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(b, at("8765-"+id+".localhost", "/", nil)); code != 401 {
		t.Errorf("a revoked token's cookie: %d, want 401", code)
	}
	if code, _ := get(browser(), p.URL); code != 401 {
		t.Errorf("a revoked link: %d, want 401", code)
	}
	// And as a person would ask for one.
	out, errOut, code := d.Ctl("", "session", "preview", id, "8765")
	if code != 0 || !strings.HasPrefix(out, "http://8765-"+id+".localhost:"+listen+"/?sandboxd_preview=") {
		t.Fatalf("sandboxctl session preview: exit %d %q %q", code, out, errOut)
	}
	if code, body := get(browser(), strings.TrimSpace(out)); code != 200 || body != "hello from the preview\n" {
		t.Errorf("sandboxctl's link after the revocation: %d %q", code, body)
	}
}

// hostileServers is a python program for a session: on 8801 a server that
// answers every request with an endless body, on 8802 one that accepts and
// never answers, on 8803 one that closes mid-way through its answer.
const hostileServers = `import socket, threading
def serve(port, handle):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(1024)
    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
def flood(c):
    try:
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        while True:
            c.sendall(b"x" * 65536)
    except OSError:
        pass
held = []
def stall(c):
    held.append(c)
def cut(c):
    c.recv(65536)
    c.sendall(b"HTTP/1.1 20")
    c.close()
serve(8801, flood)
serve(8802, stall)
serve(8803, cut)
threading.Event().wait()
`

// TestHostilePorts points browsers and clients at servers in a sandbox
// that try to wedge sandboxd: an endless answer nobody reads, a server
// that never answers, one that closes mid-answer, and a thousand
// connections at once. The session's other operations go on meanwhile,
// and the daemon stays whole.
func TestHostilePorts(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Extra: `http { listen = "127.0.0.1:0" }`})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	if _, err := c.PutFile(ctx(t), id, "servers.py", strings.NewReader(hostileServers), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, c, id, "python3 servers.py >/dev/null 2>&1 </dev/null &")
	waitFor(t, "the servers to listen", func() bool {
		ports, err := c.Ports(ctx(t), id)
		return err == nil && len(ports) == 3
	})
	alive := func(what string) {
		t.Helper()
		actx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if res, err := c.Exec(actx, id, api.ExecRequest{Argv: []string{"echo", "alive"}}); err != nil || res.Stdout != "alive\n" {
			t.Fatalf("the session %s: %+v %v", what, res, err)
		}
	}
	var listen string
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+listen)
	}
	// preview trades a preview link's token for its cookie, as a browser's
	// first visit does, and returns the preview's host and the cookie.
	preview := func(port int) (host, cookie string) {
		t.Helper()
		p, err := c.Preview(ctx(t), id, port, 0)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(p.URL)
		listen = u.Port()
		first := &http.Client{Transport: &http.Transport{DialContext: dial},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := first.Get(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, ck := range resp.Cookies() {
			if ck.Name == "sandboxd_preview" {
				return u.Host, ck.Name + "=" + ck.Value
			}
		}
		t.Fatalf("the preview link of port %d set no cookie: %d", port, resp.StatusCode)
		return "", ""
	}
	browser := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: dial}}
	get := func(host, cookie string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		req.Header.Set("Cookie", cookie)
		return browser.Do(req)
	}

	// An endless answer to a browser that never reads: its connection is
	// dropped, and the session answers meanwhile.
	host, cookie := preview(8801)
	raw, err := net.Dial("tcp", "127.0.0.1:"+listen)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := io.WriteString(raw, "GET / HTTP/1.1\r\nHost: "+host+"\r\nCookie: "+cookie+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the flood fills every buffer on the way
	alive("while a browser does not read an endless answer")
	head := make([]byte, 15)
	if _, err := io.ReadFull(raw, head); err != nil || string(head) != "HTTP/1.1 200 OK" {
		t.Errorf("the endless answer began %q (%v)", head, err)
	}

	// A server that never answers: the browser gives up, nothing else waits.
	host, cookie = preview(8802)
	if resp, err := get(host, cookie); err == nil {
		t.Errorf("a server that never answers answered %d", resp.StatusCode)
		resp.Body.Close()
	}
	alive("after a server that never answered")
	// One that closes mid-answer: a bad gateway, said so.
	host, cookie = preview(8803)
	resp, err := get(host, cookie)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "sandboxd preview") {
		t.Errorf("a server that closes mid-answer: %d %q", resp.StatusCode, body)
	}

	// A thousand connections at once: a bounded number are carried, the
	// rest refused with a reason, none hangs, and all of them end.
	const n = 1000
	var wg sync.WaitGroup
	var carried, refused, other atomic.Int32
	var sample sync.Map // what the others got, a few
	conns := make(chan net.Conn, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			conn, err := c.ConnectPort(cctx, id, 8802)
			if err != nil {
				sample.Store(err.Error(), true)
				other.Add(1)
				return
			}
			conns <- conn
			began := time.Now()
			_ = conn.SetReadDeadline(began.Add(5 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			switch {
			case err != nil && strings.Contains(err.Error(), "too_many_connections"):
				refused.Add(1)
			case time.Since(began) >= 4*time.Second:
				carried.Add(1) // held open by the server that never answers, to the deadline
			default:
				sample.Store(fmt.Sprint(err), true)
				other.Add(1)
			}
		}()
	}
	wg.Wait()
	close(conns)
	for conn := range conns {
		conn.Close()
	}
	t.Logf("%d connections: %d carried, %d refused, %d otherwise", n, carried.Load(), refused.Load(), other.Load())
	sample.Range(func(k, _ any) bool { t.Logf("otherwise: %v", k); return true })
	if carried.Load() == 0 || carried.Load() > 16 || refused.Load() < n-16-other.Load() || other.Load() > n/10 {
		t.Errorf("%d connections: %d carried, %d refused, %d otherwise", n, carried.Load(), refused.Load(), other.Load())
	}
	alive("after a thousand connections")
	// Their slots are free again.
	waitFor(t, "a connection carried again", func() bool {
		conn, err := c.ConnectPort(ctx(t), id, 8802)
		if err != nil {
			return false
		}
		defer conn.Close()
		began := time.Now()
		_ = conn.SetReadDeadline(began.Add(time.Second))
		_, _ = conn.Read(make([]byte, 1))
		return time.Since(began) >= 900*time.Millisecond
	})
	if out, _, code := d.Ctl("", "status"); code != 0 {
		t.Errorf("the daemon after the hostile servers: %s", out)
	}
}
