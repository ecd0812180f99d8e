package egress

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

// intercept serves, on a sandbox's CONNECT to host:port that secrets are
// written for, the HTTPS requests inside it one by one: TLS with the
// sandbox under the authority's certificate for host, TLS with the host
// (up) as any client, each request's placeholders replaced by values and
// each answer prepared for the sandbox. Only HTTP/1.1 is offered on
// either side; interim (1xx) answers are not passed on.
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
	fromSandbox := bufio.NewReader(inner)
	// TLS with the server begins once a request is let through.
	var server *tls.Conn
	var fromServer *bufio.Reader
	for {
		req, err := http.ReadRequest(fromSandbox)
		if err != nil {
			return // the sandbox is done, or spoke no HTTP/1.1
		}
		refused := ""
		if req.ProtoMajor != 1 {
			refused = "only HTTP/1.1 is spoken here"
		} else if name := foreignName(req, sni, host, port, 443); name != "" {
			refused = fmt.Sprintf("a request for %s inside a connection to %s; the connection's requests go to its host only", name, host)
		} else {
			refused = g.writeSecrets(req, exchange{host: host, port: port})
		}
		if refused != "" {
			rec.refuse(refused)
			answer(inner, http.StatusForbidden, "sandboxd egress: "+refused)
			return
		}
		if server == nil {
			// For an address, Go checks the certificate's IP addresses.
			server = tls.Client(up, &tls.Config{ServerName: host, RootCAs: g.p.opts.Roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
			if err := server.Handshake(); err != nil {
				rec.fail("TLS with " + host + ": " + tlsFault(err))
				answer(inner, http.StatusBadGateway, "sandboxd egress: TLS with "+host+": "+tlsFault(err))
				return
			}
			fromServer = bufio.NewReader(server)
		}
		removeHopHeaders(req.Header)
		if err := req.Write(server); err != nil {
			rec.fail(upstreamFault(err, rec))
			return
		}
		resp, err := readFinal(fromServer, req)
		if err == nil {
			err = g.prepare(resp)
		}
		if err != nil {
			msg := upstreamFault(err, rec)
			rec.fail(msg)
			answer(inner, http.StatusBadGateway, "sandboxd egress: "+host+": "+msg)
			return
		}
		err = resp.Write(inner)
		resp.Body.Close()
		if err != nil || resp.Close || req.Close {
			return
		}
	}
}

// readFinal reads the server's answer to req, passing over interim (1xx)
// answers but a switch of protocols.
func readFinal(r *bufio.Reader, req *http.Request) (*http.Response, error) {
	for range 16 {
		resp, err := http.ReadResponse(r, req)
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, err
		}
		resp.Body.Close()
	}
	return nil, fault("the server sent interim answers without end")
}

// hopHeaders are a connection's own, never relayed.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// decoded is resp's body uncompressed, its Content-Encoding gone: gzip and
// deflate are read; any other encoding is refused, since the scrubber
// could not read it.
func decoded(resp *http.Response) (io.Reader, error) {
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	resp.Header.Del("Content-Encoding")
	var (
		r   io.Reader
		err error
	)
	switch enc {
	case "", "identity":
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

// answer writes a plain-text answer of the proxy's own.
func answer(w io.Writer, code int, msg string) {
	resp := &http.Response{StatusCode: code, ProtoMajor: 1, ProtoMinor: 1, Close: true,
		Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, ContentLength: int64(len(msg) + 1),
		Body: io.NopCloser(strings.NewReader(msg + "\n"))}
	_ = resp.Write(w)
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
