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
	out, err := d.desktopCommand(ctx, id, screen, desktop.State())
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
	out, err := d.desktopCommand(ctx, id, screen, argv)
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
	png, err := d.desktopCommand(ctx, id, screen, desktop.Screenshot())
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
	if _, err := d.desktopCommand(ctx, id, screen, desktop.LiveView()); err != nil {
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

// desktopCommand runs argv in the session and returns its standard
// output. A screen that does not answer (its session woke from a
// hibernation that kept no processes, or a program ended it) is started
// again, once, and the command tried again.
func (d *Daemon) desktopCommand(ctx context.Context, id string, screen *config.Desktop, argv []string) ([]byte, error) {
	ran := argv
	res, err := d.Command(ctx, id, Command{Kind: "desktop", Argv: ran})
	if err == nil && res.ExitCode != 0 && noDisplay.Match(res.Stderr) {
		ran = desktop.Start(screen.Width, screen.Height)
		if res, err = d.Command(ctx, id, Command{Kind: "desktop", Argv: ran}); err == nil && res.ExitCode == 0 {
			ran = argv
			res, err = d.Command(ctx, id, Command{Kind: "desktop", Argv: ran})
		}
	}
	switch {
	case err != nil:
		return nil, err
	case res.TimedOut:
		return nil, errdefs.Errorf(errdefs.Conflict, "the desktop command %s did not end within the session's timeout: its screen does not answer (a program in the session may have stopped it; a reset starts it again)", ran[0])
	case res.Truncated:
		return nil, errdefs.Errorf(errdefs.TooLarge, "session %s's desktop answered more than its output limit (%d bytes kept): raise the language's limits.output_limit", id, len(res.Stdout))
	case res.ExitCode == desktop.OffScreen && ran[0] == desktop.StateCommand:
		return nil, errdefs.Errorf(errdefs.Invalid, "%s", said(res.Stderr, ""))
	case res.ExitCode != 0 || res.Error != "":
		return nil, errdefs.Errorf(errdefs.Conflict, "the desktop command %s failed (exit %d): %s", ran[0], res.ExitCode, said(res.Stderr, res.Error))
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

// noDisplay is how xdotool ("Can't open display") and scrot ("Can't open
// X display") say that no X server answers.
var noDisplay = regexp.MustCompile(`Can't open (X )?display`)

func parseScreen(out []byte) (*desktop.Screen, error) {
	s, err := desktop.ParseScreen(out)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	return s, nil
}
