package egress

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/internal/redact"
)

// Secrets never enter a sandbox. A sandbox that asked for one holds a
// placeholder in its environment; the proxy writes the value in its place
// in one part of requests to the secret's hosts (a header, Authorization
// by default, or a query parameter), and nowhere else:
//
//   - over HTTPS, the proxy reads those requests: it answers the sandbox's
//     TLS with a certificate its own authority signs for that host (the
//     sandbox trusts it through its CA bundle), and speaks TLS to the
//     host itself, verifying it as any client would. Hosts without a
//     secret stay end-to-end tunnels it cannot read.
//   - over plain HTTP, only to the host's own loopback services
//     (host.sandboxd.internal): a secret never crosses a network in the
//     clear.
//
// A request that carries a placeholder anywhere else (another part of
// the request, another host, a request whose own authority or TLS name
// is not the host's, or in the clear) is refused and recorded. What
// comes back is made unable to carry the value: it is asked for
// uncompressed (and decoded when it comes compressed anyway), trailers
// and interim (1xx) answers are dropped, a protocol upgrade is refused,
// and the rest passes a scrubber for every form of every value
// (internal/redact), headers and body, which shows the sandbox its
// placeholder instead.

// Secret is a credential and where it may go.
type Secret struct {
	Name  string
	Value string
	Hosts List // the hosts (and ports) it is written for
	// Header is the request header the value goes in; Query, when set
	// instead, the query parameter.
	Header      string
	Query       string
	Placeholder string // what the sandbox holds instead
}

// DefaultHeader is where a secret goes unless its block says otherwise.
const DefaultHeader = "Authorization"

// Where says where the secret's value may go, for messages.
func (s Secret) Where() string {
	if s.Query != "" {
		return "the query parameter " + strconv.Quote(s.Query)
	}
	return "the " + s.header() + " header"
}

func (s Secret) header() string {
	if s.Header == "" {
		return DefaultHeader
	}
	return textproto.CanonicalMIMEHeaderKey(s.Header)
}

// Placeholder makes the opaque stand-in a sandbox holds for secret name.
func Placeholder(name string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "sandboxd-secret-" + name + "-" + hex.EncodeToString(b)
}

// Bundle is the CA bundle a sandbox's TLS clients trust, in its egress
// directory: the operator's (the host's by default) and the sandbox's
// own authority.
const Bundle = "ca.crt"

// SetSecrets sets the secrets the sandbox's requests may carry from now
// on; nil, none. The connections intercepted for the secrets before end:
// what they carry next is judged anew.
func (g *Gate) SetSecrets(secrets []Secret) {
	forms := make([]redact.Secret, len(secrets))
	for i, s := range secrets {
		forms[i] = redact.Secret{Value: s.Value, Replacement: s.Placeholder}
	}
	g.mu.Lock()
	g.secrets, g.scrubber = secrets, redact.New(forms...)
	intercepted := g.intercepted
	g.intercepted = map[*http.Server]bool{}
	g.mu.Unlock()
	for srv := range intercepted {
		srv.Close()
	}
}

// intercepting notes (on) or forgets an intercepted connection's server,
// for SetSecrets to end; false when the gate is closed.
func (g *Gate) intercepting(srv *http.Server, on bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.intercepted == nil {
		g.intercepted = map[*http.Server]bool{}
	}
	if !on {
		delete(g.intercepted, srv)
		return true
	}
	g.intercepted[srv] = true
	return !g.closed
}

func (g *Gate) secretList() ([]Secret, *redact.Replacer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.secrets, g.scrubber
}

// secretsFor are the secrets written into requests to host:port.
func (g *Gate) secretsFor(host string, port uint16) []Secret {
	var out []Secret
	secrets, _ := g.secretList()
	for _, s := range secrets {
		if s.Hosts.Entry(host, port) != "" {
			out = append(out, s)
		}
	}
	return out
}

// exchange is what a request is sent to: the host and port the sandbox
// connected to, whether the request travels in the clear, and whether
// its own authority (and TLS name) is that host's.
type exchange struct {
	host    string
	port    uint16
	inClear bool
	// foreign, when not "", is the name the request (or its TLS
	// connection) gives instead of host's.
	foreign string
	// tunnelled: the request goes through the session's SOCKS5 proxy, so
	// even to a loopback address it crosses a network.
	tunnelled bool
}

