// Package policy is the contract between sandboxd and a policy plugin.
//
// A policy plugin is a guard rail and an audit point, not the security
// boundary (the container is): given a request (the program's files, or
// the argv of a session command, the limits asked for and the ceilings,
// the session), it returns findings with exact positions and whether it
// would deny. The daemon's chain (package sandboxd/policy) applies each
// policy's mode from sandboxd.hcl: enforce (a deny blocks), warn
// (findings reported, nothing blocked) or off. Plugins hold no state and
// never touch Docker.
//
// Plugin authors implement Policy and call plugins.ServePolicy; see
// plugins/policy/example. The Go interface is the contract; proto/ mirrors
// it, and grpc.go translates between the two.
package policy

import (
	"context"

	"github.com/sandboxd/sandboxd/plugins/program"
)

// Policy is what a policy plugin implements.
type Policy interface {
	// Info describes the policy.
	Info(ctx context.Context) (Info, error)
	// Check judges one request. It must not run anything.
	Check(ctx context.Context, req Request) (Verdict, error)
}

// Modes of a policy block.
const (
	ModeEnforce = "enforce"
	ModeWarn    = "warn"
	ModeOff     = "off"
	// ModeAsk turns the policy's deny into a question for a person: the
	// request waits for an approval (sandboxctl approvals).
	ModeAsk = "ask"
)

// Severities of findings, least to most severe.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityError    = "error"
	SeverityCritical = "critical"
)

// Kinds of request.
const (
	KindRun      = "run"      // POST /v1/run
	KindExec     = "exec"     // a session's command (Argv) or program (Files)
	KindValidate = "validate" // POST /v1/validate: nothing will run
	KindPut      = "put"      // a file uploaded into a session (Files: its first MiB)
)

// Info describes a policy.
type Info struct {
	Name        string
	Version     string
	Description string
	DefaultMode string   // the mode when its block sets none
	Rules       []string // the rules it may report, e.g. "python.eval"
	// Kinds are the kinds of request it judges (KindRun, ...); the
	// daemon asks it about no other. None: every kind.
	Kinds []string
}

// File is a file of the program, as the client sent it (see
// plugins/program; a policy has no use for its Mode).
type File = program.File

// Limits are resources: what a request will run with, or the ceilings.
type Limits struct {
	TimeoutMS int64
	Memory    int64
	CPUs      float64
	Pids      int64
}

// Request is what a policy judges.
type Request struct {
	Kind     string
	Language string
	Files    []File   // the program; the entry point first
	Entry    string   // the file that runs
	Argv     []string // a session command, when Files is empty
	Cwd      string   // where a session command runs
	// Limits are what the request will run with if it is allowed: its
	// own values where it set them, the ceiling's elsewhere, with the
	// deadline already decided (a top-level timeout wins over
	// limits.timeout). A value above its ceiling is refused after the
	// policies have judged, whatever they answer.
	Limits   Limits
	Ceilings Limits // what the language allows
	Session  string
	Options  map[string]string // the policy block's options
}

// Finding is one thing a policy noticed. Line and Column are 1-based (0:
// not about a position). Message and Snippet must never carry a secret.
type Finding struct {
	Rule     string
	Severity string
	Message  string
	File     string
	Line     int
	Column   int
	Snippet  string
}

// Verdict is a policy's answer: its findings, and whether it would deny
// (which blocks the request only in enforce mode).
type Verdict struct {
	Findings []Finding
	Deny     bool
}

// SeverityRank orders severities; unknown ones rank -1.
func SeverityRank(s string) int {
	switch s {
	case SeverityInfo:
		return 0
	case SeverityWarning:
		return 1
	case SeverityError:
		return 2
	case SeverityCritical:
		return 3
	}
	return -1
}

// DenyAtError is the usual decision: deny when a finding is an error or
// critical.
func DenyAtError(findings []Finding) Verdict {
	v := Verdict{Findings: findings}
	for _, f := range findings {
		if SeverityRank(f.Severity) >= SeverityRank(SeverityError) {
			v.Deny = true
		}
	}
	return v
}
