package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
)

// Screen is a desktop session's screen.
type Screen struct {
	Width   int      `json:"width" jsonschema:"the screen's width in pixels"`
	Height  int      `json:"height" jsonschema:"the screen's height in pixels"`
	CursorX int      `json:"cursor_x" jsonschema:"the pointer's x, from the left"`
	CursorY int      `json:"cursor_y" jsonschema:"the pointer's y, from the top"`
	Focused string   `json:"focused,omitempty" jsonschema:"the id of the window with the keyboard's focus"`
	Windows []Window `json:"windows" jsonschema:"the windows shown"`
}

// Window is a window on a desktop's screen.
type Window struct {
	ID    string `json:"id" jsonschema:"the window's id, for the focus action"`
	Title string `json:"title"`
}

func screen(d *api.Desktop) Screen {
	s := Screen{Width: d.Width, Height: d.Height, CursorX: d.Cursor.X, CursorY: d.Cursor.Y, Focused: d.Focused, Windows: []Window{}}
	for _, w := range d.Windows {
		s.Windows = append(s.Windows, Window(w))
	}
	return s
}

type desktopActionIn struct {
	SessionID  string `json:"session_id" jsonschema:"the id create_session returned, for a session of a language with a desktop"`
	Action     string `json:"action" jsonschema:"move, click, double_click, drag, scroll, type, key, open or focus"`
	X          *int   `json:"x,omitempty" jsonschema:"where the pointer goes first (move, click, double_click, drag's start, scroll); left out: where it is"`
	Y          *int   `json:"y,omitempty"`
	ToX        *int   `json:"to_x,omitempty" jsonschema:"a drag's end"`
	ToY        *int   `json:"to_y,omitempty"`
	Button     string `json:"button,omitempty" jsonschema:"left (default), middle or right"`
	Direction  string `json:"direction,omitempty" jsonschema:"scroll: up, down, left or right"`
	Amount     int    `json:"amount,omitempty" jsonschema:"scroll: wheel clicks (default 3)"`
	Text       string `json:"text,omitempty" jsonschema:"type: the text to type into the focused window, at most 4 KiB"`
	Keys       string `json:"keys,omitempty" jsonschema:"key: a key or chord as xdotool names them (Return, Escape, Tab, BackSpace, ctrl+c, ctrl+shift+t), or several separated by spaces"`
	Target     string `json:"target,omitempty" jsonschema:"open: a URL or a file path to open in Chromium (a file is shown, never run); the page shows a moment after the action returns: look again before acting on it"`
	Window     string `json:"window,omitempty" jsonschema:"focus: a window's id from the screen's windows"`
	Screenshot bool   `json:"screenshot,omitempty" jsonschema:"also return a screenshot taken after the action"`
}

func (t tools) desktopAction(ctx context.Context, _ *mcp.CallToolRequest, in desktopActionIn) (*mcp.CallToolResult, Screen, error) {
	d, err := t.c.DesktopAction(ctx, in.SessionID, api.DesktopAction{Action: in.Action, X: in.X, Y: in.Y, ToX: in.ToX, ToY: in.ToY,
		Button: in.Button, Direction: in.Direction, Amount: in.Amount, Text: in.Text, Keys: in.Keys, Target: in.Target, Window: in.Window})
	if err != nil {
		return nil, Screen{}, failure(err)
	}
	if !in.Screenshot {
		return nil, screen(d), nil
	}
	return t.withScreenshot(ctx, in.SessionID, screen(d))
}

type screenshotIn struct {
	SessionID string `json:"session_id" jsonschema:"the id create_session returned, for a session of a language with a desktop"`
}

func (t tools) desktopScreenshot(ctx context.Context, _ *mcp.CallToolRequest, in screenshotIn) (*mcp.CallToolResult, Screen, error) {
	d, err := t.c.Desktop(ctx, in.SessionID)
	if err != nil {
		return nil, Screen{}, failure(err)
	}
	return t.withScreenshot(ctx, in.SessionID, screen(d))
}

// withScreenshot answers s with the screen as an image beside it.
func (t tools) withScreenshot(ctx context.Context, id string, s Screen) (*mcp.CallToolResult, Screen, error) {
	png, err := t.c.Screenshot(ctx, id)
	if err != nil {
		return nil, Screen{}, failure(err)
	}
	text, _ := json.Marshal(s)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}, &mcp.ImageContent{Data: png, MIMEType: "image/png"}}}, s, nil
}
