// Package desktop owns what an agent does with a desktop session's screen
// — look at it, point, click, drag, scroll, type, press keys, open a URL
// or file, and move between windows — as the commands of the X tools in
// the session's image (xdotool, scrot, xdg-open, and the image's
// desktop-start and desktop-state), and reads what they answer. It builds
// argument vectors, never shell text: what an agent types reaches xdotool
// as one argument.
package desktop

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sandboxd/sandboxd/internal/errdefs"
)

// Action is one thing done to the screen. Kind says which; the other
// fields are what that kind takes.
type Action struct {
	// Kind: move, click, double_click, drag, scroll, type, key, open or
	// focus.
	Kind string
	// X and Y are where the pointer goes first (move, click, drag's start,
	// scroll); nil: where it is.
	X, Y *int
	// ToX and ToY are a drag's end.
	ToX, ToY *int
	Button   string // left (the default), right or middle
	// Direction (up, down, left, right) and Amount (in wheel clicks, 3 by
	// default) are a scroll's.
	Direction string
	Amount    int
	Text      string // what type types
	// Keys are key's, as xdotool names them: one chord ("ctrl+c",
	// "Return") or several, separated by spaces.
	Keys   string
	Target string // a URL or a path open opens
	Window string // the window focus raises, by its id
}

// Screen is what desktop-state reports: the screen's size, the pointer,
// the focused window and the windows shown.
type Screen struct {
	Width, Height    int
	CursorX, CursorY int
	Focused          string // a window id; "" when none has the focus
	Windows          []Window
}

// Window is one window on the screen.
type Window struct {
	ID, Title string
}

// The image's commands: desktop-start starts the screen and its desktop
// once; desktop-state runs its arguments (if any) and then reports the
// screen as ParseScreen reads it.
const (
	StartCommand = "desktop-start"
	StateCommand = "desktop-state"
)

// MaxText bounds what one type action types: about 15 s of keystrokes,
// within a session's usual timeout. MaxTarget bounds what an open action
// opens.
const (
	MaxText   = 4 << 10
	MaxTarget = 8 << 10
)

// typeDelayMS is xdotool's pause between two keystrokes: none at all
// loses keys in some applications (Chromium's fields among them).
const typeDelayMS = "4"

