package drain

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
)

func TestGateAdmitsUntilClosedThenWaits(t *testing.T) {
	var g Gate
	if err := g.Enter(); err != nil {
		t.Fatal(err)
	}
	if g.InFlight() != 1 || g.Closing() {
		t.Fatalf("in flight %d, closing %v", g.InFlight(), g.Closing())
	}
	closed := make(chan bool)
	go func() { closed <- g.Close(context.Background()) }()
	for !g.Closing() {
		time.Sleep(time.Millisecond)
	}
	if err := g.Enter(); !errdefs.Is(err, errdefs.ShuttingDown) {
		t.Fatalf("a request after close: %v", err)
	}
	select {
	case <-closed:
		t.Fatal("Close returned with a request inside")
	case <-time.After(50 * time.Millisecond):
	}
	g.Leave()
	if !<-closed {
		t.Fatal("Close said a request stayed")
	}
	if !g.Close(context.Background()) {
		t.Fatal("a second Close waited")
	}
}

func TestGateCloseGivesUpAtItsDeadline(t *testing.T) {
	var g Gate
	_ = g.Enter()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if g.Close(ctx) {
		t.Fatal("Close said every request left")
	}
}

// A request is either refused or waited for: none runs after Close says
// the gate is empty.
func TestGateNoRequestAfterClose(t *testing.T) {
	for round := 0; round < 200; round++ {
		var g Gate
		var mu sync.Mutex
		done := false
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if g.Enter() != nil {
					return
				}
				mu.Lock()
				late := done
				mu.Unlock()
				if late {
					t.Error("a request ran after Close returned")
				}
				g.Leave()
			}()
		}
		if g.Close(context.Background()) {
			mu.Lock()
			done = true
			mu.Unlock()
		}
		wg.Wait()
	}
}
