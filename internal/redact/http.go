package redact

import (
	"bufio"
	"net"
	"net/http"
)

// Handler serves next with every answer's headers and body replaced. A
// body written in pieces (a stream of output) keeps back, between
// writes, the tail that could begin a form the next write completes. A
// connection the handler takes over (a terminal's, a forwarded port's
// WebSocket) is its own after that: its bytes are not answers of
// sandboxd's.
func (r *Replacer) Handler(next http.Handler) http.Handler {
	if !r.Active() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rw := &responseWriter{ResponseWriter: w, r: r}
		next.ServeHTTP(rw, req)
		rw.finish()
	})
}

type responseWriter struct {
	http.ResponseWriter
	r           *Replacer
	wroteHeader bool
	hijacked    bool
	pending     []byte // written, held back: it may begin a form
}

func (w *responseWriter) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 || code == http.StatusSwitchingProtocols {
		w.wroteHeader = true
		w.scrubHeader()
	} else if code < 200 {
		w.scrubHeader() // an interim answer's headers
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) scrubHeader() {
	h := w.Header()
	for k, vs := range h {
		if w.r.String(k) != k {
			delete(h, k)
			continue
		}
		for i, v := range vs {
			h[k][i] = w.r.String(v)
		}
	}
	h.Del("Content-Length") // a replacement may change it
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	data := append(w.pending, p...)
	h := w.r.held(data)
	out, _ := w.r.replace(data[:h], true)
	w.pending = append([]byte(nil), data[h:]...)
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends what was written, but the tail held back.
func (w *responseWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over; nothing is replaced on it after.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.hijacked = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// finish writes the tail held back, once the handler is done.
func (w *responseWriter) finish() {
	if len(w.pending) > 0 && !w.hijacked {
		_, _ = w.ResponseWriter.Write(w.r.Bytes(w.pending))
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
