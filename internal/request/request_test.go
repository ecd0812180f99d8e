package request

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/runtime"
)

var ceil = runtime.Limits{Timeout: 10 * time.Second, Memory: 512 << 20, CPUs: 1, Pids: 128, Disk: 256 << 20, OutputLimit: 1 << 20}

// The deadline is decided once: the top-level timeout wins over
// limits.timeout, and what is decided is what the policies see and what
// runs.
func TestLimitsDecideTheDeadlineOnce(t *testing.T) {
	for _, c := range []struct {
		top, inLimits units.Duration
		want          time.Duration
	}{
		{0, 0, 10 * time.Second},
		{units.Duration(2 * time.Second), 0, 2 * time.Second},
		{0, units.Duration(3 * time.Second), 3 * time.Second},
		{units.Duration(2 * time.Second), units.Duration(3 * time.Second), 2 * time.Second},
	} {
		eff, aerr := Limits(ceil, c.top, &state.Limits{Timeout: c.inLimits})
		if aerr != nil || eff.Timeout != c.want {
			t.Errorf("timeout %v, limits.timeout %v: got %v, %v; want %v", c.top, c.inLimits, eff.Timeout, aerr, c.want)
		}
	}
}

func TestLimitsKeepWhatWasAskedAndWithinRefusesOverCeilings(t *testing.T) {
	eff, aerr := Limits(ceil, 0, &state.Limits{Memory: 128 << 20, CPUs: 0.001, Pids: 16})
	if aerr != nil || eff.Memory != 128<<20 || eff.CPUs != 0.01 || eff.Pids != 16 || eff.OutputLimit != ceil.OutputLimit || eff.Disk != ceil.Disk {
		t.Fatalf("lowered: %+v %v", eff, aerr)
	}
	if aerr := Within(eff, ceil, "python"); aerr != nil {
		t.Fatalf("within: %v", aerr)
	}
	if !eff.Resized(ceil) || ceil.Resized(ceil) {
		t.Error("Resized")
	}
	// Over a ceiling: kept for the policies to judge, refused by Within.
	eff, aerr = Limits(ceil, units.Duration(time.Minute), nil)
	if aerr != nil || eff.Timeout != time.Minute {
		t.Fatalf("over: %+v %v", eff, aerr)
	}
	if aerr := Within(eff, ceil, "python"); aerr == nil || !errdefs.Is(aerr, errdefs.Invalid) || !strings.Contains(aerr.Error(), "above the ceiling 10s for python") {
		t.Fatalf("within over: %v", aerr)
	}
	for _, asked := range []state.Limits{{Memory: -1}, {Memory: 1 << 20}, {Pids: 2}, {CPUs: -1}, {Timeout: units.Duration(time.Microsecond)}} {
		if _, aerr := Limits(ceil, 0, &asked); aerr == nil || !errdefs.Is(aerr, errdefs.Invalid) {
			t.Errorf("%+v: want invalid_request, got %v", asked, aerr)
		}
	}
	for _, over := range []state.Limits{{Memory: 1 << 30}, {Pids: 1000}, {CPUs: 2}, {OutputLimit: 1 << 30}} {
		eff, aerr := Limits(ceil, 0, &over)
		if aerr != nil || Within(eff, ceil, "x") == nil {
			t.Errorf("%+v: want refused by Within, got %v", over, aerr)
		}
	}
}

// An environment too large in one entry or in all is too_large.
func TestEnvBounds(t *testing.T) {
	one := map[string]string{"K": strings.Repeat("v", maxEnvValue)}
	all := map[string]string{}
	for i := 0; i < 10; i++ {
		all[fmt.Sprint("K", i)] = strings.Repeat("v", maxEnvValue-10)
	}
	for name, env := range map[string]map[string]string{"one env entry": one, "env in all": all} {
		if aerr := CheckEnv(env); aerr == nil || !errdefs.Is(aerr, errdefs.TooLarge) {
			t.Errorf("%s: %v, want too_large", name, aerr)
		}
	}
	if aerr := CheckEnv(map[string]string{"K": "v"}); aerr != nil {
		t.Errorf("a small env: %v", aerr)
	}
}
