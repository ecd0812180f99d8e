package service

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Request bounds, beyond the operator's limits.
const (
	maxFiles    = 1000
	maxArgs     = 1000
	maxEnv      = 1000
	maxPathLen  = 4096
	maxArgBytes = 1 << 20
)

// OutputFunc receives a program's output as it is produced.
type OutputFunc func(stream string, data []byte)

// Run executes a program one-shot in a fresh warm container, which is
// destroyed afterwards. out, if not nil, receives output as it happens.
func (s *Service) Run(ctx context.Context, req api.RunRequest, out OutputFunc) (*api.RunResult, *api.Error) {
	if aerr := s.enter(); aerr != nil {
		return nil, aerr
	}
	defer s.leave()

	received := time.Now()
	l, aerr := s.resolve(req.Language)
	if aerr != nil {
		return nil, aerr
	}
	prog, aerr := decodeProgram(req)
	if aerr != nil {
		return nil, aerr
	}
	plan, aerr := s.plan(ctx, l, prog)
	if aerr != nil {
		return nil, aerr
	}
	decision, aerr := s.judge(ctx, judgement{kind: "run", lang: l, files: plan.Files, entry: prog.plan.Entry, timeout: req.Timeout, limits: req.Limits})
	if aerr != nil {
		return nil, aerr
	}
	limits, aerr := effectiveLimits(l.cfg.Name, l.cfg.Limits, req.Timeout, req.Limits)
	if aerr != nil {
		return nil, aerr
	}

	if err := s.ready(ctx, l); err != nil {
		return nil, errorFor(err)
	}
	sb, err := l.pool.Acquire(ctx)
	if err != nil {
		return nil, errorFor(err)
	}
	defer l.pool.Release(sb)
	acquired := time.Now()
	if lowered(limits, l.cfg.Limits) {
		if err := s.rt.Update(ctx, sb.ID, runtimeLimits(limits)); err != nil {
			return nil, errorFor(err)
		}
	}

	res := &api.RunResult{ID: state.NewID(received), Language: l.cfg.Name, Findings: decision.Findings, Decision: api.DecisionAllowed}
	col := &collector{out: out}
	exec, stage, err := runSteps(ctx, sb, plan, prog.stdin, envList(plan.Env, req.Env), limits, "", true, col)
	finished := time.Now()
	if err != nil {
		s.count(l.cfg.Name, "run", "error", nil)
		s.log.Error("execution failed", "language", l.cfg.Name, "container_id", sb.ID[:12], "error", err)
		return nil, errorFor(fmt.Errorf("the sandbox failed during the execution: %w", err))
	}
	fillResult(res, exec, stage, col, limits)
	res.Timings = api.Timings{
		QueueMS: ms(acquired.Sub(received)),
		RunMS:   ms(finished.Sub(acquired)),
		TotalMS: ms(finished.Sub(received)),
	}
	s.count(l.cfg.Name, "run", outcome(res), &res.Timings)
	s.record(res, "run", limits, received)
	return res, nil
}

// plan asks the language's plugin how to run a program.
func (s *Service) plan(ctx context.Context, l *lang, prog program) (language.Plan, *api.Error) {
	plan, err := l.plugin.Plan(ctx, prog.plan)
	if err != nil {
		return plan, errorFor(err)
	}
	if len(plan.Steps) == 0 {
		return plan, apiErr(api.CodeInternal, "language plugin %q returned a plan with no steps", l.cfg.Plugin)
	}
	return plan, nil
}

