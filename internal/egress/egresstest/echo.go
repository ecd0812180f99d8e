// Package egresstest holds fixtures for tests of the egress proxy, from
// its unit tests to a sandbox's: a service that reflects the credentials
// it is sent in every way a real one might, and the values it is tested
// with; and a SOCKS5 server that records where it connected.
package egresstest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/internal/redact"
)

// The values tests give the proxy, one per place a secret may go: each
// must reach the Echo server only where its secret says, and come back
// in no form.
const (
	BearerValue = "tok-9f2c41d7e0a85b36-bearer" // in Authorization
	HeaderValue = "key-0a1b2c3d4e5f6071-header" // in X-Api-Key
	QueryValue  = "qv-77e1c2a9b0d3f4e5-query"   // in the query parameter api_key
)

// Echo is a service that reflects the credentials it is sent in every
// way a real one might (a debug route, an error page, a log it serves
// back), by path, and notes what it got. Its paths:
//
//	/check                      "authorized" when a value came
//	/echo                       in a header, a cookie and the body
//	/gzip, /gzip-asked          gzip'd always, or when asked
//	/br                         in an encoding a proxy cannot read
//	/trailer, /trailer-unannounced  in a trailer
//	/early                      in a 103 Early Hints header
//	/upgrade                    after 101 Switching Protocols
//	/range                      in a body that honours Range
//	/reason                     as the status line's reason phrase
//	/malformed, /badheader      as an invalid status line, or header line
//	/encoded                    base64, hex and URL-escaped
//	/redirect                   in a Location
type Echo struct {
	mu       sync.Mutex
	received []string // credentials as the server got them, one per request
	protos   []string
}

// Got is what each request brought, in order: "Authorization|X-Api-Key|api_key".
func (e *Echo) Got() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.received...)
}

// Protos are the protocols the requests came in.
func (e *Echo) Protos() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.protos...)
}

// Paths are Echo's routes that hand a credential back.
var Paths = []string{"/echo", "/gzip", "/gzip-asked", "/br", "/trailer", "/trailer-unannounced", "/early", "/upgrade", "/range",
	"/reason", "/malformed", "/badheader", "/encoded", "/redirect"}

// GivesAway names the form in which raw holds a value (compressed
// included), or "".
func GivesAway(raw string) string {
	for _, v := range []string{BearerValue, HeaderValue, QueryValue} {
		for _, f := range redact.Forms(v) {
			if strings.Contains(raw, f) {
				return f
			}
		}
		if i := strings.Index(raw, "\x1f\x8b"); i >= 0 {
			if zr, err := gzip.NewReader(strings.NewReader(raw[i:])); err == nil {
				if b, _ := io.ReadAll(zr); strings.Contains(string(b), v) {
					return "gzip of " + v
				}
			}
		}
	}
	return ""
}

func (e *Echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	echo := r.Header.Get("Authorization") + "|" + r.Header.Get("X-Api-Key") + "|" + r.URL.Query().Get("api_key")
	e.mu.Lock()
	e.received = append(e.received, echo)
	e.protos = append(e.protos, r.Proto)
	e.mu.Unlock()
	hijack := func(raw string) {
		c, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		buf.WriteString(raw)
		buf.Flush()
		c.Close()
	}
	gz := func() []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		io.WriteString(zw, "you sent "+echo)
		zw.Close()
		return b.Bytes()
	}
	switch r.URL.Path {
	case "/check":
		if strings.Contains(echo, BearerValue) || strings.Contains(echo, HeaderValue) || strings.Contains(echo, QueryValue) {
			io.WriteString(w, "authorized")
			return
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	case "/echo":
		w.Header().Set("X-Echo", echo)
		w.Header().Add("Set-Cookie", "seen="+echo)
		io.WriteString(w, "you sent "+echo)
	case "/gzip": // compressed whatever the client asked for
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz())
	case "/gzip-asked":
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz())
			return
		}
		io.WriteString(w, "you sent "+echo)
	case "/br": // an encoding the proxy cannot read
		w.Header().Set("Content-Encoding", "br")
		io.WriteString(w, echo)
	case "/trailer":
		w.Header().Set("Trailer", "X-Echo")
		io.WriteString(w, "body first\n")
		w.Header().Set("X-Echo", echo)
	case "/trailer-unannounced":
		io.WriteString(w, "body first\n")
		w.Header().Set(http.TrailerPrefix+"X-Echo", echo)
	case "/early":
		w.Header().Set("Link", "</style.css?"+echo+">; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	case "/upgrade":
		hijack("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n" + echo)
	case "/range":
		http.ServeContent(w, r, "x.txt", time.Time{}, strings.NewReader("padding padding "+echo))
	case "/reason":
		hijack("HTTP/1.1 200 " + echo + "\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	case "/malformed":
		hijack(echo + "\r\n\r\n")
	case "/badheader":
		hijack("HTTP/1.1 200 OK\r\n" + echo + "\r\n\r\n")
	case "/encoded":
		fmt.Fprintf(w, "%s %s %s %s", base64.StdEncoding.EncodeToString([]byte("x"+echo)), hex.EncodeToString([]byte(echo)),
			url.QueryEscape(echo), base64.URLEncoding.EncodeToString([]byte("xy"+echo)))
	case "/redirect":
		http.Redirect(w, r, "/landing?from="+url.QueryEscape(echo), http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}
