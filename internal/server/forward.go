package server

import (
	"context"
	"io"
	"net/http"

	"github.com/coder/websocket"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// Close codes of a forwarded connection's WebSocket beyond the normal
// one: nothing listens on the port, or sandboxd refused or failed.
const (
	StatusPortRefused websocket.StatusCode = 4404
	StatusForwardFail websocket.StatusCode = 4500
)

// connectPort upgrades to a WebSocket that carries one TCP connection to
// a port on a session's loopback: binary frames are its bytes both ways.
// The port is read as an integer before anything else (03000 is 3000).
func (h *handler) connectPort(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	port, aerr := portOf(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if _, aerr := h.d.Sessions.Get(id); aerr != nil {
		writeError(w, aerr) // before the upgrade: a plain error answer
		return
	}
	conn := acceptWebSocket(w, r)
	if conn == nil {
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxTerminalFrame)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	in, fromClient := io.Pipe()
	go func() { // the client's bytes; its close is the connection's end of input
		for {
			typ, data, err := conn.Read(ctx)
			if err != nil {
				fromClient.Close()
				return
			}
			if typ == websocket.MessageBinary {
				if _, err := fromClient.Write(data); err != nil {
					return
				}
			}
		}
	}()
	send, flush := toClient(ctx, conn, cancel)
	refused, aerr := h.d.Forward(ctx, id, port, in, send)
	in.Close()
	flush()
	switch {
	case aerr != nil:
		conn.Close(StatusForwardFail, closeReason(wire.ErrorOf(aerr).Error()))
	case refused != "":
		conn.Close(StatusPortRefused, closeReason(refused))
	default:
		conn.Close(websocket.StatusNormalClosure, "")
	}
}

// closeReason fits a close frame's reason (123 bytes at most).
func closeReason(s string) string {
	if len(s) > 123 {
		s = s[:120] + "..."
	}
	return s
}