// envList turns environment maps into KEY=VALUE pairs, later maps winning.
func envList(maps ...map[string]string) []string {
	var env []string
	for _, m := range maps {
		for k, v := range m {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runSteps runs the plan's steps in order; the first to fail ends the run.
// Every step shares the one deadline. killOnExit ends whatever a step
// leaves running (one-shot runs); sessions keep background processes.
func runSteps(ctx context.Context, sb *runtime.Sandbox, plan language.Plan, stdin []byte, env []string, limits config.Limits, dir string, killOnExit bool, col *collector) (supervisor.ExecResult, string, error) {
	files := make([]supervisor.File, len(plan.Files))
	for i, f := range plan.Files {
		files[i] = supervisor.File{Path: f.Path, Data: f.Content, Mode: f.Mode}
	}
	deadline := time.Now().Add(limits.Timeout)
	var res supervisor.ExecResult
	for i, step := range plan.Steps {
		last := i == len(plan.Steps)-1
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return supervisor.ExecResult{TimedOut: true, ExitCode: 124}, step.Name, nil
		}
		req := supervisor.ExecRequest{
			Argv: step.Argv, Dir: dir, Env: env, TimeoutMS: max(remaining.Milliseconds(), 1),
			OutputLimit: limits.OutputLimit, KillOnExit: killOnExit,
		}
		if i == 0 {
			req.Files = files
		}
		var in io.Reader
		if last && len(stdin) > 0 {
			in = bytes.NewReader(stdin)
		}
		var err error
		mark := col.bufs[1].Len()
		res, err = sb.Exec(ctx, req, in, col.write)
		if err != nil {
			return res, step.Name, err
		}
		col.add(res)
		if len(plan.Steps) > 1 {
			st := api.Step{Name: step.Name, ExitCode: res.ExitCode, TimedOut: res.TimedOut, DurationMS: float64(res.DurationUS) / 1000}
			st.Stderr, st.StderrEncoding = encodeText(col.bufs[1].Bytes()[mark:])
			col.steps = append(col.steps, st)
		}
		if last || res.ExitCode != 0 || res.TimedOut || res.StartError != "" {
			return res, step.Name, nil
		}
	}
	return res, "", nil
}

func fillResult(res *api.RunResult, exec supervisor.ExecResult, stage string, col *collector, limits config.Limits) {
	res.ExitCode, res.Signal = exec.ExitCode, exec.Signal
	res.TimedOut, res.OOMKilled = exec.TimedOut, exec.OOMKilled
	res.Truncated = col.truncated
	res.StdoutBytes, res.StderrBytes = col.totals[0], col.totals[1]
	res.Stdout, res.StdoutEncoding = encodeText(col.bufs[0].Bytes())
	res.Stderr, res.StderrEncoding = encodeText(col.bufs[1].Bytes())
	res.DurationMS = float64(col.durationUS) / 1000
	res.Error = exec.StartError
	res.Steps = col.steps
	res.Usage = api.Usage{
		CPUUserMS: float64(col.userUS) / 1000, CPUSysMS: float64(col.sysUS) / 1000, MaxRSSBytes: col.maxRSS,
	}
	if stage != "run" {
		res.Stage = stage
	}
}

// collector gathers a run's output and usage across its steps.
type collector struct {
	out        OutputFunc
	bufs       [2]bytes.Buffer
	totals     [2]int64
	truncated  bool
	steps      []api.Step
	durationUS int64
	userUS     int64
	sysUS      int64
	maxRSS     int64
}

func (c *collector) write(stream string, data []byte) {
	i := 0
	if stream == supervisor.Stderr {
		i = 1
	}
	c.bufs[i].Write(data)
	if c.out != nil {
		c.out(stream, data)
	}
}

func (c *collector) add(r supervisor.ExecResult) {
	c.totals[0] += r.StdoutBytes
	c.totals[1] += r.StderrBytes
	c.truncated = c.truncated || r.Truncated
	c.durationUS += r.DurationUS
	c.userUS += r.UserUS
	c.sysUS += r.SysUS
	c.maxRSS = max(c.maxRSS, r.MaxRSSBytes)
}

// encodeText returns valid UTF-8 as is and anything else as base64.
func encodeText(b []byte) (string, string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), api.EncodingBase64
}

func outcome(r *api.RunResult) string {
	switch {
	case r.TimedOut:
		return "timeout"
	case r.OOMKilled:
		return "oom"
	case r.ExitCode != 0:
		return "nonzero"
	}
	return "ok"
}

// count records an execution's outcome; timings is nil for one that never
// ran to the end.
func (s *Service) count(language, kind, outcome string, timings *api.Timings) {
	s.metrics.Executed(language, kind, outcome, timings)
	s.executions.Add(1)
	s.outcomesMu.Lock()
	s.outcomes[outcome]++
	s.outcomesMu.Unlock()
}

// record stores an execution that ran.
func (s *Service) record(r *api.RunResult, kind string, limits config.Limits, started time.Time) {
	s.recordExecution(api.Execution{
		ID: r.ID, Kind: kind, Language: r.Language, Session: r.Session, StartedAt: started.UTC(),
		ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, OOMKilled: r.OOMKilled,
		Truncated: r.Truncated, StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes,
		Limits: apiLimits(limits), Usage: r.Usage, Timings: r.Timings, Error: r.Error,
		Decision: r.Decision, Findings: r.Findings,
	})
}

// recordExecution stores an execution in the background: the caller has
// its answer already, and bbolt batches concurrent records into one fsync.
func (s *Service) recordExecution(e api.Execution) {
	s.records.Add(1)
	go func() {
		defer s.records.Done()
		if err := s.store.RecordExecution(e); err != nil {
			s.log.Error("recording an execution failed", "id", e.ID, "error", err)
		}
	}()
}

// program is a request's program, decoded and checked.
type program struct {
	plan  language.PlanRequest
	stdin []byte
}

func decodeProgram(req api.RunRequest) (program, *api.Error) {
	var p program
	if req.Code == "" && len(req.Files) == 0 {
		return p, apiErr(api.CodeInvalidRequest, "send the program as \"code\" or as \"files\"")
	}
	stdin, aerr := decodeInput(req.Args, req.Env, req.Stdin, req.StdinEncoding)
	if aerr != nil {
		return p, aerr
	}
	p.stdin = stdin
	if len(req.Files) > maxFiles {
		return p, apiErr(api.CodeInvalidRequest, "%d files: at most %d", len(req.Files), maxFiles)
	}
	p.plan = language.PlanRequest{Code: req.Code, Entry: req.Entry, Args: req.Args}
	for i, f := range req.Files {
		name, err := cleanPath(f.Path)
		if err != nil {
			return p, apiErr(api.CodeInvalidRequest, "files[%d].path: %v", i, err)
		}
		data, err := decodeBytes(f.Content, f.Encoding)
		if err != nil {
			return p, apiErr(api.CodeInvalidRequest, "files[%d] (%s): %v", i, name, err)
		}
		if f.Mode > 0o777 {
			return p, apiErr(api.CodeInvalidRequest, "files[%d].mode %o: only permission bits (at most 0777)", i, f.Mode)
		}
		p.plan.Files = append(p.plan.Files, language.File{Path: name, Content: data, Mode: f.Mode})
	}
	if req.Entry != "" {
		entry, err := cleanPath(req.Entry)
		if err != nil {
			return p, apiErr(api.CodeInvalidRequest, "entry: %v", err)
		}
		p.plan.Entry = entry
	}
	return p, nil
}

// decodeInput checks what a program or command is given (arguments and
// environment) and decodes its stdin.
func decodeInput(args []string, env map[string]string, stdin, encoding string) ([]byte, *api.Error) {
	if aerr := checkEnv(env); aerr != nil {
		return nil, aerr
	}
	if len(args) > maxArgs {
		return nil, apiErr(api.CodeInvalidRequest, "%d args: at most %d", len(args), maxArgs)
	}
	size := 0
	for _, a := range args {
		size += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return nil, apiErr(api.CodeInvalidRequest, "args may not contain NUL bytes")
		}
	}
	if size > maxArgBytes {
		return nil, apiErr(api.CodeInvalidRequest, "args total %d bytes: at most %d", size, maxArgBytes)
	}
	data, err := decodeBytes(stdin, encoding)
	if err != nil {
		return nil, apiErr(api.CodeInvalidRequest, "stdin: %v", err)
	}
	return data, nil
}

