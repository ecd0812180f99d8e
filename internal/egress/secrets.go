package egress

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// Secrets never enter a sandbox. A sandbox that asked for one holds a
// placeholder in its environment; the proxy writes the value in its place
// into the headers of requests to the secret's hosts, and nowhere else:
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
// A request that carries a placeholder anywhere else (another host, or
// in the clear) is refused and recorded. What comes back is scrubbed: a
// server that echoes the value shows the sandbox the placeholder.

// Secret is a credential and where it may go.
type Secret struct {
	Name        string
	Value       string
	Hosts       List   // the hosts (and ports) it is written for
	Placeholder string // what the sandbox holds instead
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
// on; nil, none.
func (g *Gate) SetSecrets(secrets []Secret) {
	g.mu.Lock()
	g.secrets = secrets
	g.mu.Unlock()
}

func (g *Gate) secretList() []Secret {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.secrets
}

// secretsFor are the secrets written into requests to host:port.
func (g *Gate) secretsFor(host string, port uint16) []Secret {
	var out []Secret
	for _, s := range g.secretList() {
		if s.Hosts.Entry(host, port) != "" {
			out = append(out, s)
		}
	}
	return out
}

// writeSecrets puts each placeholder's value into r's headers, for a
// request to host:port; inClear says it would travel unencrypted. It
// says why r is refused: a placeholder of a secret that may not go there
// (in a header or the URL), or one sent in the clear beyond the host's
// loopback.
func (g *Gate) writeSecrets(r *http.Request, host string, port uint16, inClear bool) string {
	target := r.URL.String()
	for _, s := range g.secretList() {
		inURL := strings.Contains(target, s.Placeholder)
		inHeader := false
		for _, vs := range r.Header {
			for _, v := range vs {
				inHeader = inHeader || strings.Contains(v, s.Placeholder)
			}
		}
		if !inURL && !inHeader {
			continue
		}
		switch {
		case s.Hosts.Entry(host, port) == "":
			return fmt.Sprintf("the request carries secret %s's placeholder, and %s port %d is not among its hosts (%s)",
				s.Name, host, port, strings.Join(s.Hosts.Strings(), ", "))
		case inURL:
			return fmt.Sprintf("secret %s's placeholder is in the URL; a secret goes in a header only", s.Name)
		case inClear && !loopback(host):
			return fmt.Sprintf("secret %s would go to %s in the clear; use https", s.Name, host)
		}
		for k, vs := range r.Header {
			for i, v := range vs {
				r.Header[k][i] = strings.ReplaceAll(v, s.Placeholder, s.Value)
			}
		}
	}
	return ""
}

func loopback(host string) bool {
	a, err := netip.ParseAddr(host)
	return host == HostName || err == nil && a.IsLoopback()
}

// scrub replaces the secrets' values with their placeholders in an
// answer's headers and body (which then has no length: it is chunked).
func scrub(resp *http.Response, secrets []Secret) {
	if len(secrets) == 0 {
		return
	}
	for k, vs := range resp.Header {
		for i, v := range vs {
			for _, s := range secrets {
				v = strings.ReplaceAll(v, s.Value, s.Placeholder)
			}
			resp.Header[k][i] = v
		}
	}
	if resp.Body != nil && resp.Body != http.NoBody && resp.ContentLength != 0 {
		resp.Body = &scrubber{src: resp.Body, secrets: secrets}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
}

// scrubber is a body with every secret value replaced by its placeholder,
// also across the reads that split one.
type scrubber struct {
	src     io.ReadCloser
	secrets []Secret
	carry   []byte // read but not yet passed on: it may begin a value
	out     []byte // passed on next
	err     error
}

func (s *scrubber) Read(p []byte) (int, error) {
	for len(s.out) == 0 && s.err == nil {
		buf := make([]byte, 32<<10)
		n, err := s.src.Read(buf)
		s.err = err
		s.out, s.carry = s.replace(append(s.carry, buf[:n]...), err != nil)
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	if len(s.out) == 0 && s.err != nil {
		return n, s.err
	}
	return n, nil
}

// replace passes data on with the values replaced; unless final, it keeps
// back the tail that could begin a value the next read completes.
func (s *scrubber) replace(data []byte, final bool) (out, rest []byte) {
	longest := 0
	for _, sec := range s.secrets {
		longest = max(longest, len(sec.Value))
	}
	limit := len(data)
	if !final {
		limit -= longest - 1
	}
	var b bytes.Buffer
	i := 0
next:
	for i < len(data) {
		for _, sec := range s.secrets {
			if sec.Value != "" && bytes.HasPrefix(data[i:], []byte(sec.Value)) {
				b.WriteString(sec.Placeholder)
				i += len(sec.Value)
				continue next
			}
		}
		if i >= limit {
			break
		}
		b.WriteByte(data[i])
		i++
	}
	return b.Bytes(), append([]byte(nil), data[i:]...)
}

func (s *scrubber) Close() error { return s.src.Close() }

// intercept serves, on a sandbox's CONNECT to host:port that secrets are
// written for, the HTTPS requests inside it one by one: TLS with the
// sandbox under the authority's certificate for host, TLS with the host
// (up) as any client, each request's placeholders replaced by values and
// each answer scrubbed. Only HTTP/1.1 is offered on either side.
func (g *Gate) intercept(client, up net.Conn, host string, port uint16, rec *record) {
	cert, err := g.ca.leaf(host)
	if err != nil {
		rec.fail("minting a certificate: " + err.Error())
		return
	}
	inner := tls.Server(client, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	// For an address, Go checks the certificate's IP addresses.
	server := tls.Client(up, &tls.Config{ServerName: host, RootCAs: g.p.opts.Roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	if err := server.Handshake(); err != nil {
		rec.fail("TLS with " + host + ": " + err.Error())
		return
	}
	fromSandbox, fromServer := bufio.NewReader(inner), bufio.NewReader(server)
	for {
		req, err := http.ReadRequest(fromSandbox)
		if err != nil {
			return // the sandbox is done, or spoke no HTTP/1.1
		}
		if why := g.writeSecrets(req, host, port, false); why != "" {
			rec.fail(why)
			answer(inner, http.StatusForbidden, "sandboxd egress: "+why)
			return
		}
		req.Header.Del("Proxy-Connection")
		if err := req.Write(server); err != nil {
			rec.fail(err.Error())
			return
		}
		resp, err := http.ReadResponse(fromServer, req)
		if err != nil {
			rec.fail("reading " + host + "'s answer: " + err.Error())
			answer(inner, http.StatusBadGateway, "sandboxd egress: "+host+" gave no answer")
			return
		}
		scrub(resp, g.secretList())
		err = resp.Write(inner)
		resp.Body.Close()
		if err != nil || resp.Close || req.Close {
			return
		}
	}
}

// answer writes a plain-text answer of the proxy's own.
func answer(w io.Writer, code int, msg string) {
	resp := &http.Response{StatusCode: code, ProtoMajor: 1, ProtoMinor: 1, Close: true,
		Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, ContentLength: int64(len(msg) + 1),
		Body: io.NopCloser(strings.NewReader(msg + "\n"))}
	_ = resp.Write(w)
}

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
