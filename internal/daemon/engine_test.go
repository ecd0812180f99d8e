package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/runtime"
)

// The engine's health is probed again once the last answer is older than
// probeFresh, and a probe that hangs answers within probeTimeout.
func TestEngineProbeIsFreshAndBounded(t *testing.T) {
	now := time.Unix(0, 0)
	pings, down, hang := 0, false, false
	p := newEngineProbe(func(ctx context.Context) (runtime.EngineInfo, error) {
		pings++
		if hang {
			<-ctx.Done()
			return runtime.EngineInfo{}, ctx.Err()
		}
		if down {
			return runtime.EngineInfo{}, errors.New("engine stopped")
		}
		return runtime.EngineInfo{Version: "20.10"}, nil
	})
	p.now = func() time.Time { return now }
	if info, err := p.get(context.Background()); err != nil || info.Version != "20.10" || pings != 1 {
		t.Fatalf("first probe: %+v %v after %d pings", info, err, pings)
	}
	down = true
	now = now.Add(probeFresh - time.Millisecond)
	if _, err := p.get(context.Background()); err != nil || pings != 1 {
		t.Fatalf("within probeFresh the last answer stands: %v after %d pings", err, pings)
	}
	now = now.Add(time.Millisecond)
	if _, err := p.get(context.Background()); err == nil || pings != 2 {
		t.Fatalf("past probeFresh the engine is asked again: %v after %d pings", err, pings)
	}
	hang = true
	now = now.Add(probeFresh)
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a caller that gave up does not cut the probe short for the next
	if _, err := p.get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a hung engine: %v", err)
	}
	if took := time.Since(start); took > probeTimeout+time.Second {
		t.Fatalf("a hung engine held the probe %s", took)
	}
}
