// Package mcpserver is sandboxd's Model Context Protocol server: the tools
// an AI agent calls to run code (languages, one-shot runs, sessions, their
// files, validation), each a thin bridge to the daemon through the public
// client. `sandboxctl mcp` serves it over stdio.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// maxRead bounds what read_file returns by default: an agent's context is
// small, and a file can be large.
const maxRead = 256 << 10

const instructions = `sandboxd runs code in isolated containers with no network
(unless list_languages names hosts a language may reach).
Use run_code for a one-off program. For work that spans calls (files that
must persist, packages of state, several steps) create_session, then exec,
write_file and read_file in it, and close_session when done. For
notebook-like steps in python or node, exec code with a context name (e.g.
"main"): variables and imports persist, the last expression's value comes
back in display, and figures as images. Every result
has exit_code, stdout, stderr, timed_out, oom_killed and truncated; findings
are the policies' warnings. A request the policies deny fails with the
findings that denied it; one they hold for a person's approval waits for it.
A session of a language with a desktop (list_languages shows its screen
size) has a screen with a browser: desktop_screenshot shows it,
desktop_action clicks, types and opens pages on it.
list_languages says what can run; the resource sandboxd://languages/NAME
and the prompt NAME say how to use each language here.`

// New returns the MCP server bridging to the daemon behind c.
func New(c *client.Client, version string) *mcp.Server {
	c.SetName("mcp")
	s := mcp.NewServer(&mcp.Implementation{Name: "sandboxd", Title: "sandboxd code sandbox", Version: version},
		&mcp.ServerOptions{Instructions: instructions})
	// The records say which agent asked, as it names itself (at
	// initialize, or in each request's _meta).
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
					c.SetName("mcp: " + p.ClientInfo.Name)
				}
			}
			return next(ctx, method, req)
		}
	})
	t := tools{c: c}
	addGuides(s, c)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	acts := &mcp.ToolAnnotations{OpenWorldHint: ptr(false)}
	mcp.AddTool(s, &mcp.Tool{Name: "list_languages", Annotations: readOnly,
		Description: "List the languages sandboxd can run, with their names, aliases, file extensions, runtime versions, installed packages and whether they are ready."},
		t.listLanguages)
	mcp.AddTool(s, &mcp.Tool{Name: "run_code", Annotations: acts,
		Description: "Run a program once in a fresh sandbox (no network, limited CPU, memory and time) and return its exit code, stdout and stderr. Nothing persists: use a session for that."},
		t.run)
	mcp.AddTool(s, &mcp.Tool{Name: "validate_code", Annotations: readOnly,
		Description: "Check a program or a command against sandboxd's policies without running it; returns whether it would be allowed and every finding with file:line."},
		t.validate)
	mcp.AddTool(s, &mcp.Tool{Name: "create_session", Annotations: acts,
		Description: "Create a session: a sandbox of one's own whose /workspace keeps files, installed state and background processes across exec calls until it is closed or expires. Returns session_id."},
		t.createSession)
	mcp.AddTool(s, &mcp.Tool{Name: "list_sessions", Annotations: readOnly,
		Description: "List the open sessions with their language, state and expiry."},
		t.listSessions)
	mcp.AddTool(s, &mcp.Tool{Name: "exec", Annotations: acts,
		Description: "Run in a session: a shell command line (command), a command without a shell (argv), or a program in the session's language (code); with code and context, in a long-lived interpreter whose variables persist. Files and processes stay for the next call."},
		t.exec)
	mcp.AddTool(s, &mcp.Tool{Name: "reset_session", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
		Description: "Give a session a fresh sandbox: every file and process is gone; the session id stays."},
		t.sessionCall((*client.Client).ResetSession))
	mcp.AddTool(s, &mcp.Tool{Name: "pause_session", Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)},
		Description: "Hibernate a session you will not use for a while: its files stay on disk and its sandbox goes away (running processes and contexts' variables do not survive). The next call on it wakes it; idle sessions hibernate by themselves."},
		t.sessionCall((*client.Client).PauseSession))
	mcp.AddTool(s, &mcp.Tool{Name: "resume_session", Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)},
		Description: "Wake a hibernated or frozen session now (any call on it does so too)."},
		t.sessionCall((*client.Client).ResumeSession))
	mcp.AddTool(s, &mcp.Tool{Name: "close_session", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
		Description: "Close a session and remove its sandbox with every file in it."},
		t.closeSession)
	mcp.AddTool(s, &mcp.Tool{Name: "preview_port", Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
		Description: "Make a link that opens a server a session runs (on its own loopback, e.g. python3 -m http.server 8000 started in the background) to a person's browser on sandboxd's host, for an hour. Give the link to the person; it opens that port of that session only."},
		t.previewPort)
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Annotations: acts,
		Description: "Write a file in a session's /workspace (parent directories are made), replacing it if it exists."},
		t.writeFile)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Annotations: readOnly,
		Description: "Read a file from a session's /workspace. Text comes back as is, anything else as base64; long files are cut at max_bytes (truncated says so)."},
		t.readFile)
	mcp.AddTool(s, &mcp.Tool{Name: "list_files", Annotations: readOnly,
		Description: "List a directory of a session's /workspace, with types, sizes and modes; symlinks are shown, never followed."},
		t.listFiles)
	mcp.AddTool(s, &mcp.Tool{Name: "watch_files", Annotations: readOnly,
		Description: "Watch a directory of a session's /workspace for a while (seconds, at most 60) and return what was created, written, removed or renamed meanwhile: what a background build, server or test run changes. until_first returns at the first change."},
		t.watchFiles)
	mcp.AddTool(s, &mcp.Tool{Name: "desktop_screenshot", Annotations: readOnly,
		Description: "See a desktop session's screen (a session of a language with a desktop, such as desktop: XFCE and Chromium): a PNG screenshot with the pointer, and the screen's size, the pointer's position and the windows."},
		t.desktopScreenshot)
	mcp.AddTool(s, &mcp.Tool{Name: "desktop_action", Annotations: acts,
		Description: "Act on a desktop session's screen as a person would: move the pointer, click, double_click, drag, scroll, type text, press keys or chords, open a URL or file, focus a window. Coordinates are pixels from the top left corner, as in desktop_screenshot. Returns the screen after the action (with screenshot: true, a screenshot too)."},
		t.desktopAction)
	return s
}

