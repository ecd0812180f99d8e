package request

import (
	"fmt"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/runtime"
)

// Minimums a request may ask for.
const (
	minTimeout = time.Millisecond
	minMemory  = 16 << 20
	minPids    = 8
	minCPUs    = 0.01
)

// Limits decides what a request runs with under ceil: each value it asks
// for, the ceiling's where it asks for none. The deadline is decided here
// and only here: the top-level timeout wins over limits.timeout. Values
// that make no sense (negative, below a minimum) are refused; a value
// above its ceiling is kept, so that the policies judge what was asked,
// and refused afterwards by Within.
func Limits(ceil runtime.Limits, timeout units.Duration, asked *state.Limits) (runtime.Limits, error) {
	var a state.Limits
	if asked != nil {
		a = *asked
	}
	if timeout == 0 {
		timeout = a.Timeout
	}
	eff := ceil
	var aerr error
	pick := func(name string, asked, ceiling, minimum int64, show func(int64) string) int64 {
		switch {
		case aerr != nil || asked == 0:
			return ceiling
		case asked < 0:
			aerr = errdefs.Errorf(errdefs.Invalid, "%s must not be negative", name)
		case asked < minimum:
			aerr = errdefs.Errorf(errdefs.Invalid, "%s %s is below the minimum %s", name, show(asked), show(minimum))
		}
		return asked
	}
	eff.Timeout = time.Duration(pick("timeout", int64(timeout), int64(ceil.Timeout), int64(minTimeout), showDuration))
	eff.Memory = pick("memory", int64(a.Memory), ceil.Memory, minMemory, showSize)
	eff.Pids = pick("pids", a.Pids, ceil.Pids, minPids, showCount)
	eff.OutputLimit = pick("output_limit", int64(a.OutputLimit), ceil.OutputLimit, 1, showSize)
	if aerr != nil {
		return eff, aerr
	}
	switch {
	case a.CPUs < 0:
		return eff, errdefs.Errorf(errdefs.Invalid, "cpus must not be negative")
	case a.CPUs > 0:
		eff.CPUs = max(a.CPUs, minCPUs)
	}
	return eff, nil
}

// Within refuses limits above the ceilings ceil of what (a language's or
// a session's), naming the ceiling.
func Within(eff, ceil runtime.Limits, what string) error {
	over := func(name, asked, ceiling string) error {
		return errdefs.Errorf(errdefs.Invalid, "%s %s is above the ceiling %s for %s (raise it in sandboxd.hcl)", name, asked, ceiling, what)
	}
	switch {
	case eff.Timeout > ceil.Timeout:
		return over("timeout", showDuration(int64(eff.Timeout)), showDuration(int64(ceil.Timeout)))
	case eff.Memory > ceil.Memory:
		return over("memory", showSize(eff.Memory), showSize(ceil.Memory))
	case eff.Pids > ceil.Pids:
		return over("pids", showCount(eff.Pids), showCount(ceil.Pids))
	case eff.OutputLimit > ceil.OutputLimit:
		return over("output_limit", showSize(eff.OutputLimit), showSize(ceil.OutputLimit))
	case eff.CPUs > ceil.CPUs:
		return cpusError(eff.CPUs, ceil.CPUs, what)
	}
	return nil
}

func cpusError(asked, ceiling float64, what string) error {
	return errdefs.Errorf(errdefs.Invalid, "cpus %g must be between %g and the ceiling %g for %s", asked, minCPUs, ceiling, what)
}

func showDuration(n int64) string { return time.Duration(n).String() }
func showSize(n int64) string     { return units.ByteSize(n).String() }
func showCount(n int64) string    { return fmt.Sprint(n) }

// KeptLimits are the limits a record kept, under ceil: what a request
// that asked for them would get.
func KeptLimits(ceil runtime.Limits, kept state.Limits) runtime.Limits {
	l, _ := Limits(ceil, 0, &kept)
	return l
}

// Record is l as a record keeps it.
func Record(l runtime.Limits) state.Limits {
	return state.Limits{
		Timeout: units.Duration(l.Timeout), Memory: units.ByteSize(l.Memory), CPUs: l.CPUs,
		Pids: l.Pids, OutputLimit: units.ByteSize(l.OutputLimit),
	}
}
