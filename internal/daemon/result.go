package daemon

import (
	"time"

	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// The daemon's requests and results, in its own types: internal/wire
// decodes the API's requests into these and shows the results on the
// wire (text or base64, milliseconds).

// RunRequest is a one-shot run: a program in a language.
type RunRequest struct {
	Language string
	Program  request.Program
	Timeout  time.Duration  // 0: limits' timeout, or the ceiling's
	Limits   *state.Limits  // nil: the language's ceilings
	Network  *state.Network // nil: the language's allow-list
	Secrets  []string
}

// ExecRequest is an exec in a session: a command (Argv), a program in
// the session's language, or code for one of its contexts (Context).
type ExecRequest struct {
	Argv    []string
	Program request.Program // Program.Env and Program.Stdin serve a command too
	Context string
	// Language is the context's, when not the session's.
	Language string
	Cwd      string // relative to the workspace; "" is the workspace
	Timeout  time.Duration
	Limits   *state.Limits // the timeout and output limit alone: the rest are the session's
}

// ValidateRequest asks what the policies would say of a program or a
// command, running nothing.
type ValidateRequest struct {
	Language string
	Program  request.Program
	Argv     []string
	Timeout  time.Duration
	Limits   *state.Limits
}

// Validation is what the policies said: whether they would let it run,
// their findings, and whether one would ask a person first.
type Validation struct {
	Allowed       bool
	Findings      []state.Finding
	NeedsApproval bool
}

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

// Secret is a secret block, as clients may know it: its name, its hosts
// and where in a request it goes (Header, or Query when set).
type Secret struct {
	Name   string
	Hosts  []string
	Header string
	Query  string
}

// Outcomes of a policy decision.
const (
	decisionAllowed = "allowed"
	decisionDenied  = "denied"
)

// Queued is the stream on which OutputFunc is told what a run waits on
// before it starts (besides supervisor.Stdout and supervisor.Stderr).
const Queued = "queued"

// ContextsLostByHibernation is why a context's state is gone when its
// session hibernated without its memory.
const ContextsLostByHibernation = "hibernated without memory"
