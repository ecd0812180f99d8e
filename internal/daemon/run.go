package daemon

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// The request path. A run and a session's exec take the same steps:
//
//	resolve  the language, by name, alias or extension (languages)
//	decode   the program or command, checked once (request)
//	plan     the language plugin says where the code goes and what runs
//	limits   what it will run with, the deadline decided once (request)
//	judge    the policy chain sees exactly that (policy)
//	within   refuse what is above the ceilings
//	lease    a warm container (sandbox), or the session's (sessions)
//	run      write the files and run the steps in it (sandbox.Lease.Run)
//	record   count the outcome and store it in the history

// Run executes a program one-shot in a fresh sandbox: a warm container's,
// made fresh after the run before it (see sandbox.Provider.Acquire).
// out, if not nil, receives output as it happens.
func (d *Daemon) Run(ctx context.Context, req RunRequest, out OutputFunc) (*Result, error) {
	return d.run(ctx, req, out, nil)
}

// run is Run, its program on tty if that is not nil.
func (d *Daemon) run(ctx context.Context, req RunRequest, out OutputFunc, tty *TTY) (*Result, error) {
	if aerr := d.gate.Enter(); aerr != nil {
		return nil, aerr
	}
	defer d.gate.Leave()
	received := time.Now()

	l, aerr := d.Languages.Resolve(req.Language)
	if aerr != nil {
		return nil, aerr
	}
	prog := req.Program
	j, aerr := d.plan(ctx, l, prog, "")
	if aerr != nil {
		return nil, aerr
	}
	j.Env, j.TTY = runtime.EnvList(j.env0, prog.Env), tty
	if tty != nil {
		j.Env = append(j.Env, "TERM="+terminalEnv["TERM"])
	}
	limits, aerr := request.Limits(l.Limits(), units.Duration(req.Timeout), req.Limits)
	if aerr != nil {
		return nil, aerr
	}
	decision, aerr := d.judge(ctx, judgement{kind: "run", lang: l, files: j.Files, entry: prog.Entry, limits: limits, told: tellQueued(out)})
	if aerr != nil {
		return nil, aerr
	}
	ask, aerr := d.ask(l, limits, req, out)
	if aerr != nil {
		return nil, aerr
	}
	j.Env = append(j.Env, runtime.EnvList(sandbox.SecretEnv(ask.Secrets))...)

	// From here on a failure is sandboxd's, and recorded as such.
	failed := func(err error) error {
		return d.records.failed(l.Name(), "run", "", limits, err, principal.Of(ctx))
	}
	lease, err := d.Sandboxes.Acquire(ctx, ask)
	if err != nil {
		return nil, failed(err)
	}
	defer lease.Release()
	acquired := time.Now()
	res, err := lease.Run(ctx, j.Job, limits, out)
	if err != nil {
		d.log.Error("execution failed", "language", l.Name(), "container_id", lease.Container(), "error", err)
		return nil, failed(d.sandboxFailed("the sandbox", err))
	}
	res.Container = lease.Container()
	res.Timings.QueueReason = lease.QueueReason
	d.finish(res, "run", l, "", decision, limits, received, acquired)
	return res, nil
}

// ask is what a run asks of its sandbox: limits within l's ceilings, its
// network within l's, and the secrets it names.
func (d *Daemon) ask(l *languages.Language, limits runtime.Limits, req RunRequest, out OutputFunc) (sandbox.Ask, error) {
	if aerr := request.Within(limits, l.Limits(), l.Name()); aerr != nil {
		return sandbox.Ask{}, aerr
	}
	allow, aerr := l.Narrow(req.Network)
	if aerr != nil {
		return sandbox.Ask{}, aerr
	}
	if n := req.Network; n != nil && (len(n.Deny) > 0 || len(n.Except) > 0 || n.Proxy != nil) {
		return sandbox.Ask{}, errdefs.Errorf(errdefs.Invalid, "network.deny, network.except and network.proxy are for sessions: a run's network is its allow-list alone")
	}
	secrets, aerr := d.Sandboxes.Secrets(l, req.Secrets)
	if aerr != nil {
		return sandbox.Ask{}, aerr
	}
	return sandbox.Ask{Language: l, Limits: limits, Allow: allow, Secrets: secrets, Tell: tellQueued(out)}, nil
}

