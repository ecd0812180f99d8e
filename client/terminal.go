package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"

	"github.com/coder/websocket"

	"github.com/sandboxd/sandboxd/api"
)

// TerminalEnd is how a terminal ended.
type TerminalEnd struct {
	ExitCode int
	TimedOut bool
}

// Terminal is an interactive terminal in a session: write keys to it,
// read the screen's bytes from it, Resize it; Wait says how it ended.
type Terminal struct {
	conn   *websocket.Conn
	ctx    context.Context
	screen *io.PipeReader
	end    chan struct{}
	mu     sync.Mutex
	result TerminalEnd
	err    error
}

// Terminal opens a terminal running argv (nil: the daemon's shell) in a
// session, rows by cols.
func (c *Client) Terminal(ctx context.Context, session string, argv []string, rows, cols int) (*Terminal, error) {
	q := url.Values{"cmd": argv}
	return c.terminal(ctx, "/v1/sessions/"+url.PathEscape(session)+"/terminal", q, rows, cols, nil)
}

// RunTerminal runs a program once on a terminal, rows by cols: what the
// program reads is what is written to the Terminal (req.Stdin is not
// allowed).
func (c *Client) RunTerminal(ctx context.Context, req api.RunRequest, rows, cols int) (*Terminal, error) {
	first, err := json.Marshal(map[string]any{"type": "run", "run": req})
	if err != nil {
		return nil, err
	}
	return c.terminal(ctx, "/v1/run/terminal", url.Values{}, rows, cols, first)
}

// terminal dials a terminal WebSocket and sends first, if any, before
// the keys.
func (c *Client) terminal(ctx context.Context, path string, q url.Values, rows, cols int, first []byte) (*Terminal, error) {
	q.Set("rows", strconv.Itoa(rows))
	q.Set("cols", strconv.Itoa(cols))
	conn, resp, err := websocket.Dial(ctx, "ws://sandboxd"+path+"?"+q.Encode(), &websocket.DialOptions{HTTPClient: c.http})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			return nil, decodeError(resp)
		}
		return nil, c.unreachable(ctx, err)
	}
	conn.SetReadLimit(1 << 20)
	if first != nil {
		if err := conn.Write(ctx, websocket.MessageText, first); err != nil {
			conn.CloseNow()
			return nil, c.unreachable(ctx, err)
		}
	}
	pr, pw := io.Pipe()
	t := &Terminal{conn: conn, ctx: ctx, screen: pr, end: make(chan struct{})}
	go t.read(pw)
	return t, nil
}

// read delivers the screen's bytes and the end message.
func (t *Terminal) read(screen *io.PipeWriter) {
	defer close(t.end)
	defer screen.Close()
	for {
		typ, data, err := t.conn.Read(t.ctx)
		if err != nil {
			t.mu.Lock()
			if t.err == nil && websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.err = fmt.Errorf("terminal connection: %w", err)
			}
			t.mu.Unlock()
			return
		}
		if typ == websocket.MessageBinary {
			if _, err := screen.Write(data); err != nil {
				return
			}
			continue
		}
		var m struct {
			Type     string     `json:"type"`
			ExitCode *int       `json:"exit_code"`
			TimedOut bool       `json:"timed_out"`
			Error    *api.Error `json:"error"`
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		t.mu.Lock()
		switch {
		case m.Type == "exit" && m.ExitCode != nil:
			t.result = TerminalEnd{ExitCode: *m.ExitCode, TimedOut: m.TimedOut}
		case m.Type == "error" && m.Error != nil:
			t.err = m.Error
		}
		t.mu.Unlock()
	}
}

// Read reads the screen's bytes.
func (t *Terminal) Read(p []byte) (int, error) { return t.screen.Read(p) }

// Write sends keys.
func (t *Terminal) Write(p []byte) (int, error) {
	if err := t.conn.Write(t.ctx, websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize tells the terminal its window's new size.
func (t *Terminal) Resize(rows, cols int) error {
	msg, _ := json.Marshal(map[string]any{"type": "resize", "rows": rows, "cols": cols})
	return t.conn.Write(t.ctx, websocket.MessageText, msg)
}

// Wait waits for the command to end and says how.
func (t *Terminal) Wait() (TerminalEnd, error) {
	<-t.end
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil && t.result == (TerminalEnd{}) && t.ctx.Err() != nil {
		return t.result, t.ctx.Err()
	}
	return t.result, t.err
}

// Close ends the terminal's connection (and so the command).
func (t *Terminal) Close() error { return t.conn.CloseNow() }
