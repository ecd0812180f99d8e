package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Terminal WebSocket bounds: the largest frame a client may send (keys,
// a paste, a control message), and how many screen updates may wait for a
// client that reads slowly before the terminal is ended.
const (
	maxTerminalFrame = 64 << 10
	terminalBacklog  = 1024
)

// TerminalControl is a text frame of the terminal WebSocket: "resize"
// from the client; "exit" (with the exit code) or "error" from sandboxd.
type TerminalControl struct {
	Type     string     `json:"type"`
	Rows     uint16     `json:"rows,omitempty"`
	Cols     uint16     `json:"cols,omitempty"`
	ExitCode *int       `json:"exit_code,omitempty"`
	TimedOut bool       `json:"timed_out,omitempty"`
	Error    *api.Error `json:"error,omitempty"`
}

// terminal upgrades to a WebSocket that carries a session terminal:
// binary frames are its bytes both ways, text frames JSON control messages.
func (h *handler) terminal(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size := supervisor.WinSize{Rows: 24, Cols: 80}
	if n, err := strconv.ParseUint(q.Get("rows"), 10, 16); err == nil && n > 0 {
		size.Rows = uint16(n)
	}
	if n, err := strconv.ParseUint(q.Get("cols"), 10, 16); err == nil && n > 0 {
		size.Cols = uint16(n)
	}
	if _, aerr := h.d.Sessions.Get(r.PathValue("id")); aerr != nil {
		writeError(w, aerr) // before the upgrade: a plain error answer
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the client
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxTerminalFrame)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	keys, keysW := io.Pipe()
	resize := make(chan supervisor.WinSize, 8)
	go func() { // the client's frames
		defer keysW.Close()
		for {
			typ, data, err := conn.Read(ctx)
			if err != nil {
				cancel() // gone, or a frame over the limit: the terminal ends
				return
			}
			if typ == websocket.MessageBinary {
				if _, err := keysW.Write(data); err != nil {
					return
				}
				continue
			}
			var c TerminalControl
			if json.Unmarshal(data, &c) == nil && c.Type == "resize" && c.Rows > 0 && c.Cols > 0 {
				select {
				case resize <- supervisor.WinSize{Rows: c.Rows, Cols: c.Cols}:
				default:
				}
			}
		}
	}()
	screen := make(chan []byte, terminalBacklog)
	written := make(chan struct{})
	go func() { // to the client, never holding up the sandbox's connection
		defer close(written)
		for data := range screen {
			wctx, done := context.WithTimeout(ctx, 10*time.Second)
			err := conn.Write(wctx, websocket.MessageBinary, data)
			done()
			if err != nil {
				cancel()
				return
			}
		}
	}()
	res, aerr := h.d.Terminal(ctx, r.PathValue("id"), daemon.Terminal{
		Argv: q["cmd"], Size: size, In: keys, Resize: resize,
		Out: func(data []byte) {
			select {
			case screen <- append([]byte(nil), data...):
			default:
				cancel() // a client that does not read
			}
		},
	})
	close(screen)
	<-written
	end := TerminalControl{Type: "exit"}
	if aerr != nil {
		end = TerminalControl{Type: "error", Error: aerr}
	} else {
		end.ExitCode, end.TimedOut = &res.ExitCode, res.TimedOut
	}
	msg, _ := json.Marshal(end)
	wctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if conn.Write(wctx, websocket.MessageText, msg) == nil {
		conn.Close(websocket.StatusNormalClosure, "")
	}
}
