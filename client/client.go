// Package client is the public Go client of sandboxd's v1 API over its Unix
// socket; sandboxctl uses nothing else. Requests and results are the
// types of package api.
//
//	c := client.New("") // $SANDBOXD_SOCKET, else /run/sandboxd/sandboxd.sock
//	res, err := c.Run(ctx, api.RunRequest{Language: "python", Code: "print(6*7)"})
//
// Run and RunStream run a program once in a fresh sandbox; CreateSession
// gives a sandbox of one's own, used with Exec, PutFile, GetFile and
// ListFiles until DeleteSession. API failures come back as *api.Error,
// whose Code is stable (errors.As, then switch on Code; a policy denial
// carries its Findings); a daemon that cannot be reached comes back as
// ErrUnreachable. A Client is safe for concurrent use.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/sandboxd/sandboxd/api"
)

// DefaultSocket is where sandboxd listens unless configured otherwise.
const DefaultSocket = "/run/sandboxd/sandboxd.sock"

// ErrUnreachable means nothing answered on the socket.
var ErrUnreachable = errors.New("sandboxd unreachable")

// Client talks to one sandboxd.
type Client struct {
	socket string
	http   *http.Client
	name   atomic.Pointer[string]
}

// SetName names the client in every request from now on (the
// Sandboxd-Client header: an MCP client's name, an agent framework's),
// for the history and approvals to record as it says.
func (c *Client) SetName(name string) { c.name.Store(&name) }

// New returns a client for the daemon on socket; empty means the
// SANDBOXD_SOCKET environment variable, else DefaultSocket.
func New(socket string) *Client {
	if socket == "" {
		socket = os.Getenv("SANDBOXD_SOCKET")
	}
	if socket == "" {
		socket = DefaultSocket
	}
	dialer := &net.Dialer{}
	return &Client{
		socket: socket,
		http: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "unix", socket)
			},
			MaxIdleConnsPerHost: 16,
		}},
	}
}

// Socket is the socket this client dials.
func (c *Client) Socket() string { return c.socket }

// do sends a JSON body (if any) and returns the response as it is.
func (c *Client) do(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	if body == nil {
		return c.doRaw(ctx, method, path, nil, "", accept)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.doRaw(ctx, method, path, bytes.NewReader(b), "application/json", accept)
}

// doRaw sends body as it is, with its content type.
func (c *Client) doRaw(ctx context.Context, method, path string, body io.Reader, contentType, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://sandboxd"+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if name := c.name.Load(); name != nil {
		req.Header.Set(api.HeaderClient, *name)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.unreachable(ctx, err)
	}
	return resp, nil
}

// unreachable says why a request reached no daemon.
func (c *Client) unreachable(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("%w at %s: permission denied: use it as a member of the socket's group (sudo usermod -aG sandboxd $USER, then log in again) or as root", ErrUnreachable, c.socket)
	}
	return fmt.Errorf("%w at %s: %v (is it running? start it with `make run` or `sandboxd --config sandboxd.hcl`)", ErrUnreachable, c.socket, errors.Unwrap(err))
}

// call sends body and decodes a JSON answer into out (nil: no answer
// expected), or the error body. okStatuses lists non-2xx statuses whose
// body is still out's type.
func (c *Client) call(ctx context.Context, method, path string, body, out any, okStatuses ...int) error {
	resp, err := c.do(ctx, method, path, body, "")
	if err != nil {
		return err
	}
	return readJSON(resp, out, okStatuses...)
}

// readJSON decodes and closes a response.
func readJSON(resp *http.Response, out any, okStatuses ...int) error {
	defer resp.Body.Close()
	ok := resp.StatusCode/100 == 2
	for _, s := range okStatuses {
		ok = ok || resp.StatusCode == s
	}
	if !ok {
		return decodeError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("reading sandboxd's answer to %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

func decodeError(resp *http.Response) error {
	var body api.ErrorBody
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(data, &body); err != nil || body.Error.Code == "" {
		return &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(data))}
	}
	return &body.Error
}

// Health returns the daemon's health; a degraded daemon is not an error.
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var h api.Health
	return &h, c.call(ctx, http.MethodGet, "/v1/health", nil, &h, http.StatusServiceUnavailable)
}

// Languages lists the languages and their pools.
func (c *Client) Languages(ctx context.Context) ([]api.Language, error) {
	var l api.LanguageList
	return l.Languages, c.call(ctx, http.MethodGet, "/v1/languages", nil, &l)
}

// Pools returns each language's warm pool figures (no engine calls).
func (c *Client) Pools(ctx context.Context) (map[string]api.PoolStats, error) {
	var p map[string]api.PoolStats
	return p, c.call(ctx, http.MethodGet, "/v1/pools", nil, &p)
}