func ptr[T any](v T) *T { return &v }

type tools struct{ c *client.Client }

// File is a file given with a program.
type File struct {
	Path    string `json:"path" jsonschema:"path relative to /workspace, e.g. util.py or data/input.csv"`
	Content string `json:"content" jsonschema:"the file's text"`
}

// Result is what an execution produced.
type Result struct {
	ExitCode    int       `json:"exit_code" jsonschema:"the program's exit code; -1 when it could not start"`
	Stdout      string    `json:"stdout" jsonschema:"standard output (base64 when stdout_encoding says so)"`
	Stderr      string    `json:"stderr" jsonschema:"standard error (base64 when stderr_encoding says so)"`
	StdoutEnc   string    `json:"stdout_encoding,omitempty" jsonschema:"base64 when stdout was not UTF-8 text"`
	StderrEnc   string    `json:"stderr_encoding,omitempty" jsonschema:"base64 when stderr was not UTF-8 text"`
	TimedOut    bool      `json:"timed_out" jsonschema:"killed at the time limit"`
	OOMKilled   bool      `json:"oom_killed" jsonschema:"killed for exceeding the memory limit"`
	Truncated   bool      `json:"truncated" jsonschema:"output went past the output limit and was cut"`
	Signal      string    `json:"signal,omitempty" jsonschema:"the signal that ended it, e.g. SIGKILL"`
	Stage       string    `json:"stage,omitempty" jsonschema:"the step that ended it for compiled languages: compile or run"`
	Error       string    `json:"error,omitempty" jsonschema:"why the program could not be started"`
	DurationMS  float64   `json:"duration_ms"`
	Findings    []Finding `json:"findings" jsonschema:"policy warnings about the code or command"`
	Egress      []Egress  `json:"egress,omitempty" jsonschema:"connections the program made through the egress proxy, refused ones with why"`
	Display     []Display `json:"display,omitempty" jsonschema:"what a context's code showed: its last expression's value (text/plain), tables (text/html); images come as image content"`
	ContextLost string    `json:"context_lost,omitempty" jsonschema:"why the context's earlier state (variables, imports) is gone: it was restarted"`
	Outputs     []Output  `json:"outputs,omitempty" jsonschema:"files under outputs/ the exec made or changed: read_file fetches them"`
}

