package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

const value = "tok-9f2c41d7e0a85b36/+x"

// encodings are the ways a server or a program may hand a value on.
func encodings(v string, prefix string) map[string]string {
	in := prefix + v + "!"
	return map[string]string{
		"raw":          in,
		"base64":       base64.StdEncoding.EncodeToString([]byte(in)),
		"base64url":    base64.URLEncoding.EncodeToString([]byte(in)),
		"base64 raw":   base64.RawStdEncoding.EncodeToString([]byte(in)),
		"hex":          hex.EncodeToString([]byte(in)),
		"HEX":          strings.ToUpper(hex.EncodeToString([]byte(in))),
		"query escape": url.QueryEscape(in),
		"path escape":  url.PathEscape(in),
		"json":         `{"a":"` + strings.ReplaceAll(in, "/", `\/`) + `"}`,
	}
}

// Every form of a value, at every alignment, is replaced; text without
// one passes unchanged.
func TestFormsAreReplaced(t *testing.T) {
	r := New(Secret{Value: value, Replacement: "[secret svc]"})
	for _, prefix := range []string{"", "a", "ab", "Authorization: Basic user:"} {
		for name, text := range encodings(value, prefix) {
			got := r.String(text)
			if leaks(got) {
				t.Errorf("%s after %q: %q still gives the value away", name, prefix, got)
			}
		}
	}
	plain := "nothing secret here, just text 1234567890"
	if got := r.String(plain); got != plain {
		t.Errorf("plain text changed: %q", got)
	}
	if got := r.String("x" + value + "y"); got != "x[secret svc]y" {
		t.Errorf("raw: %q", got)
	}
	var none *Replacer
	if none.String(value) != value || New().Active() || New(Secret{}).Active() {
		t.Error("an empty replacer replaces")
	}
}

// leaks reports whether text holds the value in any encoding: decoded
// every way, the value is not in it.
func leaks(text string) bool {
	if strings.Contains(text, value) {
		return true
	}
	for _, form := range Forms(value)[1:] {
		if strings.Contains(text, form) {
			return true
		}
	}
	return false
}

// A stream is scrubbed whatever its reads split, and keeps what is not a
// value byte for byte.
func TestReaderAcrossReads(t *testing.T) {
	r := New(Secret{Value: value, Replacement: "PH"}, Secret{Value: "other-secret-value", Replacement: "PH2"})
	text := strings.Repeat("abc "+value+" def other-secret-value ", 50) + "tail" + value[:5]
	want := strings.NewReplacer(value, "PH", "other-secret-value", "PH2").Replace(text)
	for _, wrap := range []func(io.Reader) io.Reader{iotest.OneByteReader, iotest.HalfReader, iotest.DataErrReader, func(r io.Reader) io.Reader { return r }} {
		got, err := io.ReadAll(r.Reader(wrap(strings.NewReader(text))))
		if err != nil || string(got) != want {
			t.Fatalf("err %v\ngot  %q\nwant %q", err, got, want)
		}
	}
}

// Handler scrubs every body written through it and keeps the writer's
// flushing.
func TestHandler(t *testing.T) {
	r := New(Secret{Value: value, Replacement: "[secret svc]"})
	h := r.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "one "+value)
		http.NewResponseController(w).Flush()
		io.WriteString(w, " two "+base64.StdEncoding.EncodeToString([]byte(value)))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if leaks(rec.Body.String()) || !rec.Flushed || !strings.HasPrefix(rec.Body.String(), "one [secret svc] two ") {
		t.Errorf("%q (flushed %v)", rec.Body.String(), rec.Flushed)
	}
}

