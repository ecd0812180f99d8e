package egress

import (
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxd/sandboxd/internal/units"
)

// intercept serves, on a sandbox's CONNECT to host:port that secrets are
// written for, the HTTPS requests inside it: TLS with the sandbox under
// the authority's certificate for host, then an HTTP/1.1 server of its
// own (bounded headers, timeouts, keep-alive as the client asks) whose
// requests go to the host through the reverse proxy every forwarded
// request takes, over TLS with the host (up first, then new connections
// as the host closes them), each request's placeholders replaced by
// values and each answer prepared for the sandbox.
func (g *Gate) intercept(client, up net.Conn, host string, port uint16, rec *record) {
	cert, err := g.ca.leaf(host)
	if err != nil {
		rec.fail("minting a certificate: " + err.Error())
		return
	}
	inner := tls.Server(client, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	_ = inner.SetDeadline(time.Now().Add(g.limits.ConnectTimeout))
	if err := inner.Handshake(); err != nil {
		rec.fail("the sandbox's TLS handshake failed")
		return
	}
	_ = inner.SetDeadline(time.Time{})
	sni := inner.ConnectionState().ServerName
	var mu sync.Mutex
	first := up
	transport := g.p.newTransport()
	transport.DialTLSContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		mu.Lock()
		c := first
		first = nil
		mu.Unlock()
		if c == nil {
			var err error
			if c, err = g.connect(ctx, rec); err != nil {
				return nil, err
			}
		}
		// For an address, Go checks the certificate's IP addresses.
		tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: g.p.opts.Roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fault("TLS with " + host + ": " + tlsFault(err))
		}
		return tc, nil
	}
	defer func() {
		transport.CloseIdleConnections()
		mu.Lock()
		if first != nil {
			first.Close()
		}
		mu.Unlock()
	}()
	srv := innerServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secrets, scrubber := g.secretList()
		refused := ""
		if name := foreignName(r, sni, host, port, 443); name != "" {
			refused = fmt.Sprintf("a request for %s inside a connection to %s; the connection's requests go to its host only", strconv.Quote(name), host)
		} else {
			refused = writeSecrets(r, exchange{host: host, port: port}, secrets)
		}
		if refused != "" {
			rec.refuse(refused)
			refuse(w, http.StatusForbidden, "sandboxd egress: "+refused)
			return
		}
		r.URL.Scheme, r.URL.Host = "https", net.JoinHostPort(host, strconv.Itoa(int(port)))
		g.reverseProxy(rec, transport, secrets, scrubber).ServeHTTP(finalOnly{w}, r)
	}))
	if !g.track(srvCloser{srv}) || !g.intercepting(srv, true) {
		return
	}
	defer g.intercepting(srv, false)
	defer g.untrack(srvCloser{srv})
	done := make(chan struct{})
	_ = srv.Serve(newOneConn(&closeNotify{Conn: inner, done: done}, done))
}

// innerServer serves the requests of one intercepted connection, bounded
// as a gate's own server is.
func innerServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

// srvCloser closes an intercepted connection's server with its gate.
type srvCloser struct{ *http.Server }

func (s srvCloser) Close() error { return s.Server.Close() }

// oneConn is a listener of one connection: Accept gives it once, then
// waits until it (done) or the listener is closed.
type oneConn struct {
	c          net.Conn
	done       chan struct{}
	once       sync.Once
	closed     chan struct{}
	closedOnce sync.Once
}

func newOneConn(c net.Conn, done chan struct{}) *oneConn {
	return &oneConn{c: c, done: done, closed: make(chan struct{})}
}

func (l *oneConn) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	select {
	case <-l.done:
	case <-l.closed:
	}
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.closedOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return l.c.LocalAddr() }

// closeNotify is a connection that says when it is closed.
type closeNotify struct {
	net.Conn
	done chan struct{}
	once sync.Once
}

func (c *closeNotify) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// decoded is resp's body uncompressed, its Content-Encoding gone: gzip and
// deflate are read; any other encoding is refused, since the scrubber
// could not read it.
func decoded(resp *http.Response) (io.Reader, error) {
	var codings []string // every line, every comma-separated coding
	for _, line := range resp.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(line, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	resp.Header.Del("Content-Encoding")
	if len(codings) > 1 {
		return nil, fault("the server's answer is compressed more than once, and this sandbox holds secrets: the proxy reads one layer")
	}
	var (
		r   io.Reader
		err error
	)
	switch strings.Join(codings, "") {
	case "":
		return resp.Body, nil
	case "gzip", "x-gzip":
		r, err = gzip.NewReader(resp.Body)
	case "deflate":
		r, err = zlib.NewReader(resp.Body)
	default:
		return nil, fault("the server's answer is compressed in an encoding the proxy cannot read, and this sandbox holds secrets")
	}
	if err != nil {
		return nil, fault("the server's answer is not in the compression it names")
	}
	return r, nil
}

// budgeted counts what it reads against its gate's execution budget.
type budgeted struct {
	r io.Reader
	g *Gate
}

func (b *budgeted) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.g.spent.Add(int64(n)) > b.g.limits.MaxBytes {
		return n, fault(fmt.Sprintf("closed: the answer inflates past the execution's limit of %s", units.ByteSize(b.g.limits.MaxBytes)))
	}
	return n, err
}

// fault is an error in the proxy's own words, never the server's: it
// may be shown to the sandbox and recorded as it is.
type fault string

func (f fault) Error() string { return string(f) }

// upstreamFault words an error met while talking to a server. Nothing the
// server sent reaches the words (Go's errors quote a malformed answer,
// and certificates name what their issuer chose): the error is
// classified into a fixed text, with the bytes received so far.
func upstreamFault(err error, rec *record) string {
	var own fault
	if errors.As(err, &own) {
		return string(own)
	}
	if errors.Is(err, errBudget) {
		return "closed: over the execution's limit"
	}
	var msg string
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		msg = "the server did not answer in time"
	case errors.Is(err, syscall.ECONNRESET):
		msg = "the server reset the connection"
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = "the server refused the connection"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE):
		msg = "the server closed the connection"
	case isTLS(err):
		msg = "TLS with the server: " + tlsFault(err)
	default:
		msg = "the server's answer is not valid HTTP/1.1"
	}
	return fmt.Sprintf("%s (%d bytes received)", msg, rec.received.Load())
}

func isTLS(err error) bool {
	var alert tls.AlertError
	var rh tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &alert) || errors.As(err, &rh) || errors.As(err, &verify)
}

// tlsFault words a TLS handshake's failure without the certificate's
// names or the server's alert text.
func tlsFault(err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		alert    tls.AlertError
		rh       tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknown):
		return "its certificate is not signed by an authority sandboxd trusts (network.ca_file)"
	case errors.As(err, &hostname):
		return "its certificate is not for this host"
	case errors.As(err, &invalid):
		return "its certificate is expired, not yet valid or not for a server"
	case errors.As(err, &alert):
		return fmt.Sprintf("the server refused the handshake (TLS alert %d)", uint8(alert))
	case errors.As(err, &rh):
		return "the server does not speak TLS"
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return "the server closed the connection during the handshake"
	}
	return "the handshake failed"
}
