package client

import (
	"context"
	"net"
	"net/url"
	"strconv"

	"github.com/coder/websocket"
)

// ConnectPort opens one TCP connection to port on a session's own
// loopback, through sandboxd (the sandbox has no network of its own). The
// connection's reads end with io.EOF when the server closes it, or with a
// *websocket.CloseError whose Reason says why none was made (code 4404:
// nothing listens there). Closing it, or ctx, ends it.
func (c *Client) ConnectPort(ctx context.Context, id string, port int) (net.Conn, error) {
	return c.relay(ctx, "/v1/sessions/"+url.PathEscape(id)+"/ports/"+strconv.Itoa(port)+"/connect")
}

// DesktopLiveView is a connection that speaks VNC (RFB) with a desktop
// session's screen: view-only, or in control of its mouse and keyboard.
// Close it when done.
func (c *Client) DesktopLiveView(ctx context.Context, id string, control bool) (net.Conn, error) {
	return c.relay(ctx, "/v1/sessions/"+url.PathEscape(id)+"/desktop/vnc?control="+strconv.FormatBool(control))
}

// relay dials a WebSocket that carries one TCP connection as binary
// frames.
func (c *Client) relay(ctx context.Context, path string) (net.Conn, error) {
	conn, resp, err := websocket.Dial(ctx, "ws://sandboxd"+path, &websocket.DialOptions{HTTPClient: c.http})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			return nil, decodeError(resp)
		}
		return nil, c.unreachable(ctx, err)
	}
	conn.SetReadLimit(4 << 20)
	return websocket.NetConn(ctx, conn, websocket.MessageBinary), nil
}
