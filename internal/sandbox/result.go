package sandbox

import (
	"time"

	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Result is what an execution did.
type Result struct {
	ID, Language, Session string
	Container             string // the short id of a one-shot run's container
	ExitCode              int
	Signal                string
	Stdout, Stderr        []byte // what was kept, up to the output limit
	// StdoutBytes and StderrBytes are all the program wrote.
	StdoutBytes, StderrBytes int64
	Duration                 time.Duration
	// Warm: a runtime started ahead in the sandbox ran the program.
	Warm, TimedOut, OOMKilled, Truncated bool
	Stage                                string // the step that ended the run, when not "run"
	Steps                                []Step // each step, for programs that compile first
	Error                                string // the program could not be started
	Usage                                state.Usage
	Timings                              state.Timings
	Findings                             []state.Finding
	Decision                             string
	Display                              []supervisor.Display
	Context                              *ContextState // set for an exec in a context
	// Resume is how long the session took to wake for this exec; 0 when
	// it was awake.
	Resume time.Duration
	// Outputs are the files under /workspace/outputs a session's exec
	// made or changed; OutputsOmitted counts those beyond.
	Outputs          []OutputFile
	OutputsOmitted   int
	Egress           []state.Egress
	EgressUnrecorded int
	Approval         *state.ApprovalOutcome // the decision that let it run, when a policy asked
}

// Step is one step of a run, reported apart.
type Step struct {
	Name     string
	ExitCode int
	TimedOut bool
	Duration time.Duration
	Stderr   []byte // the step's own
}

// ContextState says what became of the context an exec ran in.
type ContextState struct {
	Name    string
	Started bool   // its interpreter was started for this exec
	Lost    string // why the context's earlier state is gone
}

// OutputFile is a file an exec made or changed.
type OutputFile struct {
	Path string // relative to /workspace
	Size int64
	MIME string // by its extension
}