// tellQueued tells a streaming client what its request waits for, as a
// queued event; nil for a client that does not stream.
func tellQueued(out OutputFunc) func(why string) {
	if out == nil {
		return nil
	}
	return func(why string) { out(Queued, []byte(why)) }
}

// Exec runs a command or a program in a session's workspace.
func (d *Daemon) Exec(ctx context.Context, id string, req ExecRequest, out OutputFunc) (*Result, error) {
	received := time.Now()
	var res *Result
	var resumed time.Duration
	ctx = sessions.OnResume(ctx, func(took time.Duration) { resumed = took })
	use := d.Sessions.Use
	if req.Context != "" {
		use = func(ctx context.Context, id string, fn func(*sessions.Session, *runtime.Sandbox) error) error {
			return d.Sessions.InContext(ctx, id, req.Context, fn)
		}
	}
	aerr := use(ctx, id, func(ss *sessions.Session, sb *runtime.Sandbox) error {
		l := ss.Lang
		switch {
		case req.Context != "":
			// A context of another language runs in the session's
			// sandbox as one of that language's programs would; one that
			// names none runs in the language it was started in.
			cl, aerr := d.Languages.ContextLanguage(l, cmp.Or(req.Language, ss.ContextLanguage(req.Context)))
			if aerr != nil {
				return aerr
			}
			l = cl
		case req.Language != "":
			return errdefs.Errorf(errdefs.Invalid, "language is a context's: name the context too, or leave it out to run in the session's language")
		}
		if req.Limits != nil && (req.Limits.Memory != 0 || req.Limits.CPUs != 0 || req.Limits.Pids != 0) {
			return errdefs.Errorf(errdefs.Invalid, "memory, cpus and pids are the session's: set them when creating it")
		}
		j, entry, aerr := d.execJob(ctx, l, req)
		if aerr != nil {
			return aerr
		}
		j.Env = runtime.EnvList(j.env0, ss.Record().Env)
		if j.Cell == nil { // a cell's env is the cell's alone (supervisor.Cell)
			j.Env = append(j.Env, runtime.EnvList(req.Program.Env)...)
		}
		j.Outputs = sandbox.OutputsDir
		limits, aerr := request.Limits(ss.Limits, units.Duration(req.Timeout), req.Limits)
		if aerr != nil {
			return aerr
		}
		cwd := j.Dir
		if cwd == "" {
			cwd = runtime.Workspace
		}
		jd := judgement{kind: "exec", lang: l, argv: req.Argv, cwd: cwd, limits: limits, session: id, told: tellQueued(out)}
		switch {
		case j.Cell != nil:
			jd.files, jd.entry = []language.File{{Path: entry, Content: []byte(j.Cell.Code)}}, entry
		case len(req.Argv) == 0:
			jd.files, jd.entry = j.Files, entry
		}
		decision, aerr := d.judgeCommand(ctx, sb, jd, j.Dir)
		if aerr != nil {
			return aerr
		}
		if aerr := request.Within(limits, ss.Limits, "session "+id); aerr != nil {
			return aerr
		}
		started := time.Now()
		lease, aerr := sessionLease(ss, sb)
		if aerr != nil {
			return aerr
		}
		r, err := lease.Run(ctx, j.Job, limits, out)
		if err != nil {
			return d.records.failed(l.Name(), "exec", id, limits,
				d.sandboxFailed("the session's sandbox", err), principal.Of(ctx))
		}
		if lost := lease.Lost(); lost != "" {
			d.Sessions.MarkLost(ss, lost)
		}
		r.Session = id
		if r.Context != nil && r.Context.Started {
			ss.StartedContext(r.Context.Name, l.Name())
			if r.Context.Lost == "" && ss.ContextLost(r.Context.Name) {
				r.Context.Lost = ContextsLostByHibernation
			}
		}
		r.Resume = resumed
		d.finish(r, "exec", l, id, decision, limits, received, started)
		ss.Touch(1)
		res = r
		return nil
	})
	return res, aerr
}