// FuzzReplacer: whatever the text around a value, the reads that split
// it and the encoding it is in, nothing that gives it away comes out,
// and text without a value comes out as it went in.
func FuzzReplacer(f *testing.F) {
	f.Add([]byte("hello"), []byte("world"), uint8(0), uint8(3))
	f.Add([]byte(""), []byte("x"), uint8(4), uint8(1))
	f.Add([]byte("Bearer "), []byte("\r\n"), uint8(1), uint8(7))
	f.Fuzz(func(t *testing.T, before, after []byte, encoding, split uint8) {
		r := New(Secret{Value: value, Replacement: "<redacted>"})
		names := []string{"raw", "base64", "base64url", "base64 raw", "hex", "HEX", "query escape", "path escape", "json"}
		text := encodings(value, string(before))[names[int(encoding)%len(names)]] + string(after)
		got, err := io.ReadAll(r.Reader(&chunked{data: []byte(text), size: int(split)%13 + 1}))
		if err != nil {
			t.Fatal(err)
		}
		if leaks(string(got)) {
			t.Fatalf("%q gives the value away", got)
		}
		clean := append(append([]byte{}, before...), after...)
		if !leaks(string(clean)) {
			if out, _ := io.ReadAll(r.Reader(&chunked{data: clean, size: int(split)%13 + 1})); !bytes.Equal(out, clean) {
				t.Fatalf("text without the value changed: %q -> %q", clean, out)
			}
		}
	})
}

// chunked reads data size bytes at a time.
type chunked struct {
	data []byte
	size int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.data[:min(c.size, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

// What servers do to a value besides echoing it whole: cut it short,
// escape some of its bytes as their framework does, wrap its base64 as
// MIME does; and a stream that writes it in two pieces. None of it gives
// the value's bytes back.
func TestWhatServersDoToAValue(t *testing.T) {
	const v = "wJalrXUtnFEMI/K7MDENG+bPxRfiCY/EXAMPLEKEY=="
	r := New(Secret{Value: v, Replacement: "[x]"})
	lower := strings.NewReplacer("%2F", "%2f", "%2B", "%2b", "%3D", "%3d")
	b64 := base64.StdEncoding.EncodeToString([]byte("Authorization: Bearer " + v))
	mime := b64[:60] + "\r\n" + b64[60:]
	for name, text := range map[string]string{
		"cut short":            "invalid credential: Bearer " + v[:30],
		"cut at the front":     "...: " + v[12:],
		"lower-case %xx":       lower.Replace(url.QueryEscape(v)),
		"python's quote":       strings.ReplaceAll(url.QueryEscape(v), "%2F", "/"),
		"gson":                 strings.ReplaceAll(v, "=", `\u003d`),
		"html/template":        strings.ReplaceAll(v, "+", "&#43;"),
		"PHP's json_encode":    strings.ReplaceAll(v, "/", `\/`),
		"base64 with its ends": b64,
		"MIME base64":          mime,
	} {
		got := r.String(text)
		if !strings.Contains(got, "[x]") {
			t.Errorf("%s: %q passed unchanged", name, got)
		}
		for _, part := range []string{v[:MinRun], v[len(v)-MinRun:], v[15 : 15+MinRun]} {
			if strings.Contains(got, part) {
				t.Errorf("%s: %q still holds %q", name, got, part)
			}
		}
		if name == "MIME base64" || name == "base64 with its ends" {
			dec, _ := base64.StdEncoding.DecodeString(strings.NewReplacer("\r\n", "", "[x]", "").Replace(got))
			if strings.Contains(string(dec), v[:4]) || strings.Contains(string(dec), v[len(v)-4:]) {
				t.Errorf("%s: decodes to %q", name, dec)
			}
		}
	}
	// A stream of writes: the value in two pieces, and one that stops
	// mid-value, which the next write completes.
	rec := httptest.NewRecorder()
	r.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "a "+v[:10])
		io.WriteString(w, v[10:]+" b "+v[:20])
		io.WriteString(w, v[20:])
	})).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if got := rec.Body.String(); got != "a [x] b [x]" {
		t.Errorf("a value written in pieces: %q", got)
	}
}
