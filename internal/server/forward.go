package server

import (
	"context"
	"io"
	"net/http"
	"strconv"

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
	h.relay(w, r, id, func() (int, error) { return port, nil })
}

// desktopLiveView upgrades to a WebSocket that carries the VNC protocol
// of a desktop session's screen (what noVNC speaks): view-only, or in
// control with control=true.
func (h *handler) desktopLiveView(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	control, _ := strconv.ParseBool(r.URL.Query().Get("control"))
	if aerr := h.d.HasDesktop(id); aerr != nil {
		writeError(w, aerr) // before the upgrade: a plain error answer
		return
	}
	// The view's servers start once the upgrade is accepted (its Origin
	// checked), not for a request that is refused.
	h.relay(w, r, id, func() (int, error) { return h.d.DesktopLiveView(r.Context(), id, control) })
}

// relay upgrades to a WebSocket and carries one TCP connection to the port
// on session id's loopback that port gives, once the upgrade is accepted.
func (h *handler) relay(w http.ResponseWriter, r *http.Request, id string, port func() (int, error)) {
	conn := acceptWebSocket(w, r)
	if conn == nil {
		return
	}
	defer conn.CloseNow()
	to, aerr := port()
	if aerr != nil {
		conn.Close(StatusForwardFail, closeReason(wire.ErrorOf(aerr).Error()))
		return
	}
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
	refused, aerr := h.d.Forward(ctx, id, to, in, send)
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
