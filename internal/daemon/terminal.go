package daemon

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// DefaultShell is what a terminal runs when the request names nothing:
// without the image's bashrc, whose prompt names a user the sandbox's
// uid is not.
var DefaultShell = []string{"bash", "--norc", "-i"}

// terminalEnv is what a terminal's program sees beyond the session's
// environment: the terminal's type, and for a shell a prompt that says
// where it is.
var terminalEnv = map[string]string{"TERM": "xterm-256color", "PS1": `\w\$ `}

// Terminal runs an interactive command (nil: DefaultShell) in a session,
// beside its other operations.
func (d *Daemon) Terminal(ctx context.Context, id string, argv []string, tty TTY) (*Result, error) {
	if len(argv) == 0 {
		argv = DefaultShell
	}
	tty.Size = orDefaultSize(tty.Size)
	return d.Command(ctx, id, Command{Kind: "terminal", Argv: argv, Env: terminalEnv, TTY: &tty})
}

// Command is a command a session runs beside its other operations for as
// long as it lasts: an interactive terminal, or a process an E2B client
// started and talks to while it runs.
type Command struct {
	Kind  string            // what the history calls it: "terminal", "process"
	Argv  []string          //
	Env   map[string]string // on top of the session's
	Cwd   string            // relative to the workspace; "" is the workspace
	Stdin io.Reader         // nil: an empty stdin; unused on a TTY
	TTY   *TTY              // set: the command runs on a pseudo-terminal
	Out   OutputFunc        // its output as it comes (a TTY's goes to TTY.Out)
	// Started, if set, is called once the policies allowed the command,
	// as it starts.
	Started func()
}

// Command runs c in a session beside its other operations: judged by the
// policies as an exec is, under the session's limits, its deadline the
// session's ceiling, recorded in the history under c.Kind.
func (d *Daemon) Command(ctx context.Context, id string, c Command) (*Result, error) {
	received := time.Now()
	dir, aerr := workDir(c.Cwd)
	if aerr != nil {
		return nil, aerr
	}
	var res *Result
	aerr = d.Sessions.Alongside(ctx, id, func(ss *sessions.Session, sb *runtime.Sandbox) error {
		l, limits := ss.Lang, ss.Limits
		decision, aerr := d.judgeCommand(ctx, sb, judgement{kind: "exec", recordAs: c.Kind, lang: l, argv: c.Argv, cwd: cmp.Or(dir, runtime.Workspace), limits: limits, session: id}, dir)
		if aerr != nil {
			return aerr
		}
		lease, aerr := sessionLease(ss, sb)
		if aerr != nil {
			return aerr
		}
		j := sandbox.Job{Steps: []language.Step{{Name: "run", Argv: c.Argv}}, Env: runtime.EnvList(ss.Record().Env, c.Env), In: c.Stdin, Dir: dir, TTY: c.TTY}
		if c.Started != nil {
			c.Started()
		}
		started := time.Now()
		r, err := lease.Run(ctx, j, limits, c.Out)
		if err != nil {
			return d.records.failed(l.Name(), c.Kind, id, limits,
				d.sandboxFailed("the session's sandbox", fmt.Errorf("%s: %w", c.Kind, err)), principal.Of(ctx))
		}
		r.Session = id
		d.finish(r, c.Kind, l, id, decision, limits, received, started)
		res = r
		return nil
	})
	return res, aerr
}

// RunTerminal is Run with the program on a pseudo-terminal: a person
// answers its prompts. Steps before the run (a compiler's) write to the
// same screen.
func (d *Daemon) RunTerminal(ctx context.Context, req RunRequest, tty TTY) (*Result, error) {
	if len(req.Program.Stdin) > 0 {
		return nil, errdefs.Errorf(errdefs.Invalid, "stdin is the terminal's keys here: send none")
	}
	tty.Size = orDefaultSize(tty.Size)
	return d.run(ctx, req, nil, &tty)
}

func orDefaultSize(s WinSize) WinSize {
	if s.Rows == 0 || s.Cols == 0 {
		return WinSize{Rows: 24, Cols: 80}
	}
	return s
}
