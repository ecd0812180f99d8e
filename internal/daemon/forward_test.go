package daemon

import (
	"context"
	"testing"
	"time"
)

// A session carries maxForwards connections at once; the next waits for
// one of them to end and is carried then, a further one that none makes
// room for is refused after forwardWait, and other sessions are not held
// up by a full one.
func TestForwardsWaitForRoomThenRefuse(t *testing.T) {
	var f forwards
	ctx := context.Background()
	for i := range maxForwards {
		if !f.take(ctx, "a") {
			t.Fatalf("connection %d of %d refused", i+1, maxForwards)
		}
	}
	if !f.take(ctx, "b") {
		t.Fatal("another session's connection refused while a's are full")
	}

	waited := make(chan bool)
	go func() { waited <- f.take(ctx, "a") }()
	select {
	case ok := <-waited:
		t.Fatalf("connection %d did not wait (took: %v)", maxForwards+1, ok)
	case <-time.After(100 * time.Millisecond):
	}
	f.done("a")
	if !<-waited {
		t.Fatalf("connection %d refused after one ended", maxForwards+1)
	}

	began := time.Now()
	if f.take(ctx, "a") {
		t.Fatalf("connection %d carried with %d open", maxForwards+2, maxForwards)
	}
	if took := time.Since(began); took < forwardWait {
		t.Fatalf("refused after %s, before forwardWait (%s)", took, forwardWait)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if f.take(cancelled, "a") {
		t.Fatal("a connection whose client went was carried")
	}
}
