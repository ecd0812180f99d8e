package daemon

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/metrics"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
)

// recorder counts executions by outcome, for /v1/stats and /metrics, and
// stores them in the history.
type recorder struct {
	store   *state.Store
	log     hclog.Logger
	metrics *metrics.Metrics

	mu       sync.Mutex
	total    uint64
	outcomes map[string]uint64
	watchers map[chan state.Execution]struct{}
	pending  sync.WaitGroup
	// The total times of the executions since the timeline's last
	// sample, and how many there were.
	latencies   []float64
	latencySeen int
}

// Outcomes of an execution.
const (
	outcomeOK      = "ok"
	outcomeNonzero = "nonzero"
	outcomeTimeout = "timeout"
	outcomeOOM     = "oom"
	outcomeError   = "error"
	outcomeDenied  = "denied"
)

func outcome(r *Result) string {
	switch {
	case r.TimedOut:
		return outcomeTimeout
	case r.OOMKilled:
		return outcomeOOM
	case r.ExitCode != 0:
		return outcomeNonzero
	}
	return outcomeOK
}

// count records an execution's outcome; res is nil for one that never
// ran to the end.
func (r *recorder) count(language, kind, outcome string, res *Result) {
	var ran *metrics.Ran
	if res != nil {
		t, u := res.Timings, res.Usage
		ran = &metrics.Ran{Queue: fromMS(t.QueueMS), Run: fromMS(t.RunMS), CPUUser: fromMS(u.CPUUserMS), CPUSys: fromMS(u.CPUSysMS)}
	}
	r.metrics.Executed(language, kind, outcome, ran)
	r.mu.Lock()
	r.total++
	r.outcomes[outcome]++
	r.mu.Unlock()
	if res != nil {
		r.latency(res.Timings.TotalMS)
	}
}

// fromMS is a duration in milliseconds as a Duration.
func fromMS(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func (r *recorder) counts() (uint64, map[string]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]uint64, len(r.outcomes))
	for k, v := range r.outcomes {
		out[k] = v
	}
	return r.total, out
}

// ran counts and stores an execution that ran.
func (r *recorder) ran(res *Result, kind string, limits runtime.Limits, started time.Time, by *state.Requester) {
	o := outcome(res)
	r.count(res.Language, kind, o, res)
	r.write(state.Execution{
		ID: res.ID, Kind: kind, Language: res.Language, Session: res.Session, StartedAt: started.UTC(), Outcome: o,
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, OOMKilled: res.OOMKilled,
		Truncated: res.Truncated, StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes,
		Limits: request.Record(limits), Usage: res.Usage, Timings: res.Timings, Error: res.Error,
		Decision: res.Decision, Findings: res.Findings, Egress: res.Egress, EgressOmitted: res.EgressUnrecorded,
		Approval: res.Approval, Requester: by,
	})
}

// denied counts and stores a request the policies, or a person they
// asked (approval), refused: it never ran.
func (r *recorder) denied(language, kind, session string, findings []state.Finding, approval *state.ApprovalOutcome, by *state.Requester) {
	now := time.Now()
	r.count(language, kind, outcomeDenied, nil)
	r.write(state.Execution{ID: state.NewID(now), Kind: kind, Language: language, Session: session,
		StartedAt: now.UTC(), Outcome: outcomeDenied, ExitCode: -1, Decision: decisionDenied, Findings: findings, Approval: approval, Requester: by})
}

// failed counts and stores an execution that sandboxd could not carry out
// (no container, a dead sandbox), with why.
func (r *recorder) failed(language, kind, session string, limits runtime.Limits, aerr error, by *state.Requester) error {
	now := time.Now()
	r.count(language, kind, outcomeError, nil)
	r.write(state.Execution{ID: state.NewID(now), Kind: kind, Language: language, Session: session,
		StartedAt: now.UTC(), Outcome: outcomeError, ExitCode: -1, Limits: request.Record(limits), Error: aerr.Error(), Requester: by})
	return aerr
}

// write stores an execution in the background: the caller has its answer
// already, and bbolt batches concurrent records into one fsync. Watchers
// get it at once; one that has not taken the last few misses it.
func (r *recorder) write(e state.Execution) {
	r.mu.Lock()
	for w := range r.watchers {
		select {
		case w <- e:
		default:
		}
	}
	r.mu.Unlock()
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		if err := r.store.RecordExecution(e); err != nil {
			r.log.Error("recording an execution failed; the history keeps it in memory and the next record's commit writes it again", "id", e.ID, "error", err)
		}
	}()
}

// WatchExecutions delivers executions as they are recorded, until stop is
// called. A watcher that falls behind misses some (the history has them).
func (d *Daemon) WatchExecutions() (executions <-chan state.Execution, stop func()) {
	r := d.records
	w := make(chan state.Execution, 64)
	r.mu.Lock()
	if r.watchers == nil {
		r.watchers = map[chan state.Execution]struct{}{}
	}
	r.watchers[w] = struct{}{}
	r.mu.Unlock()
	return w, func() {
		r.mu.Lock()
		delete(r.watchers, w)
		r.mu.Unlock()
	}
}

// wait waits for the records being written.
func (r *recorder) wait() { r.pending.Wait() }