// sessionLease is a lease for one job on sb, the sandbox of session ss
// that an operation was given: a Reset beside it may have renewed it
// meanwhile.
func sessionLease(ss *sessions.Session, sb *runtime.Sandbox) (*sandbox.Lease, error) {
	lease := ss.Lease()
	if lease.Sandbox() != sb {
		return nil, errdefs.Errorf(errdefs.Conflict, "session %s's sandbox was renewed or paused meanwhile; retry", ss.Record().ID)
	}
	return lease.ForJob(), nil
}

// sandboxFailed says why a sandbox failed mid-execution: the engine went
// away (runtime_unavailable: retry when it is back) or the sandbox itself
// died (internal). An engine that is shutting down kills its containers
// before it stops answering, so it is asked a few times.
func (d *Daemon) sandboxFailed(which string, err error) error {
	for i := 0; i < engineChecks; i++ {
		if i > 0 {
			time.Sleep(engineCheckEvery)
		}
		ctx, cancel := context.WithTimeout(context.Background(), enginePingTimeout)
		_, perr := d.rt.Ping(ctx)
		cancel()
		if perr != nil {
			return fmt.Errorf("%s failed during the execution: %w", which, perr)
		}
	}
	return fmt.Errorf("%s failed during the execution: %w", which, err)
}

// How long sandboxFailed watches the engine: 3 s, and a ping as long
// again as an engine that a program loaded (a memory bomb under gVisor)
// may take to answer: slow is not gone.
const (
	engineChecks      = 10
	engineCheckEvery  = 300 * time.Millisecond
	enginePingTimeout = 3 * time.Second
)

// planned is a job as planned, before its environment is complete.
type planned struct {
	sandbox.Job
	env0 map[string]string // the plan's own environment
}

// plan asks the language's plugin how to run a program; its files go to
// dir (relative to the workspace; "" is the workspace itself).
func (d *Daemon) plan(ctx context.Context, l *languages.Language, prog request.Program, dir string) (planned, error) {
	plan, err := l.Plugin.Plan(ctx, language.PlanRequest{Code: prog.Code, Files: prog.Files, Entry: prog.Entry, Args: prog.Args})
	switch {
	case err != nil:
		return planned{}, err
	case len(plan.Steps) == 0:
		return planned{}, errdefs.Errorf(errdefs.Internal, "language plugin %q returned a plan with no steps", l.Config.Plugin)
	case prog.Code != "" && plan.CodeFile == "":
		return planned{}, errdefs.Errorf(errdefs.Internal, "language plugin %q did not say where the code goes", l.Config.Plugin)
	}
	if prog.Code != "" {
		if _, err := request.CleanPath(plan.CodeFile); err != nil {
			return planned{}, errdefs.Errorf(errdefs.Internal, "language plugin %q put the code at %v", l.Config.Plugin, err)
		}
	}
	files := prog.WithCode(plan.CodeFile)
	for i, f := range files {
		to, ok := plan.Renames[f.Path]
		if !ok {
			continue
		}
		if _, err := request.CleanPath(to); err != nil {
			return planned{}, errdefs.Errorf(errdefs.Internal, "language plugin %q renamed %s to %v", l.Config.Plugin, f.Path, err)
		}
		files[i].Path = to
	}
	if dir != "" {
		// The program's files go where it runs, so that relative names work.
		rel := strings.TrimPrefix(dir, runtime.Workspace+"/")
		moved := make([]language.File, len(files))
		for i, f := range files {
			f.Path = path.Join(rel, f.Path)
			moved[i] = f
		}
		files = moved
	}
	j := sandbox.Job{Files: files, Steps: plan.Steps, Stdin: prog.Stdin, Dir: dir, Planned: true}
	return planned{Job: j, env0: plan.Env}, nil
}