// writeSecrets puts each placeholder's value where its secret may go in
// r, for a request to ex. It says why r is refused instead: a
// placeholder anywhere else in the request, or bound for a host, name or
// channel its secret may not go to. With secrets it also makes the
// request unable to bring a value back in a form the scrubber cannot
// read (see prepare).
func writeSecrets(r *http.Request, ex exchange, secrets []Secret) string {
	if len(secrets) == 0 {
		return ""
	}
	if r.Header.Get("Upgrade") != "" {
		return "this sandbox holds secrets, and an upgraded connection could carry one back unscrubbed"
	}
	for _, s := range secrets {
		places := placesOf(r, s.Placeholder)
		if len(places) == 0 {
			continue
		}
		for _, p := range places {
			if p != s.Where() {
				return fmt.Sprintf("secret %s's placeholder is in %s; it may go only in %s", s.Name, p, s.Where())
			}
		}
		switch {
		case s.Hosts.Entry(ex.host, ex.port) == "":
			return fmt.Sprintf("the request carries secret %s's placeholder, and %s port %d is not among its hosts (%s)",
				s.Name, ex.host, ex.port, strings.Join(s.Hosts.Strings(), ", "))
		case ex.foreign != "":
			return fmt.Sprintf("secret %s's placeholder is in a request for %s inside a connection to %s; a secret goes only to the host the connection is for",
				s.Name, ex.foreign, ex.host)
		case ex.inClear && (!loopback(ex.host) || ex.tunnelled):
			return fmt.Sprintf("secret %s would go to %s in the clear; use https", s.Name, ex.host)
		}
		s.write(r)
	}
	// What comes back is read whole by the scrubber: no compressed
	// answers, no byte ranges that cut a value into pieces it cannot
	// recognise.
	r.Header.Set("Accept-Encoding", "identity")
	// Connection names headers to drop on the way (Accept-Encoding, say):
	// the proxy manages its own connections.
	for _, h := range []string{"Connection", "Range", "If-Range", "Te"} {
		r.Header.Del(h)
	}
	return ""
}

// placesOf names each part of r that holds placeholder: a header (its
// name or value; a Basic credential decoded), a query parameter, the path
// or the URL's user.
func placesOf(r *http.Request, placeholder string) []string {
	var out []string
	for k, vs := range r.Header {
		if strings.Contains(strings.ToLower(k), strings.ToLower(placeholder)) { // names are canonicalised
			out = append(out, "a header's name")
		}
		for _, v := range vs {
			if strings.Contains(v, placeholder) || strings.Contains(basicCredential(k, v), placeholder) {
				out = append(out, "the "+k+" header")
				break
			}
		}
	}
	if u := r.URL; u != nil {
		if strings.Contains(u.EscapedPath(), placeholder) || strings.Contains(u.Path, placeholder) {
			out = append(out, "the URL's path")
		}
		if u.User != nil && strings.Contains(u.User.String(), placeholder) {
			out = append(out, "the URL's user")
		}
		for _, pair := range strings.Split(u.RawQuery, "&") {
			k, v, _ := strings.Cut(pair, "=")
			uk, _ := url.QueryUnescape(k)
			uv, _ := url.QueryUnescape(v)
			switch {
			case strings.Contains(pair, placeholder) && !strings.Contains(v, placeholder),
				strings.Contains(uk, placeholder) && !strings.Contains(uv, placeholder):
				out = append(out, "a query parameter's name")
			case strings.Contains(uv, placeholder) || strings.Contains(v, placeholder):
				out = append(out, "the query parameter "+strconv.Quote(uk)) // the sandbox's text, quoted
			}
		}
	}
	if strings.Contains(r.Host, placeholder) {
		out = append(out, "the request's host")
	}
	return out
}

// basicCredential is the decoded user:password of an Authorization
// header's Basic credential, "" for any other header or scheme.
func basicCredential(key, value string) string {
	scheme, cred, ok := strings.Cut(value, " ")
	if key != "Authorization" || !ok || !strings.EqualFold(scheme, "Basic") {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return ""
	}
	return string(b)
}

