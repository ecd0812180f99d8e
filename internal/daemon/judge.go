package daemon

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
	contract "github.com/sandboxd/sandboxd/plugins/policy"
	"github.com/sandboxd/sandboxd/plugins/program"
	"github.com/sandboxd/sandboxd/policy"
	"github.com/sandboxd/sandboxd/runtime"
)

// judgement is what the policies are asked about one request.
type judgement struct {
	kind string
	// recordAs is the history's name for it when not kind: a terminal
	// and an E2B process are judged as execs.
	recordAs string
	lang     *languages.Language
	files    []program.File
	entry    string
	argv     []string
	cwd      string
	limits   runtime.Limits // what it will run with
	session  string
	// told, if set, is told what the request waits for (a person's
	// approval), for its client.
	told func(why string)
}

func (j judgement) recorded() string { return cmp.Or(j.recordAs, j.kind) }

// ruling is the policies' decision on a request, as its answer and the
// history show it.
type ruling struct {
	allowed  bool
	findings []state.Finding
	// question: an asking policy wants a person's approval (what validate
	// says; a request waits for it in judge).
	question bool
	approval *state.ApprovalOutcome // how the person decided, once one did
	by       *state.Requester       // who asked for the request
}

// judge runs the policy chain. A denial comes back as the policy_denied
// error, with every finding, and is recorded like an execution that never
// ran. A request an asking policy questioned waits for a person's
// decision (see approve).
func (d *Daemon) judge(ctx context.Context, j judgement) (ruling, error) {
	dec := d.policies.Evaluate(ctx, contract.Request{
		Kind: j.kind, Language: j.lang.Name(), Files: j.files, Entry: j.entry, Argv: j.argv, Cwd: j.cwd, Session: j.session,
		Limits: policyLimits(j.limits), Ceilings: policyLimits(j.lang.Limits()),
	})
	r := ruling{allowed: dec.Allowed, findings: findingRecords(dec.Findings), question: dec.Question != nil, by: principal.Of(ctx)}
	switch {
	case j.kind == contract.KindValidate, dec.Allowed && dec.Question == nil:
		return r, nil
	case dec.Allowed:
		return d.approve(ctx, j, r, findingRecord(*dec.Question))
	}
	f := findingRecord(*dec.Denial)
	where := ""
	switch {
	case f.Line > 0:
		where = fmt.Sprintf(" at %s:%d:%d", f.File, f.Line, f.Column)
	case f.File != "":
		where = " in " + f.File
	}
	d.records.denied(j.lang.Name(), j.recorded(), j.session, r.findings, nil, r.by)
	return r, &denied{findings: r.findings, msg: fmt.Sprintf("denied by policy %s: %s%s: %s", f.Policy, f.Rule, where, f.Message)}
}

// findingRecord is a policy's finding as results and records keep it.
func findingRecord(f policy.Finding) state.Finding {
	return state.Finding{Policy: f.Policy, Rule: f.Rule, Severity: f.Severity, Message: f.Message,
		File: f.File, Line: f.Line, Column: f.Column, Snippet: f.Snippet}
}

// findingRecords are fs as findingRecord makes them, never nil.
func findingRecords(fs []policy.Finding) []state.Finding {
	out := make([]state.Finding, len(fs))
	for i, f := range fs {
		out[i] = findingRecord(f)
	}
	return out
}

// denied is a policy's denial, whose findings go out with it.
type denied struct {
	msg      string
	findings []state.Finding
}

func (e *denied) Error() string             { return e.msg }
func (e *denied) Kind() errdefs.Kind        { return errdefs.PolicyDenied }
func (e *denied) Findings() []state.Finding { return e.findings }