// Plugins lists the plugins and their health.
func (c *Client) Plugins(ctx context.Context) ([]api.Plugin, error) {
	var l api.PluginList
	return l.Plugins, c.call(ctx, http.MethodGet, "/v1/plugins", nil, &l)
}

// Stats returns the daemon's counters.
func (c *Client) Stats(ctx context.Context) (*api.Stats, error) {
	var s api.Stats
	return &s, c.call(ctx, http.MethodGet, "/v1/stats", nil, &s)
}

// Secrets lists the secrets sandboxd.hcl defines (names and hosts).
func (c *Client) Secrets(ctx context.Context) ([]api.SecretInfo, error) {
	var list api.SecretList
	err := c.call(ctx, http.MethodGet, "/v1/secrets", nil, &list)
	return list.Secrets, err
}

// Executions lists recorded executions, newest first, those filter
// selects.
func (c *Client) Executions(ctx context.Context, limit int, filter api.ExecutionFilter) ([]api.Execution, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	for k, v := range map[string]string{"language": filter.Language, "session": filter.Session, "kind": filter.Kind, "outcome": filter.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var l api.ExecutionList
	return l.Executions, c.call(ctx, http.MethodGet, "/v1/executions?"+q.Encode(), nil, &l)
}

// DashboardLogin makes a link that signs a browser in to the dashboard's
// TCP listener.
func (c *Client) DashboardLogin(ctx context.Context) (*api.DashboardLogin, error) {
	var l api.DashboardLogin
	return &l, c.call(ctx, http.MethodPost, "/v1/dashboard/login", nil, &l, http.StatusCreated)
}

// Run runs a program and returns its result when it has finished.
func (c *Client) Run(ctx context.Context, req api.RunRequest) (*api.RunResult, error) {
	var res api.RunResult
	return &res, c.call(ctx, http.MethodPost, "/v1/run", req, &res)
}

// RunStream runs a program and calls onEvent for each stdout and stderr
// event as the program produces it; it returns the final result.
func (c *Client) RunStream(ctx context.Context, req api.RunRequest, onEvent func(api.Event)) (*api.RunResult, error) {
	return c.stream(ctx, "/v1/run", req, onEvent)
}

// stream posts req asking for NDJSON and follows the events to the result.
func (c *Client) stream(ctx context.Context, path string, req any, onEvent func(api.Event)) (*api.RunResult, error) {
	return follow(c, ctx, path, req, func(ev api.Event) (*api.RunResult, *api.Error, bool) {
		if ev.Type != api.EventResult && ev.Type != api.EventError {
			onEvent(ev)
			return nil, nil, false
		}
		return ev.Result, ev.Error, true
	})
}

// follow posts req asking for NDJSON and hands each event to each, until
// each says the stream has ended, with a result or an error.
func follow[E, R any](c *Client, ctx context.Context, path string, req any, each func(E) (*R, *api.Error, bool)) (*R, error) {
	resp, err := c.do(ctx, http.MethodPost, path, req, api.ContentTypeNDJSON)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, decodeError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var ev E
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("reading sandboxd's stream: %w", err)
		}
		res, aerr, end := each(ev)
		switch {
		case !end:
			continue
		case aerr != nil:
			return nil, aerr
		case res == nil:
			return nil, errors.New("sandboxd ended the stream without a result")
		}
		return res, nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading sandboxd's stream: %w", err)
	}
	return nil, errors.New("sandboxd closed the stream before the result (did it stop?)")
}

// Validate runs the policies over a program or a command without running
// anything; a request an enforcing policy would deny has Allowed false.
func (c *Client) Validate(ctx context.Context, req api.ValidateRequest) (*api.ValidateResult, error) {
	var res api.ValidateResult
	return &res, c.call(ctx, http.MethodPost, "/v1/validate", req, &res)
}

// BuildImages builds the images of the named languages (all when none):
// each language's image from its Dockerfile, then the image with the
// packages its block lists. progress, if not nil, receives the builds'
// output lines as they come. A failed image is reported in its entry of
// the result, not as an error.
func (c *Client) BuildImages(ctx context.Context, languages []string, progress func(image, line string)) (*api.ImageBuildResult, error) {
	req := api.ImageBuildRequest{Languages: languages}
	if progress == nil {
		var res api.ImageBuildResult
		return &res, c.call(ctx, http.MethodPost, "/v1/images/build", req, &res)
	}
	return follow(c, ctx, "/v1/images/build", req, func(ev api.ImageBuildEvent) (*api.ImageBuildResult, *api.Error, bool) {
		if ev.Type != api.EventResult && ev.Type != api.EventError {
			progress(ev.Image, ev.Line)
			return nil, nil, false
		}
		return ev.Result, ev.Error, true
	})
}