// write puts s's value in place of its placeholder where s may go.
func (s Secret) write(r *http.Request) {
	if s.Query != "" {
		pairs := strings.Split(r.URL.RawQuery, "&")
		for i, pair := range pairs {
			k, v, _ := strings.Cut(pair, "=")
			if uk, _ := url.QueryUnescape(k); uk == s.Query {
				uv, _ := url.QueryUnescape(v)
				pairs[i] = k + "=" + url.QueryEscape(strings.ReplaceAll(uv, s.Placeholder, s.Value))
			}
		}
		r.URL.RawQuery = strings.Join(pairs, "&")
		return
	}
	k := s.header()
	for i, v := range r.Header[k] {
		if cred := basicCredential(k, v); strings.Contains(cred, s.Placeholder) {
			v = "Basic " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(cred, s.Placeholder, s.Value)))
		}
		r.Header[k][i] = strings.ReplaceAll(v, s.Placeholder, s.Value)
	}
}

func loopback(host string) bool {
	a, err := netip.ParseAddr(host)
	return host == HostName || err == nil && a.IsLoopback()
}

// foreignName is the name a request inside a connection to host:port (of
// defaultPort's scheme) gives instead: its Host (or absolute URL), and
// the TLS connection's server name when it has one; "" when they are
// host's own.
func foreignName(r *http.Request, sni, host string, port, defaultPort uint16) string {
	h, p, err := splitTarget(r.Host, defaultPort)
	switch {
	case err != nil || h == "":
		return "no host"
	case h != host || p != port:
		return h
	case sni != "" && strings.TrimSuffix(strings.ToLower(sni), ".") != host:
		return sni
	}
	if _, err := netip.ParseAddr(host); err != nil && defaultPort == 443 && sni == "" {
		return "a TLS connection that named no server"
	}
	return ""
}

// prepare makes an answer fit to hand a sandbox that holds secrets: an
// upgrade is refused; a compressed body is decoded (or refused when the
// encoding is one the proxy cannot read); trailers are dropped; headers
// and body pass the scrubber.
func (g *Gate) prepare(resp *http.Response, secrets []Secret, scrubber *redact.Replacer) error {
	if len(secrets) == 0 {
		return nil
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fault("the server switched protocols, and this sandbox holds secrets: an upgraded connection could carry one back unscrubbed")
	}
	for k, vs := range resp.Header {
		if scrubber.String(k) != k { // a name that holds a value
			delete(resp.Header, k)
			continue
		}
		for i, v := range vs {
			resp.Header[k][i] = scrubber.String(v)
		}
	}
	resp.Header.Del("Trailer")
	resp.Trailer = nil
	// The reason phrase is the server's text: the proxy writes its own.
	resp.Status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if resp.Body == nil || resp.Body == http.NoBody || resp.ContentLength == 0 {
		resp.Header.Del("Content-Encoding")
		return nil
	}
	body, err := decoded(resp)
	if err != nil {
		return err
	}
	if body != resp.Body {
		// What a small answer inflates to counts against the budget too.
		body = &budgeted{r: body, g: g}
	}
	resp.Body = &dropTrailers{src: resp.Body, read: scrubber.Reader(body), resp: resp}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return nil
}

// dropTrailers ends a body; once it is read, the trailers the server
// sent after it are forgotten, so that no one relays them.
type dropTrailers struct {
	src  interface{ Close() error }
	read interface{ Read([]byte) (int, error) }
	resp *http.Response
}

func (d *dropTrailers) Read(p []byte) (int, error) {
	n, err := d.read.Read(p)
	if err != nil {
		d.resp.Trailer = nil
	}
	return n, err
}

func (d *dropTrailers) Close() error { return d.src.Close() }

// writeBundle writes the sandbox's CA bundle: the operator's bundle, then
// the sandbox's own authority.
func (p *Proxy) writeBundle(dir string, a *authority) error {
	var b bytes.Buffer
	if p.opts.CAFile != "" {
		data, err := os.ReadFile(p.opts.CAFile)
		if err != nil {
			return err
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	b.Write(a.pem)
	tmp := filepath.Join(dir, Bundle+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, Bundle))
}
