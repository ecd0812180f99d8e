package wire

import (
	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/state"
)

// The records sandboxd keeps (package state) as the wire shows them. A flat record
// converts with a plain conversion, which stops compiling the day the two
// differ; the nested ones are mapped field by field, and
// TestRecordsKeepEveryField checks that no field is dropped either way.

// Execution is a history record as the wire shows it.
func Execution(e state.Execution) api.Execution {
	return api.Execution{
		ID: e.ID, Kind: e.Kind, Language: e.Language, Session: e.Session, StartedAt: e.StartedAt,
		Outcome: e.Outcome, ExitCode: e.ExitCode, Signal: e.Signal, TimedOut: e.TimedOut, OOMKilled: e.OOMKilled,
		Truncated: e.Truncated, StdoutBytes: e.StdoutBytes, StderrBytes: e.StderrBytes,
		Limits: api.Limits(e.Limits), Usage: api.Usage(e.Usage), Timings: api.Timings(e.Timings),
		Error: e.Error, Decision: e.Decision,
		Findings: All(e.Findings, Finding), FindingsOmitted: e.FindingsOmitted,
		Egress: All(e.Egress, Egress), EgressOmitted: e.EgressOmitted, Approval: ptr(e.Approval, ApprovalOutcome),
		Requester: ptr(e.Requester, Requester),
	}
}

// Session is a session as the wire shows it.
func Session(s state.Session) api.Session {
	return api.Session{
		ID: s.ID, Language: s.Language, State: s.State, Error: s.Error, Project: s.Project,
		CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt, LastUsedAt: s.LastUsedAt, IdleTimeout: s.IdleTimeout,
		Limits: api.Limits(s.Limits), Network: APINetwork(s.Network), Env: s.Env, Secrets: s.Secrets,
		ContainerID: s.ContainerID, Executions: s.Executions,
		Hibernation: ptr(s.Hibernation, func(h state.Hibernation) api.Hibernation { return api.Hibernation(h) }),
		FrozenAt:    s.FrozenAt, Resumes: s.Resumes, ResumeMS: s.ResumeMS, ContextsLost: s.ContextsLost,
	}
}

// Project is a project as the wire shows it.
func Project(p state.Project) api.Project {
	return api.Project{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, Size: p.Size, Sessions: p.Sessions,
		Files: All(p.Files, ProjectFile)}
}

// ProjectFile is a project's file as the wire shows it.
func ProjectFile(f state.ProjectFile) api.ProjectFile { return api.ProjectFile(f) }

// Snapshot is a snapshot as the wire shows it.
func Snapshot(s state.Snapshot) api.Snapshot { return api.Snapshot(s) }

// Approval is an approval as the wire shows it.
func Approval(a state.Approval) api.Approval {
	return api.Approval{
		ID: a.ID, State: a.State, Kind: a.Kind, Language: a.Language, Session: a.Session, Argv: a.Argv, Entry: a.Entry,
		Files:    All(a.Files, func(f state.ApprovalFile) api.ApprovalFile { return api.ApprovalFile(f) }),
		Question: Finding(a.Question), Findings: All(a.Findings, Finding),
		Created: a.Created, Deadline: a.Deadline, Decided: a.Decided, By: a.By, Reason: a.Reason, Waiting: a.Waiting,
		RequestedBy: ptr(a.RequestedBy, Requester), DecidedBy: ptr(a.DecidedBy, Requester),
		Refused: All(a.Refused, func(r state.RefusedDecision) api.RefusedDecision {
			return api.RefusedDecision{By: Requester(r.By), At: r.At, Reason: r.Reason}
		}),
	}
}

// Requester is who asked, as the wire shows it.
func Requester(r state.Requester) api.Requester { return api.Requester(r) }

// Finding is a finding as the wire shows it.
func Finding(f state.Finding) api.Finding { return api.Finding(f) }

// Egress is a connection a run made as the wire shows it.
func Egress(e state.Egress) api.Egress { return api.Egress(e) }

// ApprovalOutcome is how an approval ended, as the wire shows it.
func ApprovalOutcome(a state.ApprovalOutcome) api.ApprovalOutcome { return api.ApprovalOutcome(a) }

// All maps every element of in with f (a list of records to the wire's),
// keeping nil nil.
func All[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

// ptr maps what p points to, keeping nil nil.
func ptr[T, U any](p *T, f func(T) U) *U {
	if p == nil {
		return nil
	}
	u := f(*p)
	return &u
}
