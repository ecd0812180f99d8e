package daemon

import (
	"bytes"
	"context"
	"regexp"
	"strings"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/desktop"
	"github.com/sandboxd/sandboxd/internal/errdefs"
)

// The desktop API: each call is a command the session runs beside its
// other operations (judged by the policies and kept in the history as
// kind "desktop", as any command is), in the session's own screen.

// DesktopState reports a desktop session's screen: its size, the pointer
// and the windows.
func (d *Daemon) DesktopState(ctx context.Context, id string) (*desktop.Screen, error) {
	screen, err := d.desktopOf(id)
	if err != nil {
		return nil, err
	}
	out, err := d.desktopCommand(ctx, id, screen, "screen's state", desktop.State())
	if err != nil {
		return nil, err
	}
	return parseScreen(out)
}

// DesktopAction does a on a desktop session's screen, and reports the
// screen after it.
func (d *Daemon) DesktopAction(ctx context.Context, id string, a desktop.Action) (*desktop.Screen, error) {
	screen, err := d.desktopOf(id)
	if err != nil {
		return nil, err
	}
	argv, err := desktop.Command(a)
	if err != nil {
		return nil, err
	}
	out, err := d.desktopCommand(ctx, id, screen, a.Kind+" action", argv)
	if err != nil {
		return nil, err
	}
	return parseScreen(out)
}

// Screenshot is a desktop session's screen, pointer included, as PNG.
func (d *Daemon) Screenshot(ctx context.Context, id string) ([]byte, error) {
	screen, err := d.desktopOf(id)
	if err != nil {
		return nil, err
	}
	png, err := d.desktopCommand(ctx, id, screen, "screenshot", desktop.Screenshot())
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		return nil, errdefs.Errorf(errdefs.Internal, "session %s's screenshot is not a PNG (%d bytes)", id, len(png))
	}
	return png, nil
}

// DesktopLiveView starts a desktop session's live view, once, and says on
// which of its loopback ports VNC serves it: in control, or view-only.
func (d *Daemon) DesktopLiveView(ctx context.Context, id string, control bool) (int, error) {
	screen, err := d.desktopOf(id)
	if err != nil {
		return 0, err
	}
	if _, err := d.desktopCommand(ctx, id, screen, "live view", desktop.LiveView()); err != nil {
		return 0, err
	}
	if control {
		return desktop.ControlPort, nil
	}
	return desktop.ViewPort, nil
}

// HasDesktop says why session id has no desktop, or nil when it has one.
func (d *Daemon) HasDesktop(id string) error {
	_, err := d.desktopOf(id)
	return err
}

// desktopOf is the screen of session id's language, or why it has none.
func (d *Daemon) desktopOf(id string) (*config.Desktop, error) {
	rec, err := d.Sessions.Get(id)
	if err != nil {
		return nil, err
	}
	l, ok := d.Languages.Lookup(rec.Language)
	if !ok || l.Config.Desktop == nil {
		return nil, errdefs.Errorf(errdefs.Invalid, "session %s's language %s has no desktop: create the session with a language that has a desktop block (the shipped `desktop`)", id, rec.Language)
	}
	return l.Config.Desktop, nil
}

// desktopCommand runs argv, the desktop's what, in the session and
// returns its standard output. A screen that does not answer (its session
// woke from a hibernation that kept no processes, or a program ended it)
// is started again, once, and the command tried again.
func (d *Daemon) desktopCommand(ctx context.Context, id string, screen *config.Desktop, what string, argv []string) ([]byte, error) {
	res, err := d.Command(ctx, id, Command{Kind: "desktop", Argv: argv})
	if err == nil && res.ExitCode != 0 && noDisplay.Match(res.Stderr) {
		asked := what
		what = "screen's start"
		if res, err = d.Command(ctx, id, Command{Kind: "desktop", Argv: desktop.Start(screen.Width, screen.Height)}); err == nil && res.ExitCode == 0 {
			what = asked
			res, err = d.Command(ctx, id, Command{Kind: "desktop", Argv: argv})
		}
	}
	switch {
	case err != nil:
		return nil, err
	case res.TimedOut:
		return nil, errdefs.Errorf(errdefs.Conflict, "the desktop's %s did not end within the session's timeout: type less text at once, or the screen does not answer (a program in the session may have stopped it; a reset starts it again)", what)
	case res.Truncated:
		return nil, errdefs.Errorf(errdefs.TooLarge, "session %s's desktop answered more than its output limit (%d bytes kept): raise the language's limits.output_limit", id, len(res.Stdout))
	case res.ExitCode == desktop.OffScreen:
		return nil, errdefs.Errorf(errdefs.Invalid, "%s", said(res.Stderr, ""))
	case res.ExitCode != 0 && badWindow.Match(res.Stderr):
		return nil, errdefs.Errorf(errdefs.NotFound, "no such window on session %s's screen: its windows are in the desktop's state", id)
	case res.ExitCode != 0 || res.Error != "":
		return nil, errdefs.Errorf(errdefs.Conflict, "the desktop's %s failed (exit %d): %s", what, res.ExitCode, said(res.Stderr, res.Error))
	}
	// xdotool skips a key it has no name for, says so and succeeds.
	if m := noKey.FindSubmatch(res.Stderr); m != nil {
		return nil, errdefs.Errorf(errdefs.Invalid, "no key %q (the keys pressed before it were): xdotool names keys as X does, e.g. Return, Tab, Escape, BackSpace, Delete, Home, Page_Down, F5, ctrl+c", m[1])
	}
	return res.Stdout, nil
}

// said is what a desktop command wrote on its standard error (or else
// why it could not start), cut to a line's worth.
func said(stderr []byte, otherwise string) string {
	why := strings.TrimSpace(string(stderr))
	if why == "" {
		why = otherwise
	}
	if len(why) > 500 {
		why = why[:500] + "..."
	}
	return why
}

// What the X tools say on their standard error: that no X server answers
// (xdotool's "Can't open display", scrot's "Can't open X display"), that
// a window id names none, and that a key has no such name.
var (
	noDisplay = regexp.MustCompile(`Can't open (X )?display`)
	badWindow = regexp.MustCompile(`BadWindow`)
	noKey     = regexp.MustCompile(`No such key name '([^']*)'`)
)

func parseScreen(out []byte) (*desktop.Screen, error) {
	s, err := desktop.ParseScreen(out)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	return s, nil
}