// Output is a file an exec made or changed.
type Output struct {
	Path string `json:"path" jsonschema:"relative to /workspace"`
	Size int64  `json:"size"`
	MIME string `json:"mime"`
}

// Display is one shown value that is text.
type Display struct {
	MIME string `json:"mime"`
	Data string `json:"data"`
	Main bool   `json:"main,omitempty" jsonschema:"part of the final value, not a figure's or a display() call's"`
}

// Egress is one connection through the egress proxy.
type Egress struct {
	Host          string `json:"host"`
	Port          int    `json:"port"`
	Allowed       bool   `json:"allowed"`
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	Error         string `json:"error,omitempty"`
}

// Finding is a policy finding.
type Finding struct {
	Severity string `json:"severity" jsonschema:"info, warning, error or critical"`
	Rule     string `json:"rule" jsonschema:"policy/rule that found it"`
	Message  string `json:"message"`
	Where    string `json:"where,omitempty" jsonschema:"file:line:column, or the file"`
}

func findings(fs []api.Finding) []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		out = append(out, Finding{Severity: f.Severity, Rule: f.Policy + "/" + f.Rule, Message: f.Message, Where: f.Location()})
	}
	return out
}

func result(r *api.RunResult) Result {
	return Result{ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, StdoutEnc: r.StdoutEncoding, StderrEnc: r.StderrEncoding,
		TimedOut: r.TimedOut, OOMKilled: r.OOMKilled, Truncated: r.Truncated, Signal: r.Signal, Stage: r.Stage, Error: r.Error,
		DurationMS: r.DurationMS, Findings: findings(r.Findings), Egress: egress(r.Egress), Outputs: outputs(r.Outputs)}
}

func outputs(list []api.OutputFile) []Output {
	out := make([]Output, len(list))
	for i, o := range list {
		out[i] = Output(o)
	}
	return out
}

// withImages is a tool result for r: images it showed as image content
// beside the structured result, which keeps the text ones.
func withImages(r *api.RunResult) (*mcp.CallToolResult, Result) {
	out := result(r)
	if r.Context != nil {
		out.ContextLost = r.Context.Lost
	}
	var images []mcp.Content
	for i, d := range r.Display {
		if strings.HasPrefix(d.MIME, "image/") && d.MIME != "image/svg+xml" {
			if data, err := base64.StdEncoding.DecodeString(d.Data); err == nil {
				images = append(images, &mcp.ImageContent{Data: data, MIMEType: d.MIME})
			}
			continue
		}
		// An agent's context has no use for an image's caption, a
		// table's columns twice over (its text and HTML say them), nor
		// the data of a chart it drew.
		if api.IsCaption(r.Display, i) || d.MIME == api.DataFrameMIME || d.MIME == api.ChartMIME {
			continue
		}
		out.Display = append(out.Display, Display{MIME: d.MIME, Data: d.Data, Main: d.Main})
	}
	if len(images) == 0 {
		return nil, out
	}
	text, _ := json.Marshal(out)
	return &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: string(text)}}, images...)}, out
}

func egress(list []api.Egress) []Egress {
	out := make([]Egress, len(list))
	for i, e := range list {
		out[i] = Egress(e)
	}
	return out
}

// failure is the tool error for an error of the client: the daemon's
// message, and for a policy denial every finding, one per line, for the
// agent to fix; any other error as it is (the socket, a cancel).
func failure(err error) error {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err
	}
	msg := ae.Message
	for _, f := range ae.Findings {
		msg += "\n" + f.String()
	}
	return errors.New(msg)
}

// seconds is a tool argument in seconds as an API duration.
func seconds(n float64) api.Duration {
	return api.Duration(time.Duration(n * float64(time.Second)))
}

// Language is a language sandboxd runs.
type Language struct {
	Name       string   `json:"name" jsonschema:"the name to pass as language"`
	Display    string   `json:"display_name"`
	Aliases    []string `json:"aliases" jsonschema:"other names accepted as language"`
	Extensions []string `json:"extensions"`
	Version    string   `json:"version,omitempty" jsonschema:"the runtime's version"`
	Packages   []string `json:"packages,omitempty" jsonschema:"extra packages installed in its image"`
	Ready      bool     `json:"ready" jsonschema:"false when its image is missing: runs fail until an operator builds it"`
	Network    []string `json:"network,omitempty" jsonschema:"hosts its programs may reach through the egress proxy (HTTP_PROXY and HTTPS_PROXY are set); nothing else is reachable"`
	Desktop    string   `json:"desktop,omitempty" jsonschema:"its sessions' screen size (WIDTHxHEIGHT): desktop_screenshot and desktop_action drive it"`
}

