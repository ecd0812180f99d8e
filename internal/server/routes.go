package server

import (
	"net/http"
	"reflect"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/sessions"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// route is one endpoint: the mux pattern and handler, and what the
// OpenAPI document says of it. The mux and the document are both made
// from this table, so neither can list an endpoint the other lacks.
type route struct {
	pattern string // "METHOD /path/{param}"
	serve   func(*handler, http.ResponseWriter, *http.Request)
	id      string // operationId
	summary string
	query   []param
	request content      // zero: no body
	status  int          // on success
	result  content      // zero: no body
	events  reflect.Type // the NDJSON event a client gets with Accept: application/x-ndjson
}

// content is a body: JSON of a type, or raw bytes of the media types.
type content struct {
	json  reflect.Type
	media []string
}

func jsonOf[T any]() content { return content{json: reflect.TypeFor[T]()} }

var (
	fileBytes    = content{media: []string{"application/octet-stream"}}
	fileOrTar    = content{media: []string{"application/octet-stream", api.ContentTypeTar}}
	prometheus   = content{media: []string{"text/plain"}}
	pngImage     = content{media: []string{"image/png"}}
	executionEvt = reflect.TypeFor[api.Event]()
)

type param struct{ name, typ, description string }

// routes is the API, in the order the document lists it. (A function, not
// a variable: the openAPI handler it names reads it.)
func routes() []route {
	return []route{
		{pattern: "GET /v1/health", serve: (*handler).health, id: "health", status: 200, result: jsonOf[api.Health](),
			summary: "The daemon's health: Docker, plugins and pools (503 when degraded, with the same body)."},
		{pattern: "GET /v1/languages", serve: (*handler).languages, id: "listLanguages", status: 200, result: jsonOf[api.LanguageList](),
			summary: "The configured languages: names, aliases, extensions, images, versions, limits and pools."},
		{pattern: "GET /v1/pools", serve: (*handler).pools, id: "listPools", status: 200, result: jsonOf[map[string]api.PoolStats](),
			summary: "The warm pools by language."},
		{pattern: "GET /v1/secrets", serve: (*handler).secrets, id: "listSecrets", status: 200, result: jsonOf[api.SecretList](),
			summary: "The secrets sandboxd.hcl defines, by name with their hosts (never their values): what a run or session may ask for in secrets."},
		{pattern: "GET /v1/plugins", serve: (*handler).plugins, id: "listPlugins", status: 200, result: jsonOf[api.PluginList](),
			summary: "The language and policy plugins, with versions and health."},
		{pattern: "GET /v1/stats", serve: (*handler).stats, id: "stats", status: 200, result: jsonOf[api.Stats](),
			summary: "Counters since start: executions by outcome, pools, policy rules, sessions."},
		{pattern: "GET /v1/stats/history", serve: (*handler).statsHistory, id: "statsHistory", status: 200, result: jsonOf[api.StatsHistory](),
			summary: "The last hour, a sample every few seconds: executions by outcome and their latency, pools' use and hit rate, warm and cold starts, egress connections (the event stream's \"sample\" events extend it)."},
		{pattern: "GET /v1/events", serve: (*handler).events, id: "events", status: 200, result: content{media: []string{"text/event-stream"}},
			summary: "Server-sent events, live: \"stats\" (as GET /v1/stats) at once and every 2 s, \"execution\" (a history record) as each execution is recorded, \"sample\" as the timeline (GET /v1/stats/history) takes one."},
		{pattern: "GET /v1/executions", serve: (*handler).executions, id: "listExecutions", status: 200, result: jsonOf[api.ExecutionList](),
			summary: "Recorded executions, newest first.",
			query: []param{{"limit", "integer", "at most this many, 1 to 1000 (default 100)"},
				{"language", "string", "only this language's"}, {"session", "string", "only this session's"},
				{"kind", "string", "only runs, execs or terminals (run, exec, terminal)"},
				{"outcome", "string", "only these: ok, nonzero, timeout, oom, error or denied"},
				{"before", "string", "only those older than this execution id (paging)"}}},
		{pattern: "POST /v1/run", serve: (*handler).run, id: "run", request: jsonOf[api.RunRequest](), status: 200, result: jsonOf[api.RunResult](), events: executionEvt,
			summary: "Run a program once in a fresh warm sandbox. With Accept: application/x-ndjson, output streams as events, then the result."},
		{pattern: "GET /v1/run/terminal", serve: (*handler).runTerminal, id: "runTerminal", status: 101,
			summary: "Run a program once on a terminal, upgraded to a WebSocket: the client's first frame is text, {\"type\":\"run\",\"run\":{...as POST /v1/run, without stdin...}}; then frames are as the session terminal's. A person answers the program's prompts.",
			query:   []param{{"rows", "integer", "the window's rows (default 24)"}, {"cols", "integer", "the window's columns (default 80)"}}},
		{pattern: "POST /v1/validate", serve: (*handler).validate, id: "validate", request: jsonOf[api.ValidateRequest](), status: 200, result: jsonOf[api.ValidateResult](),
			summary: "Judge a program or a session command by the policies without running it."},
		{pattern: "POST /v1/images/build", serve: (*handler).buildImages, id: "buildImages", request: jsonOf[api.ImageBuildRequest](), status: 200, result: jsonOf[api.ImageBuildResult](),
			events:  reflect.TypeFor[api.ImageBuildEvent](),
			summary: "Build the languages' images (and their packages), and push those a cluster pulls. With Accept: application/x-ndjson, build output streams as progress events."},
		{pattern: "POST /v1/sessions", serve: (*handler).createSession, id: "createSession", request: jsonOf[api.SessionRequest](), status: 201, result: jsonOf[api.Session](),
			summary: "Create a session: a sandbox of one's own that keeps /workspace across executions."},
		{pattern: "GET /v1/sessions", serve: (*handler).sessions, id: "listSessions", status: 200, result: jsonOf[api.SessionList](),
			summary: "Active, hibernated and lost sessions, oldest first."},
		{pattern: "GET /v1/sessions/{id}", serve: (*handler).session, id: "getSession", status: 200, result: jsonOf[api.Session](),
			summary: "One session."},
		{pattern: "DELETE /v1/sessions/{id}", serve: (*handler).deleteSession, id: "deleteSession", status: 204,
			summary: "Close a session and remove its sandbox."},
		{pattern: "POST /v1/sessions/{id}/exec", serve: (*handler).exec, id: "exec", request: jsonOf[api.ExecRequest](), status: 200, result: jsonOf[api.RunResult](), events: executionEvt,
			summary: "Run a command (argv) or a program in the session's language in a session. Streams like run."},
		{pattern: "POST /v1/sessions/{id}/reset", serve: sessionCall(shown((*sessions.Sessions).Reset, wire.Session)), id: "resetSession", status: 200, result: jsonOf[api.Session](),
			summary: "Give a session a fresh sandbox: files and processes are gone, the id stays."},
		{pattern: "POST /v1/sessions/{id}/pause", serve: sessionCall(shown((*sessions.Sessions).Pause, wire.Session)), id: "pauseSession", status: 200, result: jsonOf[api.Session](),
			summary: "Hibernate a session now: its workspace goes to disk, its sandbox away; the next call that needs it resumes it."},
		{pattern: "POST /v1/sessions/{id}/freeze", serve: sessionCall(shown((*sessions.Sessions).Freeze, wire.Session)), id: "freezeSession", status: 200, result: jsonOf[api.Session](),
			summary: "Freeze a session now: its processes stop where they stand, keeping their memory, and use no CPU; the next call that needs it thaws it. Sessions freeze by themselves after sessions.freeze_after unused."},
		{pattern: "POST /v1/sessions/{id}/resume", serve: sessionCall(shown((*sessions.Sessions).Resume, wire.Session)), id: "resumeSession", status: 200, result: jsonOf[api.Session](),
			summary: "Wake a hibernated or frozen session now (any call that needs its sandbox does so too)."},
		{pattern: "GET /v1/sessions/{id}/ports", serve: sessionCall(ports), id: "listSessionPorts", status: 200, result: jsonOf[api.PortList](),
			summary: "The TCP ports listening inside the session's sandbox."},
		{pattern: "GET /v1/sessions/{id}/desktop", serve: (*handler).desktop, id: "getDesktop", status: 200, result: jsonOf[api.Desktop](),
			summary: "A desktop session's screen: its size, the pointer, the focused window and the windows shown (sessions of a language with a desktop block)."},
		{pattern: "GET /v1/sessions/{id}/desktop/screenshot", serve: (*handler).screenshot, id: "desktopScreenshot", status: 200, result: pngImage,
			summary: "A desktop session's screen, pointer included, as a PNG image."},
		{pattern: "POST /v1/sessions/{id}/desktop/actions", serve: (*handler).desktopAction, id: "desktopAction", request: jsonOf[api.DesktopAction](), status: 200, result: jsonOf[api.Desktop](),
			summary: "Do one thing on a desktop session's screen (move, click, double_click, drag, scroll, type, key, open, focus), and get the screen as it is then. Each action is a command the policies judge and the history keeps (kind desktop)."},
		{pattern: "GET /v1/sessions/{id}/desktop/vnc", serve: (*handler).desktopLiveView, id: "desktopLiveView", status: 101,
			summary: "A desktop session's live view, upgraded to a WebSocket that carries the VNC protocol (binary frames both ways; what noVNC speaks): view-only, or in control of the mouse and keyboard with control=true.",
			query:   []param{{"control", "boolean", "take control: the mouse and keyboard reach the screen (default: view-only)"}}},
		{pattern: "POST /v1/sessions/{id}/desktop/preview", serve: (*handler).desktopPreview, id: "desktopPreview", request: jsonOf[api.PreviewRequest](), status: 201, result: jsonOf[api.Preview](),
			summary: "A link that opens a desktop session's live view, view-only, to a browser on the TCP listener (noVNC's page, served in the session), with a token for that session's view only, good for ttl (default 1h)."},
		{pattern: "GET /v1/sessions/{id}/metrics", serve: sessionCall(shown((*sessions.Sessions).Metrics, wire.SessionUsage)), id: "sessionMetrics", status: 200, result: jsonOf[api.SessionMetrics](),
			summary: "What the session's sandbox uses (CPU, memory, processes, workspace and /tmp bytes, bytes through egress): now, and a sample every few seconds over the last minutes. Asking wakes no hibernated session."},
		{pattern: "PATCH /v1/sessions/{id}/network", serve: (*handler).setNetwork, id: "setSessionNetwork", request: jsonOf[api.Network](), status: 200, result: jsonOf[api.Session](),
			summary: "Change what the session's sandbox may reach through the egress proxy (allow: host[:port] entries within its language's network.allow; empty: nothing), from its next connection on."},
		{pattern: "POST /v1/sessions/{id}/snapshot", serve: (*handler).snapshot, id: "snapshotSession", request: jsonOf[api.SnapshotRequest](), status: 201, result: jsonOf[api.Snapshot](),
			summary: "Save the session's workspace (files, modes, links; not processes nor contexts' state) as a named snapshot."},
		{pattern: "POST /v1/sessions/{id}/fork", serve: (*handler).fork, id: "forkSession", request: jsonOf[api.ForkRequest](), status: 201, result: jsonOf[api.ForkResult](),
			summary: "Snapshot the session and start count sessions from it: parallel attempts that diverge without touching each other."},
		{pattern: "GET /v1/snapshots", serve: (*handler).snapshots, id: "listSnapshots", status: 200, result: jsonOf[api.SnapshotList](),
			summary: "The snapshots, oldest first."},
		{pattern: "GET /v1/snapshots/{id}", serve: (*handler).getSnapshot, id: "getSnapshot", status: 200, result: jsonOf[api.Snapshot](),
			summary: "One snapshot, by id or name."},
		{pattern: "DELETE /v1/snapshots/{id}", serve: (*handler).deleteSnapshot, id: "deleteSnapshot", status: 204,
			summary: "Delete a snapshot."},
		{pattern: "GET /v1/sessions/{id}/ports/{port}/connect", serve: (*handler).connectPort, id: "connectPort", status: 101,
			summary: "Upgrade to a WebSocket that carries one TCP connection to a port on the session's own loopback (binary frames both ways; sandboxctl port-forward). Closes 4404 when nothing listens there."},
		{pattern: "POST /v1/sessions/{id}/ports/{port}/preview", serve: (*handler).preview, id: "previewPort", request: jsonOf[api.PreviewRequest](), status: 201, result: jsonOf[api.Preview](),
			summary: "A link that opens a port of the session to a browser on the TCP listener, at an origin of its own (http://PORT-SESSION.localhost:LISTEN/), with a token for that port of that session only, good for ttl (default 1h)."},
		{pattern: "DELETE /v1/sessions/{id}/previews", serve: (*handler).revokePreviews, id: "revokePreviews", status: 204,
			summary: "End every preview link of the session made so far."},
		{pattern: "GET /v1/approvals", serve: (*handler).listApprovals, id: "listApprovals", status: 200, result: jsonOf[api.ApprovalList](),
			query:   []param{{"state", "string", "pending, approved, denied or expired; all when absent"}},
			summary: "Requests a policy in mode \"ask\" held for a person's decision, newest first: what each would run, the findings, and how it was decided."},
		{pattern: "GET /v1/approvals/{id}", serve: (*handler).getApproval, id: "getApproval", status: 200, result: jsonOf[api.Approval](),
			summary: "One approval."},
		{pattern: "POST /v1/approvals/{id}/approve", serve: (*handler).approve, id: "approve", status: 200, request: jsonOf[api.ApprovalDecision](), result: jsonOf[api.Approval](),
			summary: "Approve a pending request: its client gets its result. Who approved is the socket peer's user (or the dashboard)."},
		{pattern: "POST /v1/approvals/{id}/deny", serve: (*handler).deny, id: "deny", status: 200, request: jsonOf[api.ApprovalDecision](), result: jsonOf[api.Approval](),
			summary: "Deny a pending request, with a reason: its client gets approval_denied."},
		{pattern: "GET /v1/sessions/{id}/terminal", serve: (*handler).terminal, id: "terminal", status: 101,
			summary: "An interactive terminal in the session, upgraded to a WebSocket: binary frames carry the terminal's bytes both ways, text frames JSON control messages ({\"type\":\"resize\",\"rows\",\"cols\"} in; {\"type\":\"exit\",\"exit_code\"} or {\"type\":\"error\"} out). Runs alongside the session's other operations.",
			query: []param{{"cmd", "string", "the command, one argument per cmd parameter (default: bash -i)"},
				{"rows", "integer", "the window's rows (default 24)"}, {"cols", "integer", "the window's columns (default 80)"}}},
		{pattern: "GET /v1/sessions/{id}/contexts", serve: (*handler).contexts, id: "listContexts", status: 200, result: jsonOf[api.ContextList](),
			summary: "The session's running contexts: long-lived interpreters an exec with \"context\" runs code in."},
		{pattern: "DELETE /v1/sessions/{id}/contexts/{name}", serve: (*handler).endContext, id: "endContext", status: 204,
			summary: "End a context: its interpreter and its state; its next exec starts it afresh."},
		{pattern: "POST /v1/sessions/{id}/contexts/{name}/restart", serve: (*handler).restartContext, id: "restartContext", status: 200, result: jsonOf[api.Context](),
			summary: "Restart a context: a fresh interpreter, its state gone."},
		{pattern: "GET /v1/sessions/{id}/files", serve: (*handler).listFiles, id: "listFiles", status: 200, result: jsonOf[api.FileList](),
			summary: "List a directory of the session's workspace; links are reported, never followed.",
			query:   []param{{"path", "string", "directory relative to /workspace (default: the workspace)"}, {"recursive", "boolean", "list subdirectories too"}}},
		{pattern: "GET /v1/sessions/{id}/files/{path...}", serve: (*handler).getFile, id: "getFile", status: 200, result: fileOrTar,
			summary: "Download a file, or a directory as a tar archive (the content type says which)."},
		{pattern: "PUT /v1/sessions/{id}/files/{path...}", serve: (*handler).putFile, id: "putFile", request: fileBytes, status: 201, result: jsonOf[api.FileWritten](),
			summary: "Upload a file (parent directories are made).",
			query:   []param{{"mode", "string", "octal permission bits, e.g. 0755 (default 0644)"}}},
		{pattern: "GET /v1/sessions/{id}/watch", serve: (*handler).watch, id: "watchFiles", status: 200, result: content{media: []string{"text/event-stream"}}, events: reflect.TypeFor[api.FileEvent](),
			summary: "Stream what changes under a directory of the workspace (inotify in the sandbox): a ready event once the watch is set, then create, write, remove, rename and chmod events, batched; overflow says how many were left out. Until the client goes or the directory does. Runs alongside the session's other operations.",
			query:   []param{{"path", "string", "directory relative to /workspace (default: the workspace)"}, {"recursive", "boolean", "the directories below it too, new ones included"}}},
		{pattern: "DELETE /v1/sessions/{id}/files/{path...}", serve: (*handler).deleteFile, id: "deleteFile", status: 204,
			summary: "Remove a file or a directory tree."},
		{pattern: "POST /v1/projects", serve: (*handler).createProject, id: "createProject", request: jsonOf[api.ProjectRequest](), status: 201, result: jsonOf[api.Project](),
			summary: "Create a project: files that sessions see read-only at /workspace/project_files."},
		{pattern: "GET /v1/projects", serve: (*handler).projects, id: "listProjects", status: 200, result: jsonOf[api.ProjectList](),
			summary: "The projects."},
		{pattern: "GET /v1/projects/{id}", serve: (*handler).project, id: "getProject", status: 200, result: jsonOf[api.Project](),
			summary: "One project, by id or name."},
		{pattern: "DELETE /v1/projects/{id}", serve: (*handler).deleteProject, id: "deleteProject", status: 204,
			summary: "Delete a project and its files."},
		{pattern: "POST /v1/projects/{id}/files", serve: (*handler).addProjectFile, id: "addProjectFile", request: fileBytes, status: 201, result: jsonOf[api.ProjectFile](),
			summary: "Add a file to a project.",
			query:   []param{{"name", "string", "the file's name in the project"}, {"overwrite", "boolean", "replace a file of that name"}}},
		{pattern: "GET /v1/projects/{id}/files/{name...}", serve: (*handler).getProjectFile, id: "getProjectFile", status: 200, result: fileBytes,
			summary: "Download a project file."},
		{pattern: "DELETE /v1/projects/{id}/files/{name...}", serve: (*handler).deleteProjectFile, id: "deleteProjectFile", status: 204,
			summary: "Remove a project file."},
		{pattern: "POST /v1/dashboard/login", serve: (*handler).dashboardLogin, id: "dashboardLogin", status: 201, result: jsonOf[api.DashboardLogin](),
			summary: "A link that signs a browser in to the dashboard on its TCP listener (http.listen), good for 10 minutes; the session it starts lasts 12 hours. On the socket the dashboard, at /ui/, needs none."},
		{pattern: "GET /v1/openapi.json", serve: (*handler).openAPI, id: "openAPI", status: 200, result: content{media: []string{"application/json"}},
			summary: "This document."},
		{pattern: "GET /metrics", serve: (*handler).metrics, id: "metrics", status: 200, result: prometheus,
			summary: "Prometheus metrics, in the text exposition format."},
	}
}
