package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
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