type listLanguagesOut struct {
	Languages []Language `json:"languages"`
}

func (t tools) listLanguages(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, listLanguagesOut, error) {
	ls, err := t.c.Languages(ctx)
	if err != nil {
		return nil, listLanguagesOut{}, failure(err)
	}
	out := listLanguagesOut{Languages: []Language{}}
	for _, l := range ls {
		out.Languages = append(out.Languages, Language{Name: l.Name, Display: l.DisplayName, Aliases: nonNil(l.Aliases), Extensions: nonNil(l.Extensions),
			Version: l.Version, Packages: l.Packages, Ready: l.ImagePresent, Network: l.Network.Allow, Desktop: l.Desktop})
	}
	return nil, out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type runIn struct {
	Language       string   `json:"language" jsonschema:"language name, alias or file extension from list_languages, e.g. python, js, go"`
	Code           string   `json:"code" jsonschema:"the program's source"`
	Files          []File   `json:"files,omitempty" jsonschema:"more files placed beside the program, e.g. modules it imports"`
	Args           []string `json:"args,omitempty" jsonschema:"command-line arguments for the program"`
	Stdin          string   `json:"stdin,omitempty" jsonschema:"text given on standard input"`
	TimeoutSeconds float64  `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit in seconds; default the daemon's (usually 10), at most the language's ceiling"`
	Allow          []string `json:"allow,omitempty" jsonschema:"hosts the program may reach through the egress proxy (HOST[:PORT]), a subset of what its language allows (see list_languages); left out, all of that"`
	Secrets        []string `json:"secrets,omitempty" jsonschema:"secrets the operator defined, by name (the host resource lists them): the program reads SANDBOXD_SECRET_<name> and sends it as the credential (e.g. Authorization: Bearer $SANDBOXD_SECRET_github); sandboxd puts the real value in on the way to the secret's hosts"`
}

func (t tools) run(ctx context.Context, call *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, Result, error) {
	req := api.RunRequest{Language: in.Language, Code: in.Code, Args: in.Args, Stdin: in.Stdin, Timeout: seconds(in.TimeoutSeconds), Network: allow(in.Allow), Secrets: in.Secrets}
	for _, f := range in.Files {
		req.Files = append(req.Files, api.File{Path: f.Path, Content: f.Content})
	}
	r, err := t.c.RunStream(ctx, req, waiting(ctx, call))
	if err != nil {
		return nil, Result{}, failure(err)
	}
	return nil, result(r), nil
}

// waiting tells the MCP client what a tool call waits for (a person's
// approval, a node pulling an image) as progress notifications, when the
// call asked for progress: an agent can say so instead of looking hung.
// The output comes with the result.
func waiting(ctx context.Context, call *mcp.CallToolRequest) func(api.Event) {
	var token any
	if call != nil && call.Params != nil {
		token = call.Params.GetProgressToken()
	}
	told := 0.0
	return func(ev api.Event) {
		if ev.Type != api.EventQueued || token == nil || call.Session == nil {
			return
		}
		told++
		_ = call.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: told, Message: "waiting: " + ev.Data})
	}
}

type validateIn struct {
	Language string   `json:"language" jsonschema:"language name, alias or file extension"`
	Code     string   `json:"code,omitempty" jsonschema:"a program to check"`
	Argv     []string `json:"argv,omitempty" jsonschema:"or a session command to check, as argv"`
}

type validateOut struct {
	Allowed       bool      `json:"allowed" jsonschema:"whether run_code or exec would run it"`
	NeedsApproval bool      `json:"needs_approval,omitempty" jsonschema:"whether it would first wait for a person to approve it"`
	Findings      []Finding `json:"findings"`
}

func (t tools) validate(ctx context.Context, _ *mcp.CallToolRequest, in validateIn) (*mcp.CallToolResult, validateOut, error) {
	v, err := t.c.Validate(ctx, api.ValidateRequest{Language: in.Language, Code: in.Code, Argv: in.Argv})
	if err != nil {
		return nil, validateOut{}, failure(err)
	}
	return nil, validateOut{Allowed: v.Allowed, NeedsApproval: v.NeedsApproval, Findings: findings(v.Findings)}, nil
}

