package wire

import (
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
)

// RunRequest is a run's request as the daemon reads it, its program
// decoded and checked.
func RunRequest(r api.RunRequest) (daemon.RunRequest, error) {
	prog, err := DecodeProgram(r.Code, r.Files, r.Entry, Input{Args: r.Args, Env: r.Env, Stdin: r.Stdin, StdinEncoding: r.StdinEncoding})
	return daemon.RunRequest{Language: r.Language, Program: prog, Timeout: time.Duration(r.Timeout),
		Limits: Limits(r.Limits), Network: Network(r.Network), Secrets: r.Secrets}, err
}

// ExecRequest is an exec's request as the daemon reads it: a command
// (argv, with the request's env and stdin), code for a context, or a
// program, each checked as what it is.
func ExecRequest(r api.ExecRequest) (daemon.ExecRequest, error) {
	out := daemon.ExecRequest{Argv: r.Argv, Context: r.Context, Language: r.Language, Cwd: r.Cwd, Timeout: time.Duration(r.Timeout), Limits: Limits(r.Limits)}
	in := Input{Args: r.Args, Env: r.Env, Stdin: r.Stdin, StdinEncoding: r.StdinEncoding}
	var err error
	switch {
	case r.Context != "" && (len(r.Argv) > 0 || len(r.Files) > 0 || r.Entry != "" || len(r.Args) > 0 || r.Stdin != ""):
		err = errdefs.Errorf(errdefs.Invalid, "an exec in a context takes code alone (no argv, files, entry, args or stdin)")
	case r.Context != "":
		out.Program = request.Program{Code: r.Code, Env: r.Env}
		err = request.CheckEnv(r.Env)
	case len(r.Argv) > 0 && (r.Code != "" || len(r.Files) > 0):
		err = errdefs.Errorf(errdefs.Invalid, "send either argv (a command) or code/files (a program), not both")
	case len(r.Argv) > 0:
		in.Args = r.Argv
		out.Program = request.Program{Env: r.Env}
		out.Program.Stdin, err = DecodeInput(in)
	default:
		if out.Program, err = DecodeProgram(r.Code, r.Files, r.Entry, in); err != nil {
			err = errdefs.Errorf(errdefs.Invalid, "%w (or send argv to run a command)", err)
		}
	}
	return out, err
}

// ValidateRequest is a validation's request as the daemon reads it.
func ValidateRequest(r api.ValidateRequest) (daemon.ValidateRequest, error) {
	out := daemon.ValidateRequest{Language: r.Language, Argv: r.Argv, Timeout: time.Duration(r.Timeout), Limits: Limits(r.Limits)}
	if len(r.Argv) > 0 {
		return out, nil
	}
	var err error
	if out.Program, err = DecodeProgram(r.Code, r.Files, r.Entry, Input{}); err != nil {
		err = errdefs.Errorf(errdefs.Invalid, "%w (or send argv to judge a command)", err)
	}
	return out, err
}

// Validation is what the policies said, as the wire shows it.
func Validation(v daemon.Validation) api.ValidateResult {
	return api.ValidateResult{Allowed: v.Allowed, Findings: All(v.Findings, Finding), NeedsApproval: v.NeedsApproval}
}

// RunResult is an execution's result as the wire shows it: output as
// text, or base64 where it is not UTF-8; times in milliseconds.
func RunResult(r daemon.Result) api.RunResult {
	out := api.RunResult{
		ID: r.ID, Language: r.Language, Session: r.Session, Container: r.Container,
		ExitCode: r.ExitCode, Signal: r.Signal, StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes,
		DurationMS: ms(r.Duration), Warm: r.Warm, TimedOut: r.TimedOut, OOMKilled: r.OOMKilled, Truncated: r.Truncated,
		Stage: r.Stage, Steps: All(r.Steps, step), Error: r.Error,
		Usage: api.Usage(r.Usage), Timings: api.Timings(r.Timings), Findings: All(r.Findings, Finding), Decision: r.Decision,
		Display: All(r.Display, func(d daemon.Display) api.Display { return api.Display(d) }),
		Context: ptr(r.Context, func(c daemon.ContextState) api.ContextState { return api.ContextState(c) }),
		Resumed: r.Resume > 0, ResumeMS: ms(r.Resume),
		Outputs: All(r.Outputs, func(f daemon.OutputFile) api.OutputFile { return api.OutputFile(f) }), OutputsOmitted: r.OutputsOmitted,
		Egress: All(r.Egress, Egress), EgressUnrecorded: r.EgressUnrecorded,
		Approval: ptr(r.Approval, ApprovalOutcome),
	}
	out.Stdout, out.StdoutEncoding = api.EncodeBytes(r.Stdout)
	out.Stderr, out.StderrEncoding = api.EncodeBytes(r.Stderr)
	return out
}

func step(s daemon.Step) api.Step {
	out := api.Step{Name: s.Name, ExitCode: s.ExitCode, TimedOut: s.TimedOut, DurationMS: ms(s.Duration)}
	out.Stderr, out.StderrEncoding = api.EncodeBytes(s.Stderr)
	return out
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Written is an upload as the wire shows it.
func Written(w daemon.Written) api.FileWritten {
	return api.FileWritten{Path: w.Path, Size: w.Size, Findings: All(w.Findings, Finding)}
}

// Secrets are the secret blocks as the wire shows them.
func Secrets(list []daemon.Secret) api.SecretList {
	return api.SecretList{Secrets: All(list, func(s daemon.Secret) api.SecretInfo { return api.SecretInfo(s) })}
}
