package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/api"
)

// CreateSession takes a warm container for a session of its own.
func (c *Client) CreateSession(ctx context.Context, req api.SessionRequest) (*api.Session, error) {
	var s api.Session
	return &s, c.call(ctx, http.MethodPost, "/v1/sessions", req, &s)
}

// Sessions lists live and lost sessions.
func (c *Client) Sessions(ctx context.Context) ([]api.Session, error) {
	var l api.SessionList
	return l.Sessions, c.call(ctx, http.MethodGet, "/v1/sessions", nil, &l)
}

// Session returns one session.
func (c *Client) Session(ctx context.Context, id string) (*api.Session, error) {
	var s api.Session
	return &s, c.call(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &s)
}

// DeleteSession ends a session and removes its container.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/v1/sessions/"+url.PathEscape(id), nil, nil)
}

// ResetSession kills a session's processes and empties its workspace.
func (c *Client) ResetSession(ctx context.Context, id string) (*api.Session, error) {
	var s api.Session
	return &s, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/reset", nil, &s)
}

// PauseSession hibernates a session: its workspace goes to disk, its
// container away, until a call that needs it (or ResumeSession) wakes it.
func (c *Client) PauseSession(ctx context.Context, id string) (*api.Session, error) {
	var s api.Session
	return &s, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/pause", nil, &s)
}

// FreezeSession freezes a session: its processes stop where they stand,
// keeping their memory, until a call that needs it (or ResumeSession)
// thaws it.
func (c *Client) FreezeSession(ctx context.Context, id string) (*api.Session, error) {
	var s api.Session
	return &s, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/freeze", nil, &s)
}

// ResumeSession wakes a hibernated or frozen session now.
func (c *Client) ResumeSession(ctx context.Context, id string) (*api.Session, error) {
	var s api.Session
	return &s, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/resume", nil, &s)
}