type sessionIn struct {
	SessionID string `json:"session_id" jsonschema:"the id create_session returned"`
}

// Session is an open session.
type Session struct {
	SessionID  string `json:"session_id"`
	Language   string `json:"language"`
	State      string `json:"state" jsonschema:"active; hibernated (its files on disk, woken by the next call); or lost when its sandbox vanished (close it)"`
	ExpiresAt  string `json:"expires_at" jsonschema:"when it is closed for you (RFC 3339)"`
	Workspace  string `json:"workspace" jsonschema:"the directory that keeps its files"`
	Executions int    `json:"executions"`
}

func session(s *api.Session) Session {
	return Session{SessionID: s.ID, Language: s.Language, State: s.State, ExpiresAt: s.ExpiresAt.Format(time.RFC3339),
		Workspace: "/workspace", Executions: s.Executions}
}

type createSessionIn struct {
	Language   string            `json:"language" jsonschema:"the language of code run in it; shell commands work in every language"`
	TTLSeconds float64           `json:"ttl_seconds,omitempty" jsonschema:"how long it may live; default the daemon's"`
	Env        map[string]string `json:"env,omitempty" jsonschema:"environment variables for everything run in it"`
	Allow      []string          `json:"allow,omitempty" jsonschema:"hosts it may reach through the egress proxy (HOST[:PORT]), e.g. a package registry, a subset of what its language allows; left out, all of that"`
	Secrets    []string          `json:"secrets,omitempty" jsonschema:"secrets by name, as run_code's, for everything run in the session"`
}

// allow is the network a tool asks for; nil (the language's) when none.
func allow(hosts []string) *api.Network {
	if len(hosts) == 0 {
		return nil
	}
	return &api.Network{Allow: hosts}
}

func (t tools) createSession(ctx context.Context, _ *mcp.CallToolRequest, in createSessionIn) (*mcp.CallToolResult, Session, error) {
	s, err := t.c.CreateSession(ctx, api.SessionRequest{Language: in.Language, TTL: seconds(in.TTLSeconds), Env: in.Env, Network: allow(in.Allow), Secrets: in.Secrets})
	if err != nil {
		return nil, Session{}, failure(err)
	}
	return nil, session(s), nil
}

type listSessionsOut struct {
	Sessions []Session `json:"sessions"`
}

func (t tools) listSessions(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, listSessionsOut, error) {
	ss, err := t.c.Sessions(ctx)
	if err != nil {
		return nil, listSessionsOut{}, failure(err)
	}
	out := listSessionsOut{Sessions: []Session{}}
	for i := range ss {
		out.Sessions = append(out.Sessions, session(&ss[i]))
	}
	return nil, out, nil
}

type execIn struct {
	SessionID      string   `json:"session_id" jsonschema:"the id create_session returned"`
	Command        string   `json:"command,omitempty" jsonschema:"a shell command line, run with sh -c, e.g. ls -la or pip list | head"`
	Argv           []string `json:"argv,omitempty" jsonschema:"or a command without a shell, e.g. [\"python3\", \"main.py\"]"`
	Code           string   `json:"code,omitempty" jsonschema:"or a program in the session's language"`
	Context        string   `json:"context,omitempty" jsonschema:"with code (python, node): run it in the session's long-lived interpreter of this name, e.g. main, started on first use: variables, imports and open files persist from call to call, and the last expression's value comes back in display (Jupyter-like)"`
	Stdin          string   `json:"stdin,omitempty" jsonschema:"text given on standard input"`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"working directory relative to /workspace"`
	TimeoutSeconds float64  `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit in seconds; default the daemon's"`
}

func (t tools) exec(ctx context.Context, call *mcp.CallToolRequest, in execIn) (*mcp.CallToolResult, Result, error) {
	req := api.ExecRequest{Argv: in.Argv, Code: in.Code, Context: in.Context, Stdin: in.Stdin, Cwd: in.Cwd, Timeout: seconds(in.TimeoutSeconds)}
	given := 0
	for _, set := range []bool{in.Command != "", len(in.Argv) > 0, in.Code != ""} {
		if set {
			given++
		}
	}
	if given != 1 {
		return nil, Result{}, errors.New("give exactly one of command, argv or code")
	}
	if in.Command != "" {
		req.Argv = []string{"sh", "-c", in.Command}
	}
	r, err := t.c.ExecStream(ctx, in.SessionID, req, waiting(ctx, call))
	if err != nil {
		return nil, Result{}, failure(err)
	}
	res, out := withImages(r)
	return res, out, nil
}

