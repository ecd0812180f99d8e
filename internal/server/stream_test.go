package server

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

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
