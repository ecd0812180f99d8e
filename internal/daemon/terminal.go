package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// DefaultShell is what a terminal runs when the request names nothing:
// without the image's bashrc, whose prompt names a user the sandbox's
// uid is not.
var DefaultShell = []string{"bash", "--norc", "-i"}

// What a terminal's program sees beyond the session's environment: the
// terminal's type, and for a shell a prompt that says where it is.
const (
	termEnv   = "TERM=xterm-256color"
	promptEnv = `PS1=\w\$ `
)

// Terminal runs an interactive command (nil: DefaultShell) in a session,
// beside its other operations: judged by the policies as an exec is,
// under the session's limits, its deadline the session's ceiling.
func (d *Daemon) Terminal(ctx context.Context, id string, argv []string, tty TTY) (*api.RunResult, *api.Error) {
	received := time.Now()
	if len(argv) == 0 {
		argv = DefaultShell
	}
	tty.Size = orDefaultSize(tty.Size)
	var res *api.RunResult
	aerr := d.Sessions.Alongside(ctx, id, func(ss *sessions.Session, sb *runtime.Sandbox) *api.Error {
		l, limits := ss.Lang, ss.Limits
		decision, aerr := d.judge(ctx, judgement{kind: "exec", lang: l, argv: argv, cwd: runtime.Workspace, limits: limits, session: id})
		if aerr != nil {
			return aerr
		}
		j := job{steps: []language.Step{{Name: "run", Argv: argv}}, env: append(request.EnvList(nil, ss.Record().Env), termEnv, promptEnv), tty: &tty}
		started := time.Now()
		r, _, err := execute(ctx, sb, d.Languages.Gate(sb), j, limits, nil)
		if err != nil {
			return d.records.failed(l.Name(), "terminal", id, request.APILimits(limits),
				request.ErrorOf(d.sandboxFailed("the session's sandbox", fmt.Errorf("terminal: %w", err))))
		}
		r.Session = id
		d.finish(r, "terminal", l, id, decision, limits, received, started)
		res = r
		return nil
	})
	return res, aerr
}

// RunTerminal is Run with the program on a pseudo-terminal: a person
// answers its prompts. Steps before the run (a compiler's) write to the
// same screen.
func (d *Daemon) RunTerminal(ctx context.Context, req api.RunRequest, tty TTY) (*api.RunResult, *api.Error) {
	if req.Stdin != "" {
		return nil, api.Errorf(api.CodeInvalidRequest, "stdin is the terminal's keys here: send none")
	}
	tty.Size = orDefaultSize(tty.Size)
	return d.run(ctx, req, nil, &tty)
}

func orDefaultSize(s supervisor.WinSize) supervisor.WinSize {
	if s.Rows == 0 || s.Cols == 0 {
		return supervisor.WinSize{Rows: 24, Cols: 80}
	}
	return s
}
