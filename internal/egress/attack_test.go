package egress

import (
	"bufio"
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/egress/egresstest"
)

// attackRig is a gate holding three secrets (in Authorization, in
// X-Api-Key and in the query parameter api_key), all bound to a TLS
// fixture that also speaks HTTP/2 and a plain one on loopback.
type attackRig struct {
	g                   *Gate
	sock                string
	echo                *egresstest.Echo
	tlsAddr, plainAddr  string
	trust               *x509.CertPool // the sandbox's bundle
	bearer, header, qry string         // the placeholders
}

func newAttackRig(t *testing.T) *attackRig {
	t.Helper()
	echo := &egresstest.Echo{}
	rig := newReviewRig(t, echo, "")
	rig.echo = echo
	return rig
}

// newReviewRig is the rig with h as the bound server (TLS, which speaks
// HTTP/2 too, and plain) and bearerValue as the value of the
// Authorization secret ("" for egresstest.BearerValue).
func newReviewRig(t *testing.T, h http.Handler, bearerValue string) *attackRig {
	t.Helper()
	rig := &attackRig{}
	secure := httptest.NewUnstartedServer(h)
	secure.EnableHTTP2 = true
	secure.StartTLS()
	t.Cleanup(secure.Close)
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	rig.tlsAddr, rig.plainAddr = secure.Listener.Addr().String(), plain.Listener.Addr().String()
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	g, _, sock := testGate(t, Options{Roots: roots}, Limits{MaxConnections: 16, MaxBytes: 1 << 20, ConnectTimeout: 2 * time.Second}, rig.tlsAddr, rig.plainAddr)
	rig.g, rig.sock = g, sock
	bundle, err := os.ReadFile(filepath.Join(g.p.Dir("k1"), Bundle))
	if err != nil {
		t.Fatal(err)
	}
	rig.trust = x509.NewCertPool()
	rig.trust.AppendCertsFromPEM(bundle)
	hosts, _ := Parse([]string{rig.tlsAddr, rig.plainAddr})
	rig.bearer, rig.header, rig.qry = Placeholder("bearer"), Placeholder("key"), Placeholder("q")
	g.SetSecrets([]Secret{
		{Name: "bearer", Value: cmp.Or(bearerValue, egresstest.BearerValue), Hosts: hosts, Placeholder: rig.bearer},
		{Name: "key", Value: egresstest.HeaderValue, Hosts: hosts, Header: "x-api-key", Placeholder: rig.header},
		{Name: "q", Value: egresstest.QueryValue, Hosts: hosts, Query: "api_key", Placeholder: rig.qry},
	})
	return rig
}

