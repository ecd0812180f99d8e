// Package redact is the last line of defence for secret values: it
// replaces every form a value may take in text with a stand-in, in
// strings, byte slices and streams (a value split across reads
// included), and wraps the writers sandboxd answers and logs through.
//
// A form is: any run of MinRun or more of the value's bytes as they are
// (so an echo cut short, or quoted in part, is caught too), the whole
// value with any of its bytes escaped as URLs, JSON or HTML escape them
// (%2f, \u003d, \/, &#43;), its hex, and, for each of the three ways
// base64 may align with it, the base64 run that only its bytes decide,
// with the partial groups at either end of the run.
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
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Secret is a value and what stands in its place.
type Secret struct {
	Value       string
	Replacement string
}

// MinRun is the shortest run of a value's bytes that is replaced where it
// stands; a value shorter than that is replaced whole only.
const MinRun = 8

// minEncoded is the shortest base64 run looked for: shorter ones would
// match ordinary text.
const minEncoded = 8

// edge is how far a base64 run is widened at each end: the group that
// mixes the value's first (or last) bytes with its neighbours'.
const edge = 4

// Replacer replaces secret values. The zero value and nil replace
// nothing.
type Replacer struct {
	patterns []pattern
	// wrapped are runs of the base64 forms, for text that breaks lines
	// (MIME's base64 does, every 60 or 76 characters): looked for only
	// where data has a line break.
	wrapped []pattern
	escaped []escapedForm
	longest int
}

type kind uint8

const (
	literal   kind = iota // a whole form
	run                   // MinRun bytes of the value, widened along it
	base64Run             // widened by the partial groups at its ends
	wrapRun               // wrapRunLen characters of a base64 form, widened along it across line breaks
)

// wrapRunLen is the shortest run of a base64 form looked for across line
// breaks (12 bytes of the value).
const wrapRunLen = 16

type pattern struct {
	find, replace []byte
	kind          kind
	value         string // for a run: the value it is part of
}

// escapedForm finds a value with any of its bytes escaped (only looked
// for where data holds an escape at all).
type escapedForm struct {
	re      *regexp.Regexp
	replace []byte
}

// New returns a Replacer for secrets; values that are empty are left out.
func New(secrets ...Secret) *Replacer {
	r := &Replacer{}
	seen := map[string]bool{}
	add := func(find string, k kind, s Secret) {
		if find == "" || seen[find] {
			return
		}
		seen[find] = true
		r.patterns = append(r.patterns, pattern{find: []byte(find), replace: []byte(s.Replacement), kind: k, value: s.Value})
		r.longest = max(r.longest, len(find))
	}
	for _, s := range secrets {
		if s.Value == "" {
			continue
		}
		n := min(MinRun, len(s.Value))
		for i := 0; i+n <= len(s.Value); i++ {
			add(s.Value[i:i+n], run, s)
		}
		for _, f := range hexForms(s.Value) {
			add(f, literal, s)
		}
		for _, f := range base64Forms(s.Value) {
			add(f, base64Run, s)
			for i := 0; i+wrapRunLen <= len(f); i++ {
				r.wrapped = append(r.wrapped, pattern{find: []byte(f[i : i+wrapRunLen]), replace: []byte(s.Replacement), kind: wrapRun, value: f})
			}
		}
		r.escaped = append(r.escaped, escapedForm{re: escapedPattern(s.Value), replace: []byte(s.Replacement)})
		r.longest = max(r.longest, len(s.Value), 10*len(s.Value)) // "&#x0002B;" is the longest escape of a byte
	}
	return r
}

// Forms are texts that give value away whole, for tests to look for:
// the value, its hex, its common escapes, and its base64 runs.
func Forms(value string) []string {
	forms := append([]string{value}, hexForms(value)...)
	forms = append(forms, base64Forms(value)...)
	for _, esc := range []func(byte) string{
		func(c byte) string { return fmt.Sprintf("%%%02X", c) },
		func(c byte) string { return fmt.Sprintf("%%%02x", c) },
		func(c byte) string { return fmt.Sprintf(`\u%04x`, c) },
		func(c byte) string { return fmt.Sprintf("&#%d;", c) },
	} {
		var b strings.Builder
		for i := 0; i < len(value); i++ {
			if c := value[i]; isAlnum(c) {
				b.WriteByte(c)
			} else {
				b.WriteString(esc(c))
			}
		}
		if f := b.String(); f != value {
			forms = append(forms, f)
		}
	}
	return forms
}

