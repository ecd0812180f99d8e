package dashboard

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	s, err := loadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "dashboard.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v", fi, err)
	}
	login, _ := s.issue(kindLogin, time.Minute)
	if !s.valid(login, kindLogin) || s.valid(login, kindSession) {
		t.Errorf("a login token is a login token only")
	}
	if expired, _ := s.issue(kindLogin, -time.Minute); s.valid(expired, kindLogin) {
		t.Errorf("an expired token was taken")
	}
	b := []byte(login)
	b[10] ^= 1
	for _, bad := range []string{"", "x", string(b), login + "A", strings.Repeat("A", len(login))} {
		if s.valid(bad, kindLogin) {
			t.Errorf("%q was taken", bad)
		}
	}
	// The key outlives a restart; another key's tokens are no good.
	again, err := loadKey(dir)
	if err != nil || !again.valid(login, kindLogin) {
		t.Errorf("after a restart: %v", err)
	}
	other, _ := loadKey(t.TempDir())
	if other.valid(login, kindLogin) {
		t.Errorf("another key's token was taken")
	}
	if s.csrf("a") == s.csrf("b") || s.csrf("a") != again.csrf("a") {
		t.Errorf("CSRF values are bound to the session")
	}
	if err := os.WriteFile(filepath.Join(dir, "dashboard.key"), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadKey(dir); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a damaged key: %v", err)
	}
}

func TestGuard(t *testing.T) {
	d, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, aerr := d.Login(nil); aerr == nil || !strings.Contains(aerr.Error(), "http { listen") {
		t.Errorf("a login link without a listener: %v", aerr)
	}
	d.Listening(&net.TCPAddr{IP: net.IPv4zero, Port: 7070}, "0.0.0.0:7070")
	login, aerr := d.Login(nil)
	if aerr != nil || !strings.HasPrefix(login.URL, "http://127.0.0.1:7070/ui/?token=") {
		t.Fatalf("login: %+v %v", login, aerr)
	}
	tok, _ := url.Parse(login.URL)
	h := d.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }), nil)
	serve := func(method, target string, header map[string]string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		r.Host = "127.0.0.1:7070"
		for k, v := range header {
			if k == "Host" {
				r.Host = v
			} else {
				r.Header.Set(k, v)
			}
		}
		for _, c := range cookies {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := serve("GET", tok.RequestURI(), nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ui/" {
		t.Fatalf("the login link: %d %v", w.Code, w.Header())
	}
	cookies := w.Result().Cookies()
	var session, csrf *http.Cookie
	for _, c := range cookies {
		switch c.Name {
		case sessionCookie:
			session = c
		case csrfCookie:
			csrf = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || csrf == nil || csrf.HttpOnly {
		t.Fatalf("cookies: %v", cookies)
	}
	for _, tc := range []struct {
		name, method, target string
		header               map[string]string
		cookies              []*http.Cookie
		want                 int
	}{
		{"a page with the cookie", "GET", "/ui/", nil, []*http.Cookie{session}, 299},
		{"the API with the cookie", "GET", "/v1/health", nil, []*http.Cookie{session}, 299},
		{"no cookie", "GET", "/v1/health", nil, nil, 401},
		{"the CSRF value as the session", "GET", "/v1/health", nil, []*http.Cookie{{Name: sessionCookie, Value: csrf.Value}}, 401},
		{"a login token as the session", "GET", "/v1/health", nil, []*http.Cookie{{Name: sessionCookie, Value: tok.Query().Get("token")}}, 401},
		{"a POST without the header", "POST", "/v1/sessions", nil, []*http.Cookie{session}, 403},
		{"a POST with the header", "POST", "/v1/sessions", map[string]string{CSRFHeader: csrf.Value}, []*http.Cookie{session}, 299},
		{"a POST with another origin", "POST", "/v1/sessions", map[string]string{CSRFHeader: csrf.Value, "Origin": "http://evil.example"}, []*http.Cookie{session}, 403},
		{"a POST with our origin", "DELETE", "/v1/sessions/x", map[string]string{CSRFHeader: csrf.Value, "Origin": "http://127.0.0.1:7070"}, []*http.Cookie{session}, 299},
		{"a rebinding name", "GET", "/v1/health", map[string]string{"Host": "evil.example:7070"}, []*http.Cookie{session}, 403},
		{"localhost", "GET", "/v1/health", map[string]string{"Host": "localhost:7070"}, []*http.Cookie{session}, 299},
		{"IPv6 loopback", "GET", "/v1/health", map[string]string{"Host": "[::1]:7070"}, []*http.Cookie{session}, 299},
		{"a wrong token", "GET", "/ui/?token=nope", nil, nil, 401},
	} {
		if w := serve(tc.method, tc.target, tc.header, tc.cookies...); w.Code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, w.Code, tc.want, w.Body)
		}
	}
	if w := serve("GET", "/v1/health", nil); !strings.Contains(w.Body.String(), `"unauthorized"`) || w.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("an API refusal: %s %v", w.Body, w.Header())
	}
}

func TestDescribe(t *testing.T) {
	if where, loopback := Describe(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}); !loopback || !strings.Contains(where, "loopback only") {
		t.Errorf("loopback: %s", where)
	}
	if where, loopback := Describe(&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 7070}); loopback || !strings.Contains(where, "BEYOND LOOPBACK") {
		t.Errorf("beyond: %s", where)
	}
}

// A preview's Host names its port and session; the port is read as a
// number first, so its spellings never differ.
func TestParsePreviewHost(t *testing.T) {
	for host, want := range map[string]string{
		"3000-abc.localhost:7070":  "abc 3000",
		"03000-abc.localhost:7070": "abc 3000",
		"+3000-abc.LOCALHOST":      "abc 3000",
		"3000-abc.localhost.":      "",
		" 3000-abc.localhost":      "",
		"70000-abc.localhost":      "",
		"0-abc.localhost":          "",
		"3000-a-b.localhost":       "",
		"3000-a.b.localhost":       "",
		"3000-.localhost":          "",
		"localhost:7070":           "",
		"127.0.0.1:7070":           "",
		"3000-abc.example.com":     "",
	} {
		session, port, ok := parsePreviewHost(host)
		got := ""
		if ok {
			got = fmt.Sprintf("%s %d", session, port)
		}
		if got != want {
			t.Errorf("%q: %q, want %q", host, got, want)
		}
	}
}

// A preview token opens its own port of its own session until revoked.
func TestPreviewTokenScope(t *testing.T) {
	d, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := d.sign.issue(kindPreview, time.Minute, d.previewScope("abc", 3000)...)
	if !d.sign.valid(tok, kindPreview, d.previewScope("abc", 3000)...) {
		t.Fatal("a token for its own port refused")
	}
	for _, scope := range [][]string{d.previewScope("abc", 3001), d.previewScope("abd", 3000), nil} {
		if d.sign.valid(tok, kindPreview, scope...) {
			t.Errorf("a token for abc:3000 opens %v", scope)
		}
	}
	if d.sign.valid(tok, kindSession) {
		t.Error("a preview token is a dashboard session's")
	}
	if aerr := d.RevokePreviews("abc"); aerr != nil {
		t.Fatal(aerr)
	}
	again, err := New(d.stateDir) // the revocation outlives a restart
	if err != nil {
		t.Fatal(err)
	}
	if again.sign.valid(tok, kindPreview, again.previewScope("abc", 3000)...) {
		t.Error("a revoked token still opens its port")
	}
}
