package daemon

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// DefaultShell is what a terminal runs when the request names nothing:
// without the image's bashrc, whose prompt names a user the sandbox's
// uid is not.
var DefaultShell = []string{"bash", "--norc", "-i"}

// Terminal is a command on a pseudo-terminal in a session.
type Terminal struct {
	Argv   []string
	Size   supervisor.WinSize
	In     io.Reader                 // the keys
	Out    func(data []byte)         // the screen's bytes, as they come
	Resize <-chan supervisor.WinSize // new window sizes
}

// Terminal runs an interactive command in a session, beside its other
// operations: judged by the policies as an exec is, under the session's
// limits, its deadline the session's ceiling.
func (d *Daemon) Terminal(ctx context.Context, id string, t Terminal) (*api.RunResult, *api.Error) {
	received := time.Now()
	if len(t.Argv) == 0 {
		t.Argv = DefaultShell
	}
	if t.Size.Rows == 0 || t.Size.Cols == 0 {
		t.Size = supervisor.WinSize{Rows: 24, Cols: 80}
	}
	var res *api.RunResult
	aerr := d.Sessions.Alongside(ctx, id, func(ss *sessions.Session, sb *runtime.Sandbox) *api.Error {
		l, limits := ss.Lang, ss.Limits
		decision, aerr := d.judge(ctx, judgement{kind: "exec", lang: l, argv: t.Argv, cwd: runtime.Workspace, limits: limits, session: id})
		if aerr != nil {
			return aerr
		}
		env := append(request.EnvList(nil, ss.Record().Env), "TERM=xterm-256color", `PS1=\w\$ `)
		started := time.Now()
		col := &collector{out: func(_ string, data []byte) { t.Out(data) }}
		last, err := sb.Terminal(ctx, supervisor.ExecRequest{
			Argv: t.Argv, Env: env, TimeoutMS: limits.Timeout.Milliseconds(), OutputLimit: limits.OutputLimit, TTY: &t.Size,
		}, t.In, col.write, t.Resize)
		if err != nil {
			return d.records.failed(l.Name(), "terminal", id, request.APILimits(limits),
				request.ErrorOf(d.sandboxFailed("the session's sandbox", fmt.Errorf("terminal: %w", err))))
		}
		col.add(last)
		r := col.result(last)
		r.Session = id
		d.finish(r, "terminal", l, id, decision, limits, received, started)
		res = r
		return nil
	})
	return res, aerr
}