// sessionCall is a tool that does call to a session and returns it.
func (t tools) sessionCall(call func(*client.Client, context.Context, string) (*api.Session, error)) mcp.ToolHandlerFor[sessionIn, Session] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in sessionIn) (*mcp.CallToolResult, Session, error) {
		s, err := call(t.c, ctx, in.SessionID)
		if err != nil {
			return nil, Session{}, failure(err)
		}
		return nil, session(s), nil
	}
}

type previewIn struct {
	SessionID string `json:"session_id" jsonschema:"the id create_session returned"`
	Port      int    `json:"port" jsonschema:"the TCP port the server listens on inside the session"`
}

type previewOut struct {
	URL       string `json:"url" jsonschema:"the link to open in a browser"`
	ExpiresAt string `json:"expires_at" jsonschema:"when the link stops working (RFC 3339)"`
}

func (t tools) previewPort(ctx context.Context, _ *mcp.CallToolRequest, in previewIn) (*mcp.CallToolResult, previewOut, error) {
	p, err := t.c.Preview(ctx, in.SessionID, in.Port, 0)
	if err != nil {
		return nil, previewOut{}, failure(err)
	}
	return nil, previewOut{URL: p.URL, ExpiresAt: p.ExpiresAt.Format(time.RFC3339)}, nil
}

type closed struct {
	Closed bool `json:"closed"`
}

func (t tools) closeSession(ctx context.Context, _ *mcp.CallToolRequest, in sessionIn) (*mcp.CallToolResult, closed, error) {
	if err := t.c.DeleteSession(ctx, in.SessionID); err != nil {
		return nil, closed{}, failure(err)
	}
	return nil, closed{Closed: true}, nil
}

type writeFileIn struct {
	SessionID string `json:"session_id" jsonschema:"the id create_session returned"`
	Path      string `json:"path" jsonschema:"path relative to /workspace"`
	Content   string `json:"content" jsonschema:"the file's content: text, or base64 when encoding is base64"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"base64 for binary content; default text"`
	Mode      string `json:"mode,omitempty" jsonschema:"octal permissions, e.g. 0755 for a script; default 0644"`
}

type writeFileOut struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

func (t tools) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in writeFileIn) (*mcp.CallToolResult, writeFileOut, error) {
	encoding := in.Encoding
	if encoding == "text" {
		encoding = ""
	}
	data, err := api.DecodeBytes(in.Content, encoding)
	if err != nil {
		return nil, writeFileOut{}, fmt.Errorf("content: %v (encoding is base64, or left out for text)", err)
	}
	var mode uint32
	if in.Mode != "" {
		if _, err := fmt.Sscanf(in.Mode, "%o", &mode); err != nil || mode > 0o777 {
			return nil, writeFileOut{}, fmt.Errorf("mode %q: give octal permissions such as 0644 or 0755", in.Mode)
		}
	}
	w, err := t.c.PutFile(ctx, in.SessionID, in.Path, bytes.NewReader(data), mode)
	if err != nil {
		return nil, writeFileOut{}, failure(err)
	}
	return nil, writeFileOut{Path: w.Path, Size: w.Size}, nil
}

type readFileIn struct {
	SessionID string `json:"session_id" jsonschema:"the id create_session returned"`
	Path      string `json:"path" jsonschema:"path relative to /workspace"`
	MaxBytes  int    `json:"max_bytes,omitempty" jsonschema:"most bytes to return; default 262144"`
}