// send writes a raw request as a sandbox would, over plain HTTP through
// the proxy or inside an intercepted TLS connection, and returns every
// byte that came back.
func (rig *attackRig) send(t *testing.T, overTLS bool, serverName string, raw string) string {
	t.Helper()
	c, err := net.Dial("unix", rig.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var conn net.Conn = c
	if overTLS {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", rig.tlsAddr, rig.tlsAddr)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		cfg := &tls.Config{RootCAs: rig.trust, ServerName: serverName, NextProtos: []string{"h2", "http/1.1"}}
		if serverName != "127.0.0.1" {
			cfg.InsecureSkipVerify = true // the certificate is the bound host's; the name is what is tried
		}
		tc := tls.Client(&bufferedConn{Conn: c, r: br}, cfg)
		if err := tc.Handshake(); err != nil {
			return "handshake: " + err.Error()
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
			t.Errorf("the intercepted connection negotiated %q, not HTTP/1.1", p)
		}
		conn = tc
	}
	io.WriteString(conn, raw)
	got, _ := io.ReadAll(conn)
	return string(got)
}

// request is a raw request for path with headers, in the form the
// channel takes: absolute over plain HTTP, origin-form inside TLS.
func (rig *attackRig) request(overTLS bool, path string, headers ...string) string {
	target, host := "http://"+rig.plainAddr+path, rig.plainAddr
	if overTLS {
		target, host = path, rig.tlsAddr
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\n", target)
	hasHost := false
	for _, h := range headers {
		hasHost = hasHost || strings.HasPrefix(strings.ToLower(h), "host:")
		b.WriteString(h + "\r\n")
	}
	if !hasHost {
		b.WriteString("Host: " + host + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	return b.String()
}

// The ways a server's echo of a credential came back on main, over plain
// HTTP and intercepted HTTPS (to a server that speaks HTTP/2): every
// byte the sandbox gets back holds no value in any form, and what the
// proxy cannot scrub it refuses.
func TestEchoesComeBackScrubbed(t *testing.T) {
	rig := newAttackRig(t)
	auth := "Authorization: Bearer " + rig.bearer
	for _, overTLS := range []bool{false, true} {
		for _, tc := range []struct {
			path, want string
			headers    []string
		}{
			{"/check", "authorized", nil},
			{"/echo", "you sent Bearer " + rig.bearer, nil},
			{"/gzip", "you sent Bearer " + rig.bearer, []string{"Accept-Encoding: gzip"}},
			{"/gzip-asked", "you sent Bearer " + rig.bearer, []string{"Accept-Encoding: gzip, br"}},
			{"/br", "502", nil},
			{"/trailer", "body first", []string{"TE: trailers"}},
			{"/trailer-unannounced", "body first", []string{"TE: trailers"}},
			{"/early", "final", nil},
			{"/upgrade", "502", nil},
			{"/range", "padding", []string{"Range: bytes=20-30"}},
			{"/reason", "200 OK", nil},
			{"/malformed", "502", nil},
			{"/badheader", "502", nil},
			{"/encoded", "200 OK", nil},
			{"/redirect", "302", nil},
		} {
			name := fmt.Sprintf("%s tls=%v", tc.path, overTLS)
			got := rig.send(t, overTLS, "127.0.0.1", rig.request(overTLS, tc.path, append([]string{auth, "X-Api-Key: " + rig.header}, tc.headers...)...))
			if leak := egresstest.GivesAway(got); leak != "" {
				t.Errorf("%s: the answer gives a value away (%q):\n%s", name, leak, got)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("%s: no %q in:\n%s", name, tc.want, got)
			}
		}
	}
	if seen := rig.echo.Got(); len(seen) == 0 || !strings.Contains(seen[0], egresstest.BearerValue) || !strings.Contains(seen[0], egresstest.HeaderValue) {
		t.Errorf("the server did not get the values where they go: %q", seen)
	}
	for _, p := range rig.echo.Protos() {
		if p != "HTTP/1.1" {
			t.Errorf("the proxy spoke %s to the server", p)
		}
	}
	records, _ := rig.g.Records()
	for _, r := range records {
		if leak := egresstest.GivesAway(r.Error); leak != "" {
			t.Errorf("a record holds a value: %+v", r)
		}
	}
	if !hasRecord(records, "not valid HTTP/1.1") || !hasRecord(records, "cannot read") || !hasRecord(records, "switched protocols") {
		t.Errorf("the refused answers are not recorded as the proxy's own words: %+v", records)
	}
}

func hasRecord(records []Connection, text string) bool {
	for _, r := range records {
		if strings.Contains(r.Error, text) {
			return true
		}
	}
	return false
}

// A placeholder anywhere but where its secret goes, or for a name other
// than the connection's host, is refused (403, recorded with the rule)
// and its value never leaves sandboxd; where it goes, it is written.
func TestPlaceholdersGoOnlyWhereTheirSecretSays(t *testing.T) {
	rig := newAttackRig(t)
	for _, overTLS := range []bool{false, true} {
		for _, tc := range []struct {
			name, path, sni, want string
			headers               []string
		}{
			{"a header of the sandbox's choosing", "/echo", "", "in the X-Note header", []string{"X-Note: " + rig.bearer}},
			{"User-Agent", "/echo", "", "in the User-Agent header", []string{"User-Agent: curl " + rig.bearer}},
			{"Referer", "/echo", "", "in the Referer header", []string{"Referer: https://x/?" + rig.bearer}},
			{"the query, for a header's secret", "/echo?token=" + rig.bearer, "", `in the query parameter "token"`, nil},
			{"the path", "/echo/" + rig.bearer, "", "in the URL's path", nil},
			{"another secret's header", "/echo", "", "it may go only in the X-Api-Key header", []string{"Authorization: Bearer " + rig.header}},
			{"the wrong query parameter", "/echo?other=" + rig.qry, "", `in the query parameter "other"`, nil},
			{"a header's name", "/echo", "", "a header's name", []string{"X-" + rig.bearer + ": 1"}},
			{"an upgrade", "/echo", "", "upgraded connection", []string{"Authorization: Bearer " + rig.bearer, "Upgrade: websocket", "Connection: Upgrade"}},
		} {
			if !overTLS && tc.sni != "" {
				continue
			}
			before := len(rig.echo.Got())
			got := rig.send(t, overTLS, "127.0.0.1", rig.request(overTLS, tc.path, tc.headers...))
			if !strings.HasPrefix(got, "HTTP/1.1 403") || !strings.Contains(got, tc.want) {
				t.Errorf("%s (tls %v): want a 403 saying %q, got:\n%s", tc.name, overTLS, tc.want, got)
			}
			if after := rig.echo.Got(); len(after) != before {
				t.Errorf("%s (tls %v): the request reached the server: %q", tc.name, overTLS, after[before:])
			}
		}
	}

	// Domain fronting: inside a connection to the bound host, a request
	// for another name (Host, an absolute URL, or the TLS name).
	for _, tc := range []struct{ name, sni, raw string }{
		{"Host", "127.0.0.1", "GET /echo HTTP/1.1\r\nHost: front.example\r\nAuthorization: Bearer " + rig.bearer + "\r\nConnection: close\r\n\r\n"},
		{"an absolute URL", "127.0.0.1", "GET https://front.example/echo HTTP/1.1\r\nHost: " + rig.tlsAddr + "\r\nAuthorization: Bearer " + rig.bearer + "\r\nConnection: close\r\n\r\n"},
		{"the TLS name", "front.example", rig.request(true, "/echo", "Authorization: Bearer "+rig.bearer)},
		{"the port", "127.0.0.1", "GET /echo HTTP/1.1\r\nHost: 127.0.0.1:1\r\nAuthorization: Bearer " + rig.bearer + "\r\nConnection: close\r\n\r\n"},
	} {
		before := len(rig.echo.Got())
		got := rig.send(t, true, tc.sni, tc.raw)
		if !strings.HasPrefix(got, "HTTP/1.1 403") || !strings.Contains(got, "inside a connection to 127.0.0.1") {
			t.Errorf("fronting by %s: want a 403, got:\n%s", tc.name, got)
		}
		if len(rig.echo.Got()) != before {
			t.Errorf("fronting by %s reached the server", tc.name)
		}
	}

	// Where each secret goes, it is written: a bearer token, a Basic
	// credential, its own header, its query parameter.
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + rig.bearer))
	for _, overTLS := range []bool{false, true} {
		for _, tc := range []struct {
			path, want string
			headers    []string
		}{
			{"/check", "Bearer " + egresstest.BearerValue, []string{"Authorization: Bearer " + rig.bearer}},
			{"/check", "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+egresstest.BearerValue)), []string{"Authorization: Basic " + basic}},
			{"/check", "|" + egresstest.HeaderValue + "|", []string{"X-Api-Key: " + rig.header}},
			{"/check?a=1&api_key=" + rig.qry + "&b=2", "||" + egresstest.QueryValue, nil},
		} {
			before := len(rig.echo.Got())
			got := rig.send(t, overTLS, "127.0.0.1", rig.request(overTLS, tc.path, tc.headers...))
			seen := rig.echo.Got()
			if !strings.Contains(got, "authorized") || len(seen) != before+1 || seen[before] != strings.TrimPrefix(tc.want, "") && !strings.Contains(seen[before], tc.want) {
				t.Errorf("%s %v (tls %v): the server got %q; answer:\n%s", tc.path, tc.headers, overTLS, seen[before:], got)
			}
		}
	}
	records, _ := rig.g.Records()
	if !hasRecord(records, "it may go only in the Authorization header") || !hasRecord(records, "inside a connection to") {
		t.Errorf("the refusals are not recorded with their rule: %+v", records)
	}
}

// A sandbox that asks for HTTP/2 inside an intercepted connection gets
// HTTP/1.1 or nothing: the proxy reads every request it writes a secret
// into.
func TestInterceptSpeaksHTTP11Only(t *testing.T) {
	rig := newAttackRig(t)
	c, br, status := connect(t, rig.sock, rig.tlsAddr)
	defer c.Close()
	if !strings.Contains(status, "200") {
		t.Fatal(status)
	}
	tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{RootCAs: rig.trust, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err == nil && tc.ConnectionState().NegotiatedProtocol == "h2" {
		t.Fatal("the proxy agreed to HTTP/2")
	}
	// The HTTP/2 preface over HTTP/1.1's ALPN is refused too.
	got := rig.send(t, true, "127.0.0.1", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	if egresstest.GivesAway(got) != "" || strings.Contains(got, "200 OK") {
		t.Errorf("the HTTP/2 preface: %q", got)
	}
}
