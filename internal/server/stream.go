package server

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sandboxd/sandboxd/api"
)

// Bounds of a stream's client. The execution that feeds a stream never
// waits on its client: events queue here and a goroutine of the stream's
// own writes them. A client that lets more than maxBacklog bytes queue up,
// or whose socket takes no bytes for writeTimeout, loses its stream; the
// execution runs on to its end and is recorded. Output is capped per
// stream before it gets here, so the backlog only overflows on a client
// that stopped reading.
const (
	maxBacklog   = 32 << 20
	writeTimeout = 30 * time.Second
)

// stream writes NDJSON events, flushing each. Output chunks that end inside
// a UTF-8 sequence keep the tail for the next chunk, so text stays text;
// bytes that are not UTF-8 at all go out as base64.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu      sync.Mutex
	tail    map[string][]byte
	queue   [][]byte // encoded lines not yet written
	backlog int      // their bytes
	closed  bool     // the last event is queued
	lost    bool     // the client is gone or too slow: drop everything
	wake    chan struct{}
	written chan struct{} // closed when the writer is done
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w), tail: map[string][]byte{},
		wake: make(chan struct{}, 1), written: make(chan struct{})}
	go s.write()
	return s
}

// output queues a chunk of a program's output.
func (s *stream) output(streamName string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := append(s.tail[streamName], data...)
	cut := len(buf)
	// Hold back at most 3 bytes of an unfinished rune.
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	s.tail[streamName] = append([]byte(nil), buf[cut:]...)
	s.emitLocked(streamName, buf[:cut])
}

func (s *stream) emitLocked(streamName string, data []byte) {
	if len(data) == 0 {
		return
	}
	ev := api.Event{Type: streamName}
	ev.Data, ev.Encoding = api.EncodeBytes(data)
	s.queueLocked(ev)
}

// event queues one event as it is.
func (s *stream) event(ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queueLocked(ev)
}

func (s *stream) queueLocked(ev any) {
	if s.lost || s.closed {
		return
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return
	}
	line = append(line, '\n')
	if s.backlog+len(line) > maxBacklog {
		s.loseLocked()
		return
	}
	s.queue = append(s.queue, line)
	s.backlog += len(line)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) loseLocked() {
	s.lost, s.queue, s.backlog = true, nil, 0
}

// finish queues held-back bytes and the final event, and waits until the
// writer has sent them or lost the client.
func (s *stream) finish(ev any) {
	s.mu.Lock()
	for _, name := range []string{api.EventStdout, api.EventStderr} {
		s.emitLocked(name, s.tail[name])
		delete(s.tail, name)
	}
	s.queueLocked(ev)
	s.closed = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.mu.Unlock()
	<-s.written
}

// write sends queued lines until the stream is finished or lost. Each
// write has a deadline, so a client that stops reading costs at most
// writeTimeout.
func (s *stream) write() {
	defer close(s.written)
	for range s.wake {
		s.mu.Lock()
		lines, closed := s.queue, s.closed
		s.queue = nil
		s.mu.Unlock()
		for _, line := range lines {
			_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			_, err := s.w.Write(line)
			if err == nil {
				err = s.rc.Flush()
			}
			s.mu.Lock()
			s.backlog -= len(line) // written lines still count while they wait
			if err != nil {
				s.loseLocked()
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
		if closed {
			return
		}
	}
}
