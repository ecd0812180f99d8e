package daemon

import (
	"time"

	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/state"
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

// The results of executions are the sandbox leases' own (sandbox.Lease.Run).
type (
	Result       = sandbox.Result
	Step         = sandbox.Step
	ContextState = sandbox.ContextState
	OutputFile   = sandbox.OutputFile
	TTY          = sandbox.TTY
	OutputFunc   = sandbox.OutputFunc
	TermInput    = sandbox.TermInput
	WinSize      = sandbox.WinSize
	Display      = sandbox.Display
)

// The output streams (besides Queued).
const (
	Stdout = sandbox.Stdout
	Stderr = sandbox.Stderr
)

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