var (
	buttons    = map[string]string{"": "1", "left": "1", "middle": "2", "right": "3"}
	wheel      = map[string]string{"up": "4", "down": "5", "left": "6", "right": "7"}
	keyName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_]*(\+[A-Za-z0-9][A-Za-z0-9_]*)*$`)
	windowID   = regexp.MustCompile(`^[0-9]{1,12}$`)
	maxKeys    = 32
	maxScrolls = 100
	// xdotoolCommands are xdotool's commands (`xdotool help`, and those of
	// later versions). xdotool ends a key command's keys at the first word
	// that names one, in any case, and runs it: "shift exec mount" would
	// run mount, out of the policies' sight. None is a key's name.
	xdotoolCommands = map[string]bool{}
)

func init() {
	for _, c := range strings.Fields(`getactivewindow getwindowfocus getwindowname getwindowpid getwindowgeometry
		getwindowclassname getdisplaygeometry search selectwindow help version behave behave_screen_edge click
		getmouselocation key keydown keyup mousedown mousemove mousemove_relative mouseup set_window type
		windowactivate windowfocus windowkill windowclose windowquit windowstate windowmap windowminimize windowmove
		windowraise windowreparent windowsize windowunmap set_num_desktops get_num_desktops set_desktop get_desktop
		set_desktop_for_window get_desktop_for_window get_desktop_viewport set_desktop_viewport exec sleep`) {
		xdotoolCommands[c] = true
	}
}

// The live view's ports on the sandbox's own loopback (desktop-vnc's):
// VNC in control and view-only, and noVNC's page for the view-only one.
const (
	ControlPort = 5910
	ViewPort    = 5911
	PagePort    = 6081
)

// LiveView is the command that starts the live view's servers, once.
func LiveView() []string { return []string{"desktop-vnc"} }

// Start is the command that starts a screen of the size given.
func Start(width, height int) []string {
	return []string{StartCommand, fmt.Sprintf("%dx%d", width, height)}
}

// State is the command that reports the screen.
func State() []string { return []string{StateCommand} }

// Screenshot is the command that writes the screen, pointer included, to
// its standard output as PNG.
func Screenshot() []string { return []string{"scrot", "--pointer", "-"} }

// Command is the command that does a and then reports the screen, or an
// invalid-request error that says what is wrong. The points it goes to are
// checked against the screen's size in the sandbox, where the screen is
// (a client may have started it at a size of its own): off it, the
// command exits with OffScreen and says so.
func Command(a Action) ([]string, error) {
	do, points, err := steps(a)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Invalid, "desktop action %q: %v", a.Kind, err)
	}
	argv := []string{StateCommand}
	if len(points) > 0 {
		argv = append(append(append(argv, "--within"), points...), "--")
	}
	return append(argv, do...), nil
}

// OffScreen is desktop-state's exit status for a point off the screen.
const OffScreen = 64

// maxCoordinate bounds a point before the sandbox checks it against its
// screen: the largest screen X has.
const maxCoordinate = 32767

// points gathers the points an action goes to, for desktop-state to
// check against the screen.
type points []string

// at is the move to (x, y), or nothing when neither is given.
func (p *points) at(x, y *int) ([]string, error) {
	if x == nil && y == nil {
		return nil, nil
	}
	if x == nil || y == nil {
		return nil, fmt.Errorf("give both x and y, or neither")
	}
	if *x < 0 || *y < 0 || *x > maxCoordinate || *y > maxCoordinate {
		return nil, fmt.Errorf("(%d, %d) is off any screen", *x, *y)
	}
	*p = append(*p, fmt.Sprintf("%d,%d", *x, *y))
	// Not --sync: it waits for a motion event, which a move to where the
	// pointer already is never makes (15 s, xdotool's timeout). The X
	// server takes one client's requests in order anyway.
	return []string{"mousemove", strconv.Itoa(*x), strconv.Itoa(*y)}, nil
}

func xdotool(parts ...[]string) []string {
	argv := []string{"xdotool"}
	for _, p := range parts {
		argv = append(argv, p...)
	}
	return argv
}

func steps(a Action) ([]string, points, error) {
	var p points
	argv, err := p.steps(a)
	return argv, p, err
}

func (p *points) steps(a Action) ([]string, error) {
	button, ok := buttons[a.Button]
	if !ok {
		return nil, fmt.Errorf("button %q is not left, middle or right", a.Button)
	}
	at := p.at
	switch a.Kind {
	case "move":
		if a.X == nil || a.Y == nil {
			return nil, fmt.Errorf("give x and y")
		}
		move, err := at(a.X, a.Y)
		return xdotool(move), err
	case "click", "double_click":
		move, err := at(a.X, a.Y)
		repeat := "1"
		if a.Kind == "double_click" {
			repeat = "2"
		}
		return xdotool(move, []string{"click", "--repeat", repeat, button}), err
	case "drag":
		if a.X == nil || a.Y == nil || a.ToX == nil || a.ToY == nil {
			return nil, fmt.Errorf("give x and y (the start) and to_x and to_y (the end)")
		}
		from, err := at(a.X, a.Y)
		if err != nil {
			return nil, err
		}
		to, err := at(a.ToX, a.ToY)
		return xdotool(from, []string{"mousedown", button}, to, []string{"mouseup", button}), err
	case "scroll":
		w, ok := wheel[a.Direction]
		if !ok {
			return nil, fmt.Errorf("direction %q is not up, down, left or right", a.Direction)
		}
		amount := a.Amount
		if amount == 0 {
			amount = 3
		}
		if amount < 1 || amount > maxScrolls {
			return nil, fmt.Errorf("amount %d is not from 1 to %d", amount, maxScrolls)
		}
		move, err := at(a.X, a.Y)
		return xdotool(move, []string{"click", "--repeat", strconv.Itoa(amount), w}), err
	case "type":
		switch {
		case a.Text == "":
			return nil, fmt.Errorf("give the text to type")
		case len(a.Text) > MaxText:
			return nil, fmt.Errorf("the text is %d bytes, over %d", len(a.Text), MaxText)
		case !utf8.ValidString(a.Text) || strings.ContainsRune(a.Text, 0):
			return nil, fmt.Errorf("the text must be UTF-8 without NUL")
		}
		return xdotool([]string{"type", "--delay", typeDelayMS, "--", a.Text}), nil
	case "key":
		keys := strings.Fields(a.Keys)
		if len(keys) == 0 || len(keys) > maxKeys {
			return nil, fmt.Errorf("give from 1 to %d keys or chords, such as \"ctrl+c\" or \"Return\"", maxKeys)
		}
		for _, k := range keys {
			if !keyName.MatchString(k) || xdotoolCommands[strings.ToLower(k)] {
				return nil, fmt.Errorf("%q is not a key or chord as xdotool names them (\"ctrl+shift+t\", \"Return\", \"a\")", k)
			}
		}
		return xdotool(append([]string{"key", "--"}, keys...)), nil
	case "open":
		if a.Target == "" || strings.HasPrefix(a.Target, "-") || strings.ContainsAny(a.Target, "\x00\n") || len(a.Target) > MaxTarget {
			return nil, fmt.Errorf("give a URL or a path to open (not starting with -, at most %d bytes)", MaxTarget)
		}
		// In Chromium, not xdg-open: that runs a .desktop file's Exec
		// line, a command no policy sees. Detached, its output dropped:
		// the browser outlives the action (a running one takes the URL
		// over). The target is an argument after --, never shell text.
		return []string{"setsid", "-f", "sh", "-c", `exec chromium -- "$1" >/dev/null 2>&1 </dev/null`, "chromium", a.Target}, nil
	case "focus":
		if !windowID.MatchString(a.Window) {
			return nil, fmt.Errorf("window %q is not a window id (the windows' ids are in the desktop's state)", a.Window)
		}
		return xdotool([]string{"windowactivate", "--sync", a.Window}), nil
	}
	return nil, fmt.Errorf("not one of move, click, double_click, drag, scroll, type, key, open, focus")
}

// ParseScreen reads desktop-state's report: lines of "screen W H",
// "cursor X Y", "focus ID" and "window ID TITLE".
func ParseScreen(out []byte) (*Screen, error) {
	var s Screen
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		word, rest, _ := strings.Cut(sc.Text(), " ")
		switch word {
		case "screen", "cursor":
			a, b, _ := strings.Cut(rest, " ")
			x, err1 := strconv.Atoi(a)
			y, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("the desktop's state: %q", sc.Text())
			}
			if word == "screen" {
				s.Width, s.Height = x, y
				seen |= 1
			} else {
				s.CursorX, s.CursorY = x, y
				seen |= 2
			}
		case "focus":
			if rest != "0" {
				s.Focused = rest
			}
		case "window":
			id, title, _ := strings.Cut(rest, " ")
			s.Windows = append(s.Windows, Window{ID: id, Title: title})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("the desktop's state: %w", err)
	}
	if seen != 3 {
		return nil, fmt.Errorf("the desktop's state has no screen or pointer: %q", out)
	}
	return &s, nil
}
