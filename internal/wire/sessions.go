package wire

import (
	"fmt"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/desktop"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/state"
)

// Network is a request's network block as the daemon reads it (nil:
// none, the language's allow-list).
func Network(n *api.Network) *state.Network {
	if n == nil {
		return nil
	}
	return &state.Network{Allow: n.Allow, Deny: n.Deny, Except: n.Except, Proxy: (*state.Proxy)(n.Proxy)}
}

// APINetwork is a session's network as the wire shows it: its proxy's
// password left out.
func APINetwork(n state.Network) api.Network {
	out := api.Network{Allow: n.Allow, Deny: n.Deny, Except: n.Except}
	if p := n.Proxy; p != nil {
		out.Proxy = &api.Proxy{Address: p.Address, Username: p.Username}
	}
	return out
}

// SessionRequest is a request for a session as the daemon reads it.
func SessionRequest(r api.SessionRequest) sessions.Request {
	return sessions.Request{
		Language: r.Language, Limits: (*state.Limits)(r.Limits), Env: r.Env,
		TTL: time.Duration(r.TTL), IdleTimeout: time.Duration(r.IdleTimeout), Project: r.Project,
		Network: Network(r.Network), Secrets: r.Secrets, FromSnapshot: r.FromSnapshot,
	}
}

// ForkRequest is a fork's request as the daemon reads it.
func ForkRequest(r api.ForkRequest) sessions.ForkRequest {
	return sessions.ForkRequest{Count: r.Count, Name: r.Name, TTL: time.Duration(r.TTL)}
}

// Forked is what a fork made as the wire shows it.
func Forked(f sessions.Forked) api.ForkResult {
	return api.ForkResult{Snapshot: Snapshot(f.Snapshot), Sessions: All(f.Sessions, Session)}
}

// FileEntry is a file of a workspace as the wire shows it.
func FileEntry(e sessions.Entry) api.FileEntry {
	return api.FileEntry{
		Path: e.Path, Type: e.Type, Size: e.Size, Mode: fmt.Sprintf("%04o", e.Mode&0o7777),
		ModTime: time.Unix(0, e.ModTime).UTC(), Target: e.Target, Metadata: e.Metadata,
	}
}

// FileEvent is a change in a workspace as the wire shows it.
func FileEvent(e sessions.FileEvent) api.FileEvent { return api.FileEvent(e) }

// Context is a session's context as the wire shows it.
func Context(c sessions.Context) api.Context {
	return api.Context{Name: c.Name, Language: c.Language, PID: c.PID, StartedAt: time.Unix(0, c.StartedAt).UTC(), Executions: c.Executions, RSSBytes: c.RSSBytes}
}

// Port is a listening port as the wire shows it.
func Port(p sessions.Port) api.Port { return api.Port(p) }

// Limits are a request's limits as the daemon reads them (nil: none
// asked, the ceilings').
func Limits(l *api.Limits) *state.Limits { return (*state.Limits)(l) }

// Desktop is a desktop session's screen on the wire.
func Desktop(s desktop.Screen) api.Desktop {
	out := api.Desktop{Width: s.Width, Height: s.Height, Cursor: api.Point{X: s.CursorX, Y: s.CursorY}, Focused: s.Focused, Windows: []api.DesktopWindow{}}
	for _, w := range s.Windows {
		out.Windows = append(out.Windows, api.DesktopWindow(w))
	}
	return out
}

// DesktopAction is an action on a desktop's screen as the daemon reads it.
func DesktopAction(a api.DesktopAction) desktop.Action {
	return desktop.Action{Kind: a.Action, X: a.X, Y: a.Y, ToX: a.ToX, ToY: a.ToY, Button: a.Button,
		Direction: a.Direction, Amount: a.Amount, Text: a.Text, Keys: a.Keys, Target: a.Target, Window: a.Window}
}
