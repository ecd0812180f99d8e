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
	path := "/v1/sessions/" + url.PathEscape(id) + "/ports/" + strconv.Itoa(port) + "/connect"
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
