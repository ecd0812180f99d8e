package daemon

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
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
	as       string // the language the policies judge it as, when not lang's (a script an exec runs)
	files    []program.File
	// shown, when set, is what a person asked about it reads instead of
	// files: the parts of a large file around the findings.
	shown   []state.ApprovalFile
	entry   string
	argv    []string
	cwd     string
	limits  runtime.Limits // what it will run with
	session string
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
	return d.decide(ctx, j, d.evaluate(ctx, j, j.files, j.argv))
}

// evaluate asks the policy chain about j, with files and argv.
func (d *Daemon) evaluate(ctx context.Context, j judgement, files []program.File, argv []string) policy.Decision {
	return d.policies.Evaluate(ctx, contract.Request{
		Kind: j.kind, Language: cmp.Or(j.as, j.lang.Name()), Files: files, Entry: j.entry, Argv: argv, Cwd: j.cwd, Session: j.session,
		Limits: policyLimits(j.limits), Ceilings: policyLimits(j.lang.Limits()),
	})
}

// decide turns the chain's decision on j into its ruling (see judge).
func (d *Daemon) decide(ctx context.Context, j judgement, dec policy.Decision) (ruling, error) {
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
		Files: j.shown, Question: question, Findings: r.findings, RequestedBy: r.by}
	if q.Files == nil {
		q.Files = approvalFiles(j.files)
	}
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
		j.files, j.entry = p.Files, req.Program.Entry
	}
	r, _ := d.judge(ctx, j)
	return &Validation{Allowed: r.allowed, Findings: r.findings, NeedsApproval: r.question}, nil
}

// judgedChunk is how much of a file the policies see at once: a larger
// one is judged a chunk at a time, each cut at a line's end, so that
// every byte is judged and every finding has its line in the file. (A
// construct that spans lines across a cut, a string opened in one chunk
// and closed in the next, is read apart: see docs/policies.md.)
const judgedChunk = 16 << 20

// SpoolPrefix starts the names of the uploads waiting in state_dir for
// their ruling; what a crash left is removed at the next start.
const SpoolPrefix = "upload-"

// maxSpooled bounds the uploads waiting in state_dir for their ruling at
// once: each holds up to sessions.max_transfer on its disk.
const maxSpooled = 8

// PutFile uploads a file into a session after the policies judged all of
// it, so that a program uploaded and then run meets the same patterns
// and secrets rules as one sent to run. The upload waits in a spool file
// of the state directory while it is judged: nothing of it lands before
// the ruling. metadata replaces the file's.
func (d *Daemon) PutFile(ctx context.Context, id, path string, mode uint32, metadata map[string]string, body io.Reader) (*Written, error) {
	rec, aerr := d.Sessions.Get(id)
	if aerr != nil {
		return nil, aerr
	}
	var findings []state.Finding
	l, ok := d.Languages.Lookup(rec.Language)
	name, perr := sessions.Path(path)
	if ok && perr == nil {
		select {
		case d.spools <- struct{}{}:
			defer func() { <-d.spools }()
		default:
			return nil, errdefs.Errorf(errdefs.PoolExhausted, "%d uploads are being judged at once (or wait for a person's approval): retry when one is done", cap(d.spools))
		}
		spool, err := os.CreateTemp(d.cfg.StateDir, SpoolPrefix+"*")
		if err != nil {
			return nil, fmt.Errorf("spooling the upload: %w", err)
		}
		defer os.Remove(spool.Name())
		defer spool.Close()
		limits := request.KeptLimits(l.Limits(), rec.Limits)
		j := judgement{kind: contract.KindPut, lang: l, session: id, limits: limits, entry: name}
		// One byte over the limit is enough for the session to refuse it.
		r, aerr := d.judgeWhole(ctx, j, program.File{Path: name, Mode: mode}, io.LimitReader(body, d.cfg.Sessions.MaxTransfer+1), spool)
		if aerr != nil {
			return nil, aerr
		}
		if _, err := spool.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("spooling the upload: %w", err)
		}
		body, findings = spool, r.findings
	}
	name, size, aerr := d.Sessions.PutFile(ctx, id, path, mode, metadata, body)
	if aerr != nil {
		return nil, aerr
	}
	return &Written{Path: name, Size: size, Findings: findings}, nil
}

