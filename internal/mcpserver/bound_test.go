package mcpserver

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/client"
)

// An agent that sends a message larger than MaxMessage (a line of 64
// MiB, never ended) ends its session with an error that names the bound,
// and the server holds no more of it than the bound.
func TestMessagesAreBounded(t *testing.T) {
	r, w := io.Pipe()
	_, out := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), New(client.New("/nonexistent"), "test"), r, out)
	}()
	go func() {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"`)
		chunk := strings.Repeat("a", 1<<20)
		for range 64 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "16 MiB") {
			t.Fatalf("the session ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a 64 MiB message is still being read")
	}
	w.Close()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	if m.HeapAlloc > 3*MaxMessage {
		t.Errorf("%d bytes held after the session", m.HeapAlloc)
	}
}

// Lines up to the bound pass whole; a longer one ends the stream.
func TestBoundedLinesPassesWhatFits(t *testing.T) {
	in := strings.Repeat("x", 10) + "\n" + strings.Repeat("y", 10) + "\n" + strings.Repeat("z", 11) + "\n"
	b := &boundedLines{ReadCloser: io.NopCloser(strings.NewReader(in)), max: 10}
	got, err := io.ReadAll(b)
	if !strings.HasPrefix(string(got), in[:22]) || len(got) > 32 || !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("%q, %v", got, err)
	}
}