// execJob turns an exec request into a job: argv as it is, or a program
// planned by the session's language plugin. It returns the program's
// entry, as the request named it.
func (d *Daemon) execJob(ctx context.Context, l *languages.Language, req ExecRequest) (planned, string, error) {
	dir, aerr := workDir(req.Cwd)
	if aerr != nil {
		return planned{}, "", aerr
	}
	switch {
	case req.Context != "":
		return d.cellJob(l, req, dir)
	case len(req.Argv) > 0:
		return planned{Job: sandbox.Job{Steps: []language.Step{{Name: "run", Argv: req.Argv}}, Stdin: req.Program.Stdin, Dir: dir}}, "", nil
	}
	j, aerr := d.plan(ctx, l, req.Program, dir)
	return j, req.Program.Entry, aerr
}

// workDir is the directory a request's cwd (relative to the workspace,
// or under /tmp) names; "" for the workspace itself.
func workDir(cwd string) (string, error) {
	if cwd == "" {
		return "", nil
	}
	rel, aerr := sessions.FilePath(cwd)
	if aerr != nil {
		return "", errdefs.Errorf(errdefs.Invalid, "cwd: %w", aerr)
	}
	switch {
	case rel == ".":
		return "", nil
	case path.IsAbs(rel): // under /tmp
		return rel, nil
	}
	return path.Join(runtime.Workspace, rel), nil
}

// RestartContext ends a session's context, if it runs, and starts it
// afresh, in language ("": the one it was started in, or the session's).
func (d *Daemon) RestartContext(ctx context.Context, id, name, language string) (*sessions.Context, error) {
	if aerr := d.Sessions.EndContext(ctx, id, name); aerr != nil && !errdefs.Is(aerr, errdefs.NotFound) {
		return nil, aerr
	}
	res, aerr := d.Exec(ctx, id, ExecRequest{Context: name, Language: language}, nil)
	if aerr != nil {
		return nil, aerr
	}
	if res.ExitCode != 0 || res.Context == nil || res.Context.Lost != "" {
		return nil, errdefs.Errorf(errdefs.Internal, "context %s did not start: exit %d: %s", name, res.ExitCode, res.Stderr)
	}
	list, aerr := d.Sessions.Contexts(ctx, id)
	if aerr != nil {
		return nil, aerr
	}
	for _, c := range list {
		if c.Name == name {
			return &c, nil
		}
	}
	return nil, errdefs.Errorf(errdefs.Internal, "context %s ended as it started", name)
}

// contextName is what a context may be called.
var contextName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// cellJob turns an exec in a context into a job: the code alone, for the
// language's context kernel. The code is judged as a file of the
// language named after the context.
func (d *Daemon) cellJob(l *languages.Language, req ExecRequest, dir string) (planned, string, error) {
	switch {
	case len(l.Info.ContextCommand) == 0:
		return planned{}, "", errdefs.Errorf(errdefs.Invalid, "language %s has no contexts (its plugin declares no context command); run programs without context", l.Name())
	case !contextName.MatchString(req.Context):
		return planned{}, "", errdefs.Errorf(errdefs.Invalid, "context %q: a name of letters, digits, '.', '_' and '-', up to 64, such as \"main\"", req.Context)
	}
	entry := req.Context
	if exts := l.Info.Extensions; len(exts) > 0 {
		entry += "." + exts[0]
	}
	j := sandbox.Job{Steps: []language.Step{{Name: "run", Argv: l.Info.ContextCommand}}, Dir: dir,
		Cell: &sandbox.Cell{Name: req.Context, Language: l.Name(), Code: req.Program.Code, Env: req.Program.Env}}
	return planned{Job: j}, entry, nil
}

// finish completes a result that ran and records it.
func (d *Daemon) finish(res *Result, kind string, l *languages.Language, session string, decision ruling, limits runtime.Limits, received, started time.Time) {
	finished := time.Now()
	res.ID, res.Language = state.NewID(received), l.Name()
	res.Findings, res.Decision, res.Approval = decision.findings, decisionAllowed, decision.approval
	res.Timings = state.Timings{QueueMS: ms(started.Sub(received)), RunMS: ms(finished.Sub(started)), TotalMS: ms(finished.Sub(received)),
		QueueReason: res.Timings.QueueReason} // the caller's, if it waited on something
	d.records.ran(res, kind, limits, received, decision.by)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