// Ports lists the TCP ports listening in a session's sandbox.
func (c *Client) Ports(ctx context.Context, id string) ([]api.Port, error) {
	var list api.PortList
	err := c.call(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/ports", nil, &list)
	return list.Ports, err
}

// Metrics is what a session's sandbox uses now and over the last minutes.
func (c *Client) Metrics(ctx context.Context, id string) (*api.SessionMetrics, error) {
	var m api.SessionMetrics
	return &m, c.call(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/metrics", nil, &m)
}

// Preview makes a link that opens port of a session to a browser on
// sandboxd's TCP listener, for ttl (0: an hour).
func (c *Client) Preview(ctx context.Context, id string, port int, ttl time.Duration) (*api.Preview, error) {
	var p api.Preview
	return &p, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/ports/"+strconv.Itoa(port)+"/preview",
		api.PreviewRequest{TTL: api.Duration(ttl)}, &p)
}

// RevokePreviews ends every preview link of a session made so far.
func (c *Client) RevokePreviews(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/v1/sessions/"+url.PathEscape(id)+"/previews", nil, nil)
}

// SetNetwork changes what a session's sandbox may reach (host[:port]
// entries within its language's allow-list; none: nothing).
func (c *Client) SetNetwork(ctx context.Context, id string, allow []string) (*api.Session, error) {
	var s api.Session
	if allow == nil {
		allow = []string{}
	}
	return &s, c.call(ctx, http.MethodPatch, "/v1/sessions/"+url.PathEscape(id)+"/network", api.Network{Allow: allow}, &s)
}

// Exec runs a command or program in a session and returns its result.
func (c *Client) Exec(ctx context.Context, id string, req api.ExecRequest) (*api.RunResult, error) {
	var res api.RunResult
	return &res, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/exec", req, &res)
}

// ExecStream is Exec with output events delivered as they happen.
func (c *Client) ExecStream(ctx context.Context, id string, req api.ExecRequest, onEvent func(api.Event)) (*api.RunResult, error) {
	return c.stream(ctx, "/v1/sessions/"+url.PathEscape(id)+"/exec", req, onEvent)
}

// Snapshot saves a session's workspace as a named snapshot.
func (c *Client) Snapshot(ctx context.Context, id, name string) (*api.Snapshot, error) {
	var sn api.Snapshot
	return &sn, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/snapshot", api.SnapshotRequest{Name: name}, &sn)
}

// Fork snapshots a session and starts sessions from it.
func (c *Client) Fork(ctx context.Context, id string, req api.ForkRequest) (*api.ForkResult, error) {
	var res api.ForkResult
	return &res, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/fork", req, &res)
}

// Snapshots lists the snapshots.
func (c *Client) Snapshots(ctx context.Context) ([]api.Snapshot, error) {
	var l api.SnapshotList
	return l.Snapshots, c.call(ctx, http.MethodGet, "/v1/snapshots", nil, &l)
}

// DeleteSnapshot deletes a snapshot by id or name.
func (c *Client) DeleteSnapshot(ctx context.Context, ref string) error {
	return c.call(ctx, http.MethodDelete, "/v1/snapshots/"+url.PathEscape(ref), nil, nil)
}

// Contexts lists a session's running contexts.
func (c *Client) Contexts(ctx context.Context, id string) (*api.ContextList, error) {
	var l api.ContextList
	return &l, c.call(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/contexts", nil, &l)
}

// EndContext ends a session's context and its state.
func (c *Client) EndContext(ctx context.Context, id, name string) error {
	return c.call(ctx, http.MethodDelete, "/v1/sessions/"+url.PathEscape(id)+"/contexts/"+url.PathEscape(name), nil, nil)
}

// RestartContext restarts a session's context with a fresh interpreter.
func (c *Client) RestartContext(ctx context.Context, id, name string) (*api.Context, error) {
	var k api.Context
	return &k, c.call(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/contexts/"+url.PathEscape(name)+"/restart", nil, &k)
}

// filePath is the URL path of a session file. The path is cleaned here:
// the server would redirect an unclean one, and "." (the workspace) must
// keep its trailing slash.
func filePath(id, p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	return "/v1/sessions/" + url.PathEscape(id) + "/files/" + (&url.URL{Path: p}).EscapedPath()
}

// PutFile uploads r to path (relative to /workspace) in a session. mode 0
// means 0644.
func (c *Client) PutFile(ctx context.Context, id, path string, r io.Reader, mode uint32) (*api.FileWritten, error) {
	p := filePath(id, path)
	if mode != 0 {
		p += "?mode=" + strconv.FormatUint(uint64(mode), 8)
	}
	resp, err := c.doRaw(ctx, http.MethodPut, p, r, "application/octet-stream", "")
	if err != nil {
		return nil, err
	}
	var out api.FileWritten
	return &out, readJSON(resp, &out)
}

// GetFile downloads a session file, or a directory as a tar archive (the
// content type says which). The caller closes the body.
func (c *Client) GetFile(ctx context.Context, id, path string) (body io.ReadCloser, contentType string, err error) {
	resp, err := c.doRaw(ctx, http.MethodGet, filePath(id, path), nil, "", "")
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, "", decodeError(resp)
	}
	return resp.Body, resp.Header.Get("Content-Type"), nil
}

// ListFiles lists a directory of a session's workspace ("" is the root).
func (c *Client) ListFiles(ctx context.Context, id, path string, recursive bool) (*api.FileList, error) {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	var l api.FileList
	return &l, c.call(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/files?"+q.Encode(), nil, &l)
}

// Watch follows what changes under a directory of a session's workspace
// ("" is the root; below it too, recursive), handing each event to fn
// (the first: ready, once the watch is set) until ctx ends (nil), fn
// returns an error (that error), or the directory goes.
func (c *Client) Watch(ctx context.Context, id, path string, recursive bool, fn func(api.FileEvent) error) error {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	resp, err := c.doRaw(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/watch?"+q.Encode(), nil, "", api.ContentTypeNDJSON)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev api.FileEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("reading sandboxd's stream: %w", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

// DeleteFile removes a file or directory tree from a session's workspace.
func (c *Client) DeleteFile(ctx context.Context, id, path string) error {
	return c.call(ctx, http.MethodDelete, filePath(id, path), nil, nil)
}

// CreateProject makes an empty project.
func (c *Client) CreateProject(ctx context.Context, name string) (*api.Project, error) {
	var p api.Project
	return &p, c.call(ctx, http.MethodPost, "/v1/projects", api.ProjectRequest{Name: name}, &p)
}

// Projects lists projects.
func (c *Client) Projects(ctx context.Context) ([]api.Project, error) {
	var l api.ProjectList
	return l.Projects, c.call(ctx, http.MethodGet, "/v1/projects", nil, &l)
}

// Project returns a project by id or name.
func (c *Client) Project(ctx context.Context, ref string) (*api.Project, error) {
	var p api.Project
	return &p, c.call(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(ref), nil, &p)
}

// DeleteProject removes a project that no session mounts.
func (c *Client) DeleteProject(ctx context.Context, ref string) error {
	return c.call(ctx, http.MethodDelete, "/v1/projects/"+url.PathEscape(ref), nil, nil)
}

func projectFilePath(ref, name string) string {
	return "/v1/projects/" + url.PathEscape(ref) + "/files/" + (&url.URL{Path: name}).EscapedPath()
}

// AddProjectFile uploads a file to a project. A name in use gets a
// numbered variant unless overwrite is set; the stored name is returned.
func (c *Client) AddProjectFile(ctx context.Context, ref, name string, r io.Reader, overwrite bool) (*api.ProjectFile, error) {
	q := url.Values{"name": {name}}
	if overwrite {
		q.Set("overwrite", "true")
	}
	p := "/v1/projects/" + url.PathEscape(ref) + "/files?" + q.Encode()
	resp, err := c.doRaw(ctx, http.MethodPost, p, r, "application/octet-stream", "")
	if err != nil {
		return nil, err
	}
	var out api.ProjectFile
	return &out, readJSON(resp, &out)
}

// GetProjectFile downloads a project file. The caller closes the body.
func (c *Client) GetProjectFile(ctx context.Context, ref, name string) (io.ReadCloser, error) {
	resp, err := c.doRaw(ctx, http.MethodGet, projectFilePath(ref, name), nil, "", "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp.Body, nil
}

// DeleteProjectFile removes one file from a project.
func (c *Client) DeleteProjectFile(ctx context.Context, ref, name string) error {
	return c.call(ctx, http.MethodDelete, projectFilePath(ref, name), nil, nil)
}
