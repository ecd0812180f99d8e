package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// A rune split across output chunks arrives whole in one event; bytes that
// are not UTF-8 arrive as base64; held-back bytes are flushed before the
// final event.
func TestStreamKeepsRunesWhole(t *testing.T) {
	rec := httptest.NewRecorder()
	st := newStream(rec)
	euro := []byte("€") // e2 82 ac
	st.output(api.EventStdout, append([]byte("a"), euro[:2]...))
	st.output(api.EventStdout, append(euro[2:], 'b'))
	st.output(api.EventStderr, []byte{0xff, 0xfe})
	st.output(api.EventStdout, euro[:1])
	st.finish(api.Event{Type: api.EventResult, Result: &api.RunResult{ExitCode: 0}})

	var got []api.Event
	sc := bufio.NewScanner(strings.NewReader(rec.Body.String()))
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, ev)
	}
	want := []api.Event{
		{Type: api.EventStdout, Data: "a"},
		{Type: api.EventStdout, Data: "€b"},
		{Type: api.EventStderr, Data: "//4=", Encoding: api.EncodingBase64},
		{Type: api.EventStdout, Data: "4g==", Encoding: api.EncodingBase64}, // a lone lead byte at the end
		{Type: api.EventResult},
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v", got)
	}
	for i := range want {
		if got[i].Type != want[i].Type || got[i].Data != want[i].Data || got[i].Encoding != want[i].Encoding {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if ct := rec.Header().Get("Content-Type"); ct != api.ContentTypeNDJSON {
		t.Errorf("content type %q", ct)
	}
}

// stalled is a client that never reads: a write returns only at its
// deadline, or when the test lets it fail.
type stalled struct {
	httptest.ResponseRecorder
	deadline time.Time
	writes   atomic.Int32
	fail     chan struct{}
}

func (s *stalled) SetWriteDeadline(t time.Time) error { s.deadline = t; return nil }

func (s *stalled) Write(p []byte) (int, error) {
	s.writes.Add(1)
	select {
	case <-time.After(time.Until(s.deadline)):
	case <-s.fail:
	}
	return 0, os.ErrDeadlineExceeded
}

// The execution feeding a stream never waits on its client: everything is
// produced while the first write is still stuck, and the stalled client
// loses its stream.
func TestStalledClientLosesItsStreamNotTheProducer(t *testing.T) {
	w := &stalled{ResponseRecorder: *httptest.NewRecorder(), fail: make(chan struct{})}
	st := newStream(w)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 40; i++ { // past the backlog bound
		st.output(api.EventStdout, chunk)
	}
	if n := w.writes.Load(); n > 1 {
		t.Fatalf("%d writes to a client that took nothing", n)
	}
	close(w.fail) // the write deadline passes
	st.finish(api.Event{Type: api.EventResult})
	if n := w.writes.Load(); n != 1 || !st.lost {
		t.Fatalf("%d writes, lost %v: a stalled client must lose its stream after one", n, st.lost)
	}
}