// evaluateWhole asks the policies about j with file's content read from
// r, all of it, a chunk at a time (copied to w, if set), with files
// beside it and argv with the first chunk: each finding has its line in
// the whole file, and the decision covers the file. shown is what a
// person asked about it reads: the file, or the parts around the
// findings of a large one.
func (d *Daemon) evaluateWhole(ctx context.Context, j judgement, argv []string, file program.File, r io.Reader, w io.Writer) (policy.Decision, []state.ApprovalFile, error) {
	chunks := &chunker{r: r, size: judgedChunk}
	merged := policy.Decision{Allowed: true, Findings: []policy.Finding{}}
	var shown []state.ApprovalFile
	lines := 0
	for first := true; ; first = false {
		chunk, last, err := chunks.next()
		if err != nil {
			return merged, nil, errdefs.Errorf(errdefs.Invalid, "reading %s: %v", file.Path, err)
		}
		f := file
		f.Content = chunk
		dec := d.evaluate(ctx, j, append(append([]program.File(nil), j.files...), f), argv)
		argv = nil // judged with the first chunk
		dec = atLine(dec, file.Path, lines)
		switch {
		case first && last && len(chunk) <= approvalFileMax:
			shown = append(shown, state.ApprovalFile{Path: file.Path, Content: strings.ToValidUTF8(string(chunk), "\uFFFD")})
		case len(dec.Findings) > 0 && len(shown) < approvalMaxFiles:
			shown = append(shown, excerpt(file.Path, chunk, lines, dec))
		}
		merged = mergeDecisions(merged, dec)
		if w != nil {
			if _, err := w.Write(chunk); err != nil {
				return merged, nil, fmt.Errorf("spooling %s: %w", file.Path, err)
			}
		}
		lines += bytes.Count(chunk, []byte("\n"))
		if last {
			return merged, shown, nil
		}
	}
}

// judgeWhole judges j with file as evaluateWhole reads it.
func (d *Daemon) judgeWhole(ctx context.Context, j judgement, file program.File, r io.Reader, w io.Writer) (ruling, error) {
	dec, shown, err := d.evaluateWhole(ctx, j, j.argv, file, r, w)
	if err != nil {
		return ruling{}, err
	}
	j.shown = shown
	return d.decide(ctx, j, dec)
}

// excerptContext is how many lines before a finding an excerpt shows.
const excerptContext = 10

// excerpt is the part of a chunk (which begins after offset lines of its
// file) a person reads: from a few lines before the finding a person is
// asked about (or denied for), else the file's first, at most
// approvalFileMax bytes.
func excerpt(path string, chunk []byte, offset int, dec policy.Decision) state.ApprovalFile {
	at := -1 // the file's line of the finding the excerpt shows
	for _, f := range append([]*policy.Finding{dec.Question, dec.Denial}, pointers(dec.Findings)...) {
		if f != nil && f.File == path && f.Line > offset {
			at = f.Line
			break
		}
	}
	first := 0 // the chunk's line (0-based) the excerpt begins at
	if at > 0 {
		first = max(at-offset-1-excerptContext, 0)
	}
	start := 0
	for n := 0; n < first; n++ {
		i := bytes.IndexByte(chunk[start:], '\n')
		if i < 0 {
			break
		}
		start += i + 1
	}
	part := chunk[start:]
	return state.ApprovalFile{Path: path, Content: strings.ToValidUTF8(string(part[:min(len(part), approvalFileMax)]), "\uFFFD"),
		Truncated: start+approvalFileMax < len(chunk), FirstLine: offset + first + 1}
}

func pointers[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// chunker reads a file a chunk at a time: up to size bytes, cut after
// the last line's end when more follows (a line longer than a chunk is
// cut where it must be). It holds no more than a chunk.
type chunker struct {
	r     io.Reader
	size  int
	carry []byte
	eof   bool
}

// next is the next chunk; last says nothing follows it.
func (c *chunker) next() (chunk []byte, last bool, err error) {
	buf := c.carry
	c.carry = nil
	for len(buf) < c.size && !c.eof {
		if cap(buf)-len(buf) < 32<<10 {
			buf = slices.Grow(buf, min(max(len(buf), 64<<10), c.size-len(buf)))
		}
		n, err := c.r.Read(buf[len(buf):min(cap(buf), c.size)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			c.eof = true
		case err != nil:
			return nil, false, err
		}
	}
	if c.eof && len(buf) <= c.size {
		return buf, true, nil
	}
	n := len(buf)
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		n = i + 1
	}
	c.carry = append([]byte(nil), buf[n:]...)
	return buf[:n], false, nil
}

// atLine moves the findings in file of a decision on a part of it that
// begins after offset lines to their lines in the whole file.
func atLine(dec policy.Decision, file string, offset int) policy.Decision {
	move := func(f *policy.Finding) {
		if f != nil && f.File == file && f.Line > 0 {
			f.Line += offset
		}
	}
	for i := range dec.Findings {
		move(&dec.Findings[i])
	}
	move(dec.Denial)
	move(dec.Question)
	return dec
}

// maxMergedFindings bounds the findings of a file judged in chunks, as a
// policy's verdict bounds its own (the denial and the question are kept
// whatever the count).
const maxMergedFindings = 200

// mergeDecisions is the decision on a file of which a and b judged parts:
// denied if either denies, the first denial and question, every finding.
func mergeDecisions(a, b policy.Decision) policy.Decision {
	a.Allowed = a.Allowed && b.Allowed
	a.Findings = append(a.Findings, b.Findings[:min(len(b.Findings), max(0, maxMergedFindings-len(a.Findings)))]...)
	a.Denial = cmp.Or(a.Denial, b.Denial)
	a.Question = cmp.Or(a.Question, b.Question)
	if !a.Allowed {
		a.Question = nil
	}
	return a
}

// Written is an upload as it landed: its path in the workspace, its
// size, and what the policies said of it when they let it through.
type Written struct {
	Path     string
	Size     int64
	Findings []state.Finding
}
