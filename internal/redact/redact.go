// Package redact is the last line of defence for secret values: it
// replaces every form a value may take in text (as it is, base64 at each
// alignment, hex, URL- and JSON-escaped) with a stand-in, in strings,
// byte slices and streams (a value split across reads included), and
// wraps the writers sandboxd answers and logs through.
//
// The egress proxy keeps a secret's value out of the sandbox by design;
// this package is what catches a value that some path nobody thought of
// would still carry: an answer the proxy relays, a record, a log line, a
// metric label, an API body.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Secret is a value and what stands in its place.
type Secret struct {
	Value       string
	Replacement string
}

// minEncoded is the shortest derived form (base64 of part of a value)
// looked for: shorter ones would match ordinary text.
const minEncoded = 8

// Replacer replaces secret values. The zero value and nil replace
// nothing.
type Replacer struct {
	patterns []pattern
	longest  int
}

type pattern struct {
	find, replace []byte
}

// New returns a Replacer for secrets; values that are empty are left out.
func New(secrets ...Secret) *Replacer {
	r := &Replacer{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if s.Value == "" {
			continue
		}
		for _, form := range Forms(s.Value) {
			if seen[form] {
				continue
			}
			seen[form] = true
			r.patterns = append(r.patterns, pattern{find: []byte(form), replace: []byte(s.Replacement)})
			r.longest = max(r.longest, len(form))
		}
	}
	return r
}

// Forms are the texts that give value away: the value, its hex (both
// cases), its URL and JSON escapes where they differ, and, for each of
// the three ways base64 may align with it, the run of base64 characters
// (standard and URL alphabets) that only its bytes decide. A derived form
// shorter than minEncoded is left out; the value itself never is.
func Forms(value string) []string {
	forms := []string{value}
	add := func(f string) {
		if len(f) >= minEncoded && f != value {
			forms = append(forms, f)
		}
	}
	add(hex.EncodeToString([]byte(value)))
	add(strings.ToUpper(hex.EncodeToString([]byte(value))))
	add(url.QueryEscape(value))
	add(url.PathEscape(value))
	for _, escapeHTML := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		_ = enc.Encode(value)
		quoted := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`)
		add(quoted)
		add(strings.ReplaceAll(quoted, "/", `\/`)) // as PHP and others escape it
	}
	for skip := 0; skip < 3 && skip < len(value); skip++ {
		whole := value[skip:]
		whole = whole[:len(whole)/3*3]
		std := base64.StdEncoding.EncodeToString([]byte(whole))
		add(std)
		add(strings.NewReplacer("+", "-", "/", "_").Replace(std))
	}
	return forms
}

// Active reports whether r replaces anything.
func (r *Replacer) Active() bool { return r != nil && len(r.patterns) > 0 }

// Bytes returns b with every form of every value replaced; b itself when
// none is in it.
func (r *Replacer) Bytes(b []byte) []byte {
	out, _ := r.replace(b, true)
	return out
}

// String is Bytes for a string.
func (r *Replacer) String(s string) string {
	if !r.Active() {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// replace replaces what is in data. Unless final, it holds back the tail
// that could begin a form the next data completes, and returns it as
// rest.
func (r *Replacer) replace(data []byte, final bool) (out, rest []byte) {
	if !r.Active() {
		return data, nil
	}
	var b []byte
	i := 0
	for {
		at, p := r.next(data, i)
		if p == nil {
			break
		}
		if b == nil {
			b = make([]byte, 0, len(data))
		}
		b = append(b, data[i:at]...)
		b = append(b, p.replace...)
		i = at + len(p.find)
	}
	end := len(data)
	if !final {
		// A form may begin in the last longest-1 bytes and end in the
		// next read.
		end = max(i, len(data)-(r.longest-1))
		rest = data[end:]
	}
	if b == nil && end == len(data) {
		return data, rest
	}
	return append(b, data[i:end]...), rest
}

// next finds the leftmost form in data from i (the longest where two
// start together).
func (r *Replacer) next(data []byte, i int) (int, *pattern) {
	best, bestAt := (*pattern)(nil), -1
	for k := range r.patterns {
		p := &r.patterns[k]
		at := bytes.Index(data[i:], p.find)
		if at < 0 {
			continue
		}
		at += i
		if bestAt < 0 || at < bestAt || at == bestAt && len(p.find) > len(best.find) {
			best, bestAt = p, at
		}
	}
	return bestAt, best
}

// Reader returns src with every form replaced, also across the reads that
// split one.
func (r *Replacer) Reader(src io.Reader) io.Reader {
	if !r.Active() {
		return src
	}
	return &reader{src: src, r: r}
}

type reader struct {
	src   io.Reader
	r     *Replacer
	carry []byte // read but not yet passed on: it may begin a form
	out   []byte // passed on next
	err   error
	buf   []byte
}

func (s *reader) Read(p []byte) (int, error) {
	for len(s.out) == 0 && s.err == nil {
		if s.buf == nil {
			s.buf = make([]byte, 32<<10)
		}
		n, err := s.src.Read(s.buf)
		s.err = err
		data := append(s.carry, s.buf[:n]...)
		out, rest := s.r.replace(data, err != nil)
		s.out, s.carry = append([]byte(nil), out...), append([]byte(nil), rest...)
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	if len(s.out) == 0 && s.err != nil {
		return n, s.err
	}
	return n, nil
}

// Writer returns w with every form replaced in each Write on its own (a
// log line, an answer's body written at once). Writes report len(p) when
// the replaced bytes were all written.
func (r *Replacer) Writer(w io.Writer) io.Writer {
	if !r.Active() {
		return w
	}
	return &writer{w: w, r: r}
}

type writer struct {
	w io.Writer
	r *Replacer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Handler serves next with every answer's headers and body replaced (each
// write on its own). A protocol upgrade passes untouched: its bytes are a
// terminal's or a forwarded port's, not an answer of sandboxd's.
func (r *Replacer) Handler(next http.Handler) http.Handler {
	if !r.Active() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, req)
			return
		}
		next.ServeHTTP(&responseWriter{ResponseWriter: w, r: r}, req)
	})
}

type responseWriter struct {
	http.ResponseWriter
	r           *Replacer
	wroteHeader bool
}

func (w *responseWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 {
		w.wroteHeader = true
		h := w.Header()
		for k, vs := range h {
			for i, v := range vs {
				h[k][i] = w.r.String(v)
			}
		}
		h.Del("Content-Length") // a replacement may change it
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if _, err := w.ResponseWriter.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *responseWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
