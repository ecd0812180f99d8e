package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// Desktop reports a desktop session's screen: its size, the pointer and
// the windows.
func (c *Client) Desktop(ctx context.Context, id string) (*api.Desktop, error) {
	var d api.Desktop
	return &d, c.call(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/desktop", nil, &d)
}

// DesktopAction does one thing on a desktop session's screen (a click,
// keys, text, ...) and reports the screen after it.
func (c *Client) DesktopAction(ctx context.Context, id string, a api.DesktopAction) (*api.Desktop, error) {
	var d api.Desktop
	return &d, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/desktop/actions", a, &d)
}

// Screenshot is a desktop session's screen, pointer included, as PNG.
func (c *Client) Screenshot(ctx context.Context, id string) ([]byte, error) {
	resp, err := c.doRaw(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/desktop/screenshot", nil, "", "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, decodeError(resp)
	}
	return io.ReadAll(resp.Body)
}

// DesktopPreview is a link that opens a desktop session's live view,
// view-only, to a browser on sandboxd's TCP listener, good for ttl (0: an
// hour).
func (c *Client) DesktopPreview(ctx context.Context, id string, ttl time.Duration) (*api.Preview, error) {
	var p api.Preview
	return &p, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/desktop/preview", api.PreviewRequest{TTL: api.Duration(ttl)}, &p)
}