func hexForms(value string) []string {
	h := hex.EncodeToString([]byte(value))
	return []string{h, strings.ToUpper(h)}
}

// base64Forms are, for each of the three ways base64 may align with
// value, the run (standard and URL alphabets) that only its bytes decide.
func base64Forms(value string) []string {
	var out []string
	for skip := 0; skip < 3 && skip < len(value); skip++ {
		whole := value[skip:]
		whole = whole[:len(whole)/3*3]
		std := base64.StdEncoding.EncodeToString([]byte(whole))
		if len(std) >= minEncoded {
			out = append(out, std, strings.NewReplacer("+", "-", "/", "_").Replace(std))
		}
	}
	return out
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// escapedPattern matches value with any of its bytes as it is or escaped
// as a URL (%2F, %2f), JSON (\u002f, \/) or HTML (&#47;, &#x2F;) would.
func escapedPattern(value string) *regexp.Regexp {
	var b strings.Builder
	for i := 0; i < len(value); i++ {
		c := value[i]
		h := fmt.Sprintf("%02x", c)
		hexCI := fmt.Sprintf("[%c%c][%c%c]", h[0], toUpper(h[0]), h[1], toUpper(h[1]))
		fmt.Fprintf(&b, `(?:%s|%%%s|\\u00%s|&#0{0,3}%d;|&#[xX]0{0,3}%s;`, regexp.QuoteMeta(string(c)), hexCI, hexCI, c, hexCI)
		if c == '/' || c == '"' || c == '\\' {
			b.WriteString(`|\\` + regexp.QuoteMeta(string(c)))
		}
		b.WriteString(")")
	}
	return regexp.MustCompile(b.String())
}

func toUpper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
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

// keep is how much of a stream's tail waits for the next read: enough
// for a form (with its widened edges) that the next read completes.
func (r *Replacer) keep() int { return r.longest - 1 + 2*edge }

// replace replaces what is in data. Unless final, it holds back the tail
// that could begin a form the next data completes, and returns it as
// rest.
func (r *Replacer) replace(data []byte, final bool) (out, rest []byte) {
	if !r.Active() {
		return data, nil
	}
	data = r.unescape(data)
	limit := len(data)
	if !final {
		limit = max(0, len(data)-r.keep())
	}
	var b []byte
	i := 0
	s := r.scan(bytes.IndexByte(data, '\n') >= 0)
	for {
		at, p := s.next(data, i)
		if p == nil {
			break
		}
		start, end, ok := p.widen(data, i, at, final)
		if !ok || !final && start >= limit {
			limit = min(limit, start)
			break
		}
		if b == nil {
			b = make([]byte, 0, len(data))
		}
		b = append(b, data[i:start]...)
		b = append(b, p.replace...)
		i = end
	}
	cut := max(i, limit)
	rest = data[cut:]
	if b == nil && cut == len(data) {
		return data, nil
	}
	return append(b, data[i:cut]...), rest
}

// unescape replaces the values written with escapes (rare, so looked for
// only where data holds an escape).
func (r *Replacer) unescape(data []byte) []byte {
	if len(r.escaped) == 0 || bytes.IndexByte(data, '%') < 0 && !bytes.Contains(data, []byte(`\`)) && !bytes.Contains(data, []byte("&#")) {
		return data
	}
	for _, e := range r.escaped {
		data = e.re.ReplaceAllLiteral(data, e.replace)
	}
	return data
}

// widen is the span a match of p at at replaces: a run goes on as long
// as data goes on with the value; a base64 run takes in the partial
// groups around it. ok is false when what decides the span is not read
// yet (not final).
func (p *pattern) widen(data []byte, from, at int, final bool) (start, end int, ok bool) {
	start, end = at, at+len(p.find)
	switch p.kind {
	case run:
		v := p.value
		o := strings.Index(v, string(p.find)) + len(p.find)
		for ; end < len(data) && o < len(v) && data[end] == v[o]; o++ {
			end++
		}
		if !final && end == len(data) && o < len(v) {
			return start, end, false // the value may go on in what comes next
		}
	case wrapRun:
		// Along the form both ways, over line breaks, then the partial
		// groups at its ends.
		f := p.value
		o := strings.Index(f, string(p.find))
		for b := o; b > 0; {
			j := skipBreakBack(data, start, from)
			if j <= from || data[j-1] != f[b-1] {
				break
			}
			start, b = j-1, b-1
		}
		o += len(p.find)
		for o < len(f) {
			j := skipBreak(data, end)
			if j >= len(data) || data[j] != f[o] {
				break
			}
			end, o = j+1, o+1
		}
		if !final && end+edge+2 > len(data) {
			return start, end, false
		}
		for n := 0; n < edge && start > from && isBase64(data[start-1]); n++ {
			start--
		}
		for n := 0; n < edge && end < len(data) && isBase64(data[end]); n++ {
			end++
		}
	case base64Run:
		if !final && end+edge > len(data) {
			return start, end, false
		}
		for n := 0; n < edge && start > from && isBase64(data[start-1]); n++ {
			start--
		}
		for n := 0; n < edge && end < len(data) && isBase64(data[end]); n++ {
			end++
		}
	}
	return start, end, true
}

// skipBreak is i past a line break ("\n" or "\r\n") at i, or i.
func skipBreak(data []byte, i int) int {
	if i < len(data) && data[i] == '\n' {
		return i + 1
	}
	if i+1 < len(data) && data[i] == '\r' && data[i+1] == '\n' {
		return i + 2
	}
	return i
}

// skipBreakBack is i before a line break that ends at i, or i; never
// before from.
func skipBreakBack(data []byte, i, from int) int {
	if i-1 >= from && data[i-1] == '\n' {
		i--
		if i-1 >= from && data[i-1] == '\r' {
			i--
		}
	}
	return i
}

func isBase64(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }

// scanner finds the patterns in one piece of data, remembering where
// each was found next, so that each is searched for once per match at
// most, not once per match of any.
type scanner struct {
	patterns []pattern
	pos      []int // -1: not in the rest of data; -2: not searched yet
}

// scan scans for the patterns, and the wrapped runs where data breaks
// lines.
func (r *Replacer) scan(lines bool) *scanner {
	s := &scanner{patterns: r.patterns}
	if lines && len(r.wrapped) > 0 {
		s.patterns = append(append([]pattern(nil), r.patterns...), r.wrapped...)
	}
	s.pos = make([]int, len(s.patterns))
	for k := range s.pos {
		s.pos[k] = -2
	}
	return s
}

// next finds the leftmost pattern in data from i (the longest where two
// start together).
func (s *scanner) next(data []byte, i int) (int, *pattern) {
	var best *pattern
	bestAt := -1
	for k := range s.patterns {
		if s.pos[k] == -1 {
			continue
		}
		p := &s.patterns[k]
		if s.pos[k] < i {
			at := bytes.Index(data[i:], p.find)
			if at < 0 {
				s.pos[k] = -1
				continue
			}
			s.pos[k] = i + at
		}
		at := s.pos[k]
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
// log line). Writes report len(p) when the replaced bytes were all
// written.
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

// held is where data's tail begins that a later write could make part of
// a form (len(data) when none could): a run of a value up to the end, or
// the beginning of a form. A stream of writes keeps it back.
func (r *Replacer) held(data []byte) int {
	from := max(0, len(data)-r.keep())
	s := r.scan(bytes.IndexByte(data, '\n') >= 0)
	for i := from; ; {
		at, p := s.next(data, i)
		if p == nil {
			break
		}
		start, end, ok := p.widen(data, i, at, false)
		if !ok {
			return start
		}
		i = end
	}
	for s := from; s < len(data); s++ {
		tail := data[s:]
		for k := range r.patterns {
			if find := r.patterns[k].find; len(tail) < len(find) && bytes.HasPrefix(find, tail) {
				return s
			}
		}
	}
	return len(data)
}