type readFileOut struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"base64 when the file is not UTF-8 text"`
	Truncated bool   `json:"truncated" jsonschema:"the file is longer than max_bytes"`
}

func (t tools) readFile(ctx context.Context, _ *mcp.CallToolRequest, in readFileIn) (*mcp.CallToolResult, readFileOut, error) {
	limit := in.MaxBytes
	if limit <= 0 {
		limit = maxRead
	}
	body, contentType, err := t.c.GetFile(ctx, in.SessionID, in.Path)
	if err != nil {
		return nil, readFileOut{}, failure(err)
	}
	defer body.Close()
	if contentType == api.ContentTypeTar {
		return nil, readFileOut{}, fmt.Errorf("%s is a directory: use list_files", in.Path)
	}
	data, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	if err != nil {
		return nil, readFileOut{}, err
	}
	out := readFileOut{Path: in.Path, Truncated: len(data) > limit}
	data = data[:min(len(data), limit)]
	out.Content, out.Encoding = api.EncodeBytes(data)
	return nil, out, nil
}

type listFilesIn struct {
	SessionID string `json:"session_id" jsonschema:"the id create_session returned"`
	Path      string `json:"path,omitempty" jsonschema:"directory relative to /workspace; default the workspace itself"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"list subdirectories too"`
}

// Entry is one file of a listing.
type Entry struct {
	Path   string `json:"path" jsonschema:"relative to /workspace"`
	Type   string `json:"type" jsonschema:"file, dir, symlink, fifo, socket or device"`
	Size   int64  `json:"size"`
	Mode   string `json:"mode"`
	Target string `json:"target,omitempty" jsonschema:"where a symlink points"`
}

type listFilesOut struct {
	Entries []Entry `json:"entries"`
}

func (t tools) listFiles(ctx context.Context, _ *mcp.CallToolRequest, in listFilesIn) (*mcp.CallToolResult, listFilesOut, error) {
	l, err := t.c.ListFiles(ctx, in.SessionID, in.Path, in.Recursive)
	if err != nil {
		return nil, listFilesOut{}, failure(err)
	}
	out := listFilesOut{Entries: []Entry{}}
	for _, e := range l.Entries {
		out.Entries = append(out.Entries, Entry{Path: e.Path, Type: e.Type, Size: e.Size, Mode: e.Mode, Target: e.Target})
	}
	return nil, out, nil
}

type watchFilesIn struct {
	SessionID  string  `json:"session_id" jsonschema:"the id create_session returned"`
	Path       string  `json:"path,omitempty" jsonschema:"directory relative to /workspace; default the workspace itself"`
	Recursive  bool    `json:"recursive,omitempty" jsonschema:"watch subdirectories too"`
	Seconds    float64 `json:"seconds,omitempty" jsonschema:"how long to watch, at most 60; default 10"`
	UntilFirst bool    `json:"until_first,omitempty" jsonschema:"return as soon as something changes (e.g. a build writes its output), not at the end of seconds"`
}

// FileEvent is one change under a watched directory.
type FileEvent struct {
	Path string `json:"path" jsonschema:"relative to /workspace"`
	Type string `json:"type" jsonschema:"create, write, remove, rename or chmod"`
}

type watchFilesOut struct {
	Events []FileEvent `json:"events"`
	// Missed counts changes not listed: more came at once than sandboxd
	// passes on, or than this answer holds.
	Missed int `json:"missed,omitempty" jsonschema:"changes left out (too many at once): list_files to see where things stand"`
}

// Bounds of a watch_files call.
const (
	watchDefault   = 10 * time.Second
	watchMax       = time.Minute
	watchMaxEvents = 500
	// watchSettle is how long until_first waits after the first change
	// for the rest of its batch.
	watchSettle = 300 * time.Millisecond
)

func (t tools) watchFiles(ctx context.Context, _ *mcp.CallToolRequest, in watchFilesIn) (*mcp.CallToolResult, watchFilesOut, error) {
	d := min(max(time.Duration(in.Seconds*float64(time.Second)), 0), watchMax)
	if d == 0 {
		d = watchDefault
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out := watchFilesOut{Events: []FileEvent{}}
	var settle sync.Once
	err := t.c.Watch(ctx, in.SessionID, in.Path, in.Recursive, func(ev api.FileEvent) error {
		switch {
		case ev.Type == api.FileEventReady:
			return nil
		case ev.Type == api.FileEventOverflow:
			out.Missed += ev.Count
		case len(out.Events) >= watchMaxEvents:
			out.Missed++
		default:
			out.Events = append(out.Events, FileEvent{Path: ev.Path, Type: ev.Type})
		}
		if in.UntilFirst {
			settle.Do(func() { time.AfterFunc(watchSettle, cancel) })
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return nil, watchFilesOut{}, failure(err)
	}
	return nil, out, nil
}
