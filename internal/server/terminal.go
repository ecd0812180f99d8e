package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http/httpguts"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// Terminal WebSocket bounds: the largest frame a client may send (keys,
// a paste, a control message) and the run message that opens a one-shot
// terminal (a program's files), and how many screen updates may wait for
// a client that reads slowly before the terminal is ended.
const (
	maxTerminalFrame = 64 << 10
	maxRunFrame      = 16 << 20
	terminalBacklog  = 1024
)

// TerminalControl is a text frame of the terminal WebSocket: "run" (with
// the program) first and "resize" from the client; "exit" (with the exit
// code) or "error" from sandboxd.
type TerminalControl struct {
	Type     string          `json:"type"`
	Run      *api.RunRequest `json:"run,omitempty"`
	Rows     uint16          `json:"rows,omitempty"`
	Cols     uint16          `json:"cols,omitempty"`
	ExitCode *int            `json:"exit_code,omitempty"`
	TimedOut bool            `json:"timed_out,omitempty"`
	Error    *api.Error      `json:"error,omitempty"`
}

// terminal upgrades to a WebSocket that carries a session terminal.
func (h *handler) terminal(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, aerr := h.d.Sessions.Get(id); aerr != nil {
		writeError(w, aerr) // before the upgrade: a plain error answer
		return
	}
	serveTerminal(w, r, nil, func(ctx context.Context, tty daemon.TTY) (*daemon.Result, error) {
		return h.d.Terminal(ctx, id, r.URL.Query()["cmd"], tty)
	})
}

// runTerminal upgrades to a WebSocket that carries a one-shot run on a
// terminal: the client's first frame is {"type":"run","run":{...}}.
func (h *handler) runTerminal(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	first := func(ctx context.Context, conn *websocket.Conn) error {
		conn.SetReadLimit(maxRunFrame)
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return api.Errorf(api.CodeInvalidRequest, "reading the run message: %v", err)
		}
		var c TerminalControl
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if typ != websocket.MessageText || dec.Decode(&c) != nil || c.Type != "run" || c.Run == nil {
			return api.Errorf(api.CodeInvalidRequest, `the first frame is text: {"type":"run","run":{...a run request...}}`)
		}
		req = *c.Run
		return nil
	}
	serveTerminal(w, r, first, func(ctx context.Context, tty daemon.TTY) (*daemon.Result, error) {
		run, err := wire.RunRequest(req)
		if err != nil {
			return nil, err
		}
		return h.d.RunTerminal(ctx, run, tty)
	})
}

// serveTerminal carries a terminal over a WebSocket: binary frames are
// its bytes both ways, text frames JSON control messages. first, if not
// nil, reads what the client sends before the keys; run runs the program.
func serveTerminal(w http.ResponseWriter, r *http.Request, first func(context.Context, *websocket.Conn) error,
	run func(context.Context, daemon.TTY) (*daemon.Result, error)) {
	q := r.URL.Query()
	size := daemon.WinSize{Rows: 24, Cols: 80}
	if n, err := strconv.ParseUint(q.Get("rows"), 10, 16); err == nil && n > 0 {
		size.Rows = uint16(n)
	}
	if n, err := strconv.ParseUint(q.Get("cols"), 10, 16); err == nil && n > 0 {
		size.Cols = uint16(n)
	}
	conn := acceptWebSocket(w, r)
	if conn == nil {
		return
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	end := func(res *daemon.Result, aerr error) {
		msg := TerminalControl{Type: "exit"}
		if aerr != nil {
			msg = TerminalControl{Type: "error", Error: wire.ErrorOf(aerr)}
		} else {
			msg.ExitCode, msg.TimedOut = &res.ExitCode, res.TimedOut
		}
		data, _ := json.Marshal(msg)
		wctx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if conn.Write(wctx, websocket.MessageText, data) == nil {
			conn.Close(websocket.StatusNormalClosure, "")
		}
	}
	if first != nil {
		if aerr := first(ctx, conn); aerr != nil {
			end(nil, aerr)
			return
		}
	}
	conn.SetReadLimit(maxTerminalFrame)

	in := make(chan daemon.TermInput)
	go func() { // the client's frames, keys and resizes in the order they came
		defer close(in)
		for {
			typ, data, err := conn.Read(ctx)
			if err != nil {
				cancel() // gone, or a frame over the limit: the terminal ends
				return
			}
			ev := daemon.TermInput{Keys: data}
			if typ != websocket.MessageBinary {
				var c TerminalControl
				if json.Unmarshal(data, &c) != nil || c.Type != "resize" || c.Rows <= 0 || c.Cols <= 0 {
					continue
				}
				ev = daemon.TermInput{Size: &daemon.WinSize{Rows: c.Rows, Cols: c.Cols}}
			}
			select {
			case in <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	send, flush := toClient(ctx, conn, cancel)
	res, aerr := run(ctx, daemon.TTY{Size: size, In: in, Out: send})
	flush()
	end(res, aerr)
}

// toClient sends binary frames to a WebSocket's client without ever
// holding up the sandbox's connection (see decoupled); a client that does
// not read is cancelled.
func toClient(ctx context.Context, conn *websocket.Conn, cancel context.CancelFunc) (send func([]byte), flush func()) {
	return decoupled(func(data []byte) error {
		wctx, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		return conn.Write(wctx, websocket.MessageBinary, data)
	}, cancel, terminalBacklog)
}

// decoupled hands bytes that come over a sandbox's connection (whose one
// reader carries every exec and forwarded connection of the sandbox) to
// write from a goroutine of its own: up to backlog chunks wait for a
// client that reads slowly, and a client that lets more pile up, or whose
// write fails, is lost (lose ends it). flush waits until what was sent has
// been written.
func decoupled(write func([]byte) error, lose func(), chunks int) (send func([]byte), flush func()) {
	backlog := make(chan []byte, chunks)
	written := make(chan struct{})
	go func() {
		defer close(written)
		for data := range backlog {
			if err := write(data); err != nil {
				lose()
				return
			}
		}
	}()
	send = func(data []byte) {
		select {
		case backlog <- append([]byte(nil), data...):
		default:
			lose() // a client that does not read
		}
	}
	return send, func() { close(backlog); <-written }
}

// acceptWebSocket upgrades r's connection to a WebSocket, or answers and
// returns nil: a request that asks for no upgrade gets 426 with the API's
// error body, as every other refusal has.
func acceptWebSocket(w http.ResponseWriter, r *http.Request) *websocket.Conn {
	if !httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") ||
		!httpguts.HeaderValuesContainsToken(r.Header["Upgrade"], "websocket") {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		writeJSON(w, http.StatusUpgradeRequired, api.ErrorBody{Error: *api.Errorf(api.CodeInvalidRequest,
			"%s %s is a WebSocket: ask with Connection: Upgrade and Upgrade: websocket", r.Method, r.URL.Path)})
		return nil
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil // Accept answered the client
	}
	return conn
}