// approve puts a request an asking policy questioned to a person and
// waits for the decision: approved, it goes on with the decision in its
// result; denied or expired, it is recorded as denied, with who decided.
func (d *Daemon) approve(ctx context.Context, j judgement, r ruling, question state.Finding) (ruling, error) {
	q := state.Approval{Kind: j.kind, Language: j.lang.Name(), Session: j.session, Argv: j.argv, Entry: j.entry,
		Files: approvalFiles(j.files), Question: question, Findings: r.findings, RequestedBy: r.by}
	a, aerr := d.Approvals.Ask(ctx, q, func(a state.Approval) {
		if j.told != nil {
			j.told(fmt.Sprintf("approval %s: policy %s asks a person (%s: %s); sandboxctl approvals show %s", a.ID,
				a.Question.Policy, a.Question.Rule, a.Question.Message, a.ID))
		}
	})
	r.approval = &state.ApprovalOutcome{ID: a.ID, State: a.State, By: a.By, Reason: a.Reason}
	if aerr != nil {
		if a.State != state.ApprovalPending { // decided, or expired: the history has it now
			d.records.denied(j.lang.Name(), j.recorded(), j.session, r.findings, r.approval, r.by)
		}
		return r, aerr
	}
	return r, nil
}

// Bounds on the program an approval shows a person.
const (
	approvalMaxFiles = 16
	approvalFileMax  = 64 << 10
)

// approvalFiles are files as a person reads them: text, the first few,
// each cut at approvalFileMax.
func approvalFiles(files []program.File) []state.ApprovalFile {
	var out []state.ApprovalFile
	for _, f := range files[:min(len(files), approvalMaxFiles)] {
		af := state.ApprovalFile{Path: f.Path, Content: string(f.Content)}
		if len(f.Content) > approvalFileMax {
			af.Content, af.Truncated = strings.ToValidUTF8(string(f.Content[:approvalFileMax]), "\uFFFD"), true
		}
		out = append(out, af)
	}
	return out
}

func policyLimits(l runtime.Limits) contract.Limits {
	return contract.Limits{TimeoutMS: l.Timeout.Milliseconds(), Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids}
}

// Validate runs the policies over a program or a command without running
// anything.
func (d *Daemon) Validate(ctx context.Context, req ValidateRequest) (*Validation, error) {
	l, aerr := d.Languages.Resolve(req.Language)
	if aerr != nil {
		return nil, aerr
	}
	limits, aerr := request.Limits(l.Limits(), units.Duration(req.Timeout), req.Limits)
	if aerr != nil {
		return nil, aerr
	}
	j := judgement{kind: contract.KindValidate, lang: l, argv: req.Argv, limits: limits}
	if len(req.Argv) == 0 {
		p, aerr := d.plan(ctx, l, req.Program, "")
		if aerr != nil {
			return nil, aerr
		}
		j.files, j.entry = p.files, req.Program.Entry
	}
	r, _ := d.judge(ctx, j)
	return &Validation{Allowed: r.allowed, Findings: r.findings, NeedsApproval: r.question}, nil
}

// judgedUpload is how much of an uploaded file the policies see: all of a
// small one (a program put in place to run later), the start of a large
// one.
const judgedUpload = 1 << 20

// PutFile uploads a file into a session after the policies judged it, so
// that a program uploaded and then run meets the same patterns and secrets
// rules as one sent to run.
func (d *Daemon) PutFile(ctx context.Context, id, path string, mode uint32, body io.Reader) (*Written, error) {
	rec, aerr := d.Sessions.Get(id)
	if aerr != nil {
		return nil, aerr
	}
	var findings []state.Finding
	l, ok := d.Languages.Lookup(rec.Language)
	name, perr := sessions.Path(path)
	if ok && perr == nil {
		head, err := io.ReadAll(io.LimitReader(body, judgedUpload))
		if err != nil {
			return nil, errdefs.Errorf(errdefs.Invalid, "receiving the upload: %v", err)
		}
		limits := request.KeptLimits(l.Limits(), rec.Limits)
		j := judgement{kind: contract.KindPut, lang: l, session: id, limits: limits,
			files: []program.File{{Path: name, Content: head, Mode: mode}}, entry: name}
		r, aerr := d.judge(ctx, j)
		if aerr != nil {
			return nil, aerr
		}
		body, findings = io.MultiReader(bytes.NewReader(head), body), r.findings
	}
	name, size, aerr := d.Sessions.PutFile(ctx, id, path, mode, body)
	if aerr != nil {
		return nil, aerr
	}
	return &Written{Path: name, Size: size, Findings: findings}, nil
}

// Written is an upload as it landed: its path in the workspace, its
// size, and what the policies said of it when they let it through.
type Written struct {
	Path     string
	Size     int64
	Findings []state.Finding
}