func checkEnv(env map[string]string) *api.Error {
	if len(env) > maxEnv {
		return apiErr(api.CodeInvalidRequest, "%d env entries: at most %d", len(env), maxEnv)
	}
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return apiErr(api.CodeInvalidRequest, "env %q: names are non-empty without '=' or NUL, values without NUL", k)
		}
	}
	return nil
}

// cleanPath accepts a relative path that stays inside the workspace.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty")
	case len(p) > maxPathLen:
		return "", fmt.Errorf("longer than %d bytes", maxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New("contains a NUL byte")
	case path.IsAbs(p):
		return "", fmt.Errorf("%q is absolute: paths are relative to /workspace", p)
	}
	clean := path.Clean(p)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q leaves the workspace", p)
	}
	return clean, nil
}

func decodeBytes(s, encoding string) ([]byte, error) {
	switch encoding {
	case "", api.EncodingUTF8:
		return []byte(s), nil
	case api.EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not valid base64: %v", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("encoding %q: use \"utf-8\" (default) or \"base64\"", encoding)
}

// effectiveLimits applies a request's limits under ceilings (a language's
// or a session's, named by what): lower is fine, higher is an error that
// names the ceiling. timeout is the request's top-level one, if any.
func effectiveLimits(what string, ceil config.Limits, timeout api.Duration, asked *api.Limits) (config.Limits, *api.Error) {
	eff := ceil
	var rl api.Limits
	if asked != nil {
		rl = *asked
	}
	if timeout == 0 {
		timeout = rl.Timeout
	}
	// lower returns the asked value, or the ceiling when nothing was asked.
	lower := func(name string, asked, ceiling, minimum int64, show func(int64) string) (int64, *api.Error) {
		switch {
		case asked == 0:
			return ceiling, nil
		case asked < 0:
			return 0, apiErr(api.CodeInvalidRequest, "%s must not be negative", name)
		case asked > ceiling:
			return 0, apiErr(api.CodeInvalidRequest, "%s %s is above the ceiling %s for %s (raise it in sandboxd.hcl)", name, show(asked), show(ceiling), what)
		case asked < minimum:
			return 0, apiErr(api.CodeInvalidRequest, "%s %s is below the minimum %s", name, show(asked), show(minimum))
		}
		return asked, nil
	}
	dur := func(n int64) string { return time.Duration(n).String() }
	size := func(n int64) string { return api.ByteSize(n).String() }
	num := func(n int64) string { return fmt.Sprint(n) }
	var t int64
	var err *api.Error
	if t, err = lower("timeout", int64(timeout), int64(eff.Timeout), int64(time.Millisecond), dur); err != nil {
		return eff, err
	}
	eff.Timeout = time.Duration(t)
	if eff.Memory, err = lower("memory", int64(rl.Memory), eff.Memory, 16<<20, size); err != nil {
		return eff, err
	}
	if eff.Pids, err = lower("pids", rl.Pids, eff.Pids, 8, num); err != nil {
		return eff, err
	}
	if eff.OutputLimit, err = lower("output_limit", int64(rl.OutputLimit), eff.OutputLimit, 1, size); err != nil {
		return eff, err
	}
	if rl.CPUs < 0 || rl.CPUs > eff.CPUs {
		return eff, apiErr(api.CodeInvalidRequest, "cpus %g must be between 0.01 and the ceiling %g for %s", rl.CPUs, eff.CPUs, what)
	}
	if rl.CPUs > 0 {
		eff.CPUs = max(rl.CPUs, 0.01)
	}
	return eff, nil
}

// lowered reports whether a container made for ceil needs its limits
// updated to run under eff.
func lowered(eff, ceil config.Limits) bool {
	return eff.Memory != ceil.Memory || eff.CPUs != ceil.CPUs || eff.Pids != ceil.Pids
}

func apiLimits(l config.Limits) api.Limits {
	return api.Limits{
		Timeout: api.Duration(l.Timeout), Memory: api.ByteSize(l.Memory), CPUs: l.CPUs,
		Pids: l.Pids, OutputLimit: api.ByteSize(l.OutputLimit),
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
