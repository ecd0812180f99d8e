// Package api holds the v1 wire contract of sandboxd: the JSON bodies of
// every endpoint, the streaming events and the stable error codes. The
// daemon's server and the public Go client both use it; it has no logic
// beyond encoding (and writing a finding as compilers do).
package api

import (
	"fmt"
	"strings"
	"time"
)

// Stable error codes.
const (
	CodeInvalidRequest     = "invalid_request"
	CodeUnknownLanguage    = "unknown_language"
	CodeNotFound           = "not_found"
	CodePolicyDenied       = "policy_denied"
	CodePoolExhausted      = "pool_exhausted"
	CodeRuntimeUnavailable = "runtime_unavailable"
	CodeImageMissing       = "image_missing"
	CodeImageBuilding      = "image_building" // sandboxd is building it: retry (Retry-After)
	CodePluginUnavailable  = "plugin_unavailable"
	CodeShuttingDown       = "shutting_down"
	CodeInternal           = "internal"
	CodeConflict           = "conflict"             // e.g. deleting a project sessions use
	CodeTooManySessions    = "too_many_sessions"    // the sessions ceiling is reached
	CodeSessionLost        = "session_lost"         // its container is gone
	CodeTooLarge           = "too_large"            // a transfer over the limit
	CodeNoSpace            = "no_space"             // the workspace is full
	CodeUnauthorized       = "unauthorized"         // the dashboard's TCP listener: no valid token
	CodeForbidden          = "forbidden"            // the dashboard's TCP listener: a cross-site request
	CodeApprovalDenied     = "approval_denied"      // a person denied the request a policy asked about
	CodeApprovalTimeout    = "approval_timeout"     // nobody decided within approval_timeout
	CodeTooManyConnections = "too_many_connections" // a session's ports have as many forwarded as they may
	CodeSnapshotDamaged    = "snapshot_damaged"     // a snapshot's archive was changed or damaged on disk: delete it
)

// Encodings of byte content in JSON. Text is the default: valid UTF-8 is
// sent as is; anything else is base64 and says so.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// Error is the body of every non-2xx response: {"error": {...}}.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Findings are the policies' findings of a policy_denied request.
	Findings []Finding `json:"findings,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf makes an Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorBody wraps Error on the wire.
type ErrorBody struct {
	Error Error `json:"error"`
}

// File is a file of a program. Content is UTF-8 text unless Encoding is
// "base64". Mode 0 means 0644.
type File struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"`
	Mode     uint32 `json:"mode,omitempty"`
}

// Limits a request may set; each may only lower the configured ceiling.
type Limits struct {
	Timeout     Duration `json:"timeout,omitempty"`
	Memory      ByteSize `json:"memory,omitempty"`
	CPUs        float64  `json:"cpus,omitempty"`
	Pids        int64    `json:"pids,omitempty"`
	OutputLimit ByteSize `json:"output_limit,omitempty"`
}

// RunRequest is the body of POST /v1/run.
type RunRequest struct {
	Language      string            `json:"language"`
	Code          string            `json:"code,omitempty"`
	Files         []File            `json:"files,omitempty"`
	Entry         string            `json:"entry,omitempty"`
	Stdin         string            `json:"stdin,omitempty"`
	StdinEncoding string            `json:"stdin_encoding,omitempty"`
	Args          []string          `json:"args,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Timeout       Duration          `json:"timeout,omitempty"`
	Limits        *Limits           `json:"limits,omitempty"`
	Network       *Network          `json:"network,omitempty"` // left out: the language's allow-list
	// Secrets names secret blocks of sandboxd.hcl the program may use:
	// it gets SANDBOXD_SECRET_<name>, a placeholder that the egress proxy
	// replaces with the value in the headers of requests to the secret's
	// hosts. The value never enters the sandbox.
	Secrets []string `json:"secrets,omitempty"`
}

// SecretInfo is a secret block as clients see it: its name, its hosts
// and where in a request its value goes (Header, or Query when set),
// never its value (GET /v1/secrets).
type SecretInfo struct {
	Name   string   `json:"name"`
	Hosts  []string `json:"hosts"`
	Header string   `json:"header,omitempty"`
	Query  string   `json:"query,omitempty"`
}

// SecretList is the body of GET /v1/secrets.
type SecretList struct {
	Secrets []SecretInfo `json:"secrets"`
}

// Network is a sandbox's egress: the hosts it may reach through sandboxd's
// proxy, a subset of its language's allow-list. An empty list reaches
// nothing.
type Network struct {
	Allow []string `json:"allow"`
	// Deny refuses what its entries cover (a name, a wildcard, an IP or
	// a CIDR; without a port, every port), though Allow lets it through,
	// unless Except covers it too; a name is refused by its name and by
	// each address it resolves to. Sessions only.
	Deny   []string `json:"deny,omitempty"`
	Except []string `json:"except,omitempty"`
	// Proxy is a SOCKS5 proxy every connection Allow lets through goes
	// through; when it cannot be reached, the connection fails. Its
	// host:port must be one the language's network.allow names.
	// Sessions only.
	Proxy *Proxy `json:"proxy,omitempty"`
}

// Proxy is a SOCKS5 proxy (RFC 1928), with RFC 1929's user name and
// password when Username is set. The password is never shown back.
type Proxy struct {
	Address  string `json:"address"` // host:port
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// Egress is one connection a program opened (or tried to) through the
// egress proxy.
type Egress struct {
	Host          string `json:"host"`
	Port          int    `json:"port"`
	Allowed       bool   `json:"allowed"`
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	Error         string `json:"error,omitempty"` // why it was refused or ended
}

// Display is one representation of something shown: "image/png" (data
// base64), "image/svg+xml", "text/html", "application/json" or
// "text/plain". A figure or a display() call comes as one or more, its
// text last; Main marks those of the cell's final value (Jupyter's
// execute result).
type Display struct {
	MIME string `json:"mime"`
	Data string `json:"data"`
	Main bool   `json:"main,omitempty"`
}

// IsCaption says whether ds[i] is the text of the image before it (a
// figure's repr, its chart's data between them), which the image stands
// for where images are shown.
func IsCaption(ds []Display, i int) bool {
	if i == 0 || ds[i].MIME != "text/plain" || ds[i].Main {
		return false
	}
	j := i - 1
	if ds[j].MIME == ChartMIME && j > 0 {
		j--
	}
	return strings.HasPrefix(ds[j].MIME, "image/")
}

// DataFrameMIME is a pandas DataFrame's columns as a JSON object of lists
// (small frames; beside its text/html and text/plain).
const DataFrameMIME = "application/vnd.sandboxd.dataframe+json"

// ChartMIME is what a figure charts, as data, beside its image: E2B's
// chart schema (type, title, axes' labels, units and scales, elements),
// where the language's image has an extractor (python's: e2b_charts).
const ChartMIME = "application/vnd.sandboxd.chart+json"

// OutputFile is a file an exec made or changed.
type OutputFile struct {
	Path string `json:"path"` // relative to /workspace, e.g. outputs/plot.png
	Size int64  `json:"size"`
	MIME string `json:"mime"` // by its extension
}

// ContextState says what became of the context an exec ran in.
type ContextState struct {
	Name    string `json:"name"`
	Started bool   `json:"started"`        // its interpreter was started for this exec
	Lost    string `json:"lost,omitempty"` // why the context's earlier state is gone
}

// Context is a session's running context.
type Context struct {
	Name       string    `json:"name"`
	Language   string    `json:"language,omitempty"`
	PID        int       `json:"pid"` // inside the sandbox
	StartedAt  time.Time `json:"started_at"`
	Executions int       `json:"executions"`
	RSSBytes   int64     `json:"rss_bytes"`
}

// ContextList is the body of GET /v1/sessions/{id}/contexts.
type ContextList struct {
	Contexts []Context `json:"contexts"`
}

// Usage is what an execution consumed.
type Usage struct {
	CPUUserMS   float64 `json:"cpu_user_ms"`
	CPUSysMS    float64 `json:"cpu_sys_ms"`
	MaxRSSBytes int64   `json:"max_rss_bytes"`
	// WorkspaceBytes is how much of the workspace was in use when it
	// ended.
	WorkspaceBytes int64 `json:"workspace_bytes,omitempty"`
	// Network bytes through the egress proxy (the Egress records' sum).
	NetworkSentBytes     int64 `json:"network_sent_bytes,omitempty"`
	NetworkReceivedBytes int64 `json:"network_received_bytes,omitempty"`
}

// SandboxUsage is what a session's whole sandbox uses at a moment.
type SandboxUsage struct {
	At time.Time `json:"at"`
	// CPUSeconds is the CPU time its processes used since its container
	// started (a hibernation starts a new one); CPUPercent, of one CPU,
	// since the sample before.
	CPUSeconds     float64 `json:"cpu_seconds"`
	CPUPercent     float64 `json:"cpu_percent"`
	MemoryBytes    int64   `json:"memory_bytes"` // less the page cache it could drop
	Processes      int     `json:"processes"`    // the supervisor not counted
	WorkspaceBytes int64   `json:"workspace_bytes"`
	TmpBytes       int64   `json:"tmp_bytes"`
	// Network bytes through the egress proxy since its container started.
	NetworkSentBytes     int64 `json:"network_sent_bytes"`
	NetworkReceivedBytes int64 `json:"network_received_bytes"`
}

// SessionMetrics is the body of GET /v1/sessions/{id}/metrics.
type SessionMetrics struct {
	Session  string `json:"session"`
	Language string `json:"language"`
	Limits   Limits `json:"limits"` // what the figures are bounded by
	// Now is sampled for the request; absent while the session
	// hibernates (it has no processes).
	Now *SandboxUsage `json:"now,omitempty"`
	// Series is the last few minutes, oldest first, a sample every
	// Every while the session is awake.
	Series []SandboxUsage `json:"series"`
	Every  Duration       `json:"every"`
}

// Timings split an execution's wall time.
type Timings struct {
	QueueMS float64 `json:"queue_ms"` // waiting for a warm container
	RunMS   float64 `json:"run_ms"`   // inside the sandbox
	TotalMS float64 `json:"total_ms"`
	// QueueReason is what the run waited on in the queue, when it waited
	// long on something (a node pulling the image, every container busy).
	QueueReason string `json:"queue_reason,omitempty"`
}

// Finding is a policy finding (see the policy plugins).
type Finding struct {
	Policy   string `json:"policy"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Snippet  string `json:"snippet,omitempty"` // the line, secrets masked
}

// Location is where a finding is: "file:line:col", the file alone, or "".
func (f Finding) Location() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d:%d", f.File, f.Line, f.Column)
	}
	return f.File
}

// String is the finding as compilers write theirs:
// "file:line:col: severity policy/rule: message".
func (f Finding) String() string {
	where := f.Location()
	if where != "" {
		where += ": "
	}
	return fmt.Sprintf("%s%s %s/%s: %s", where, f.Severity, f.Policy, f.Rule, f.Message)
}

// RuleStats counts one policy rule's findings, and the requests it denied.
type RuleStats struct {
	Findings uint64 `json:"findings"`
	Denials  uint64 `json:"denials"`
}

// ValidateRequest is the body of POST /v1/validate: a program (as for
// run) or a session command (argv), judged by the policies without
// running anything.
type ValidateRequest struct {
	Language string   `json:"language"`
	Code     string   `json:"code,omitempty"`
	Files    []File   `json:"files,omitempty"`
	Entry    string   `json:"entry,omitempty"`
	Argv     []string `json:"argv,omitempty"`
	Timeout  Duration `json:"timeout,omitempty"`
	Limits   *Limits  `json:"limits,omitempty"`
}

// ValidateResult is the answer of POST /v1/validate.
type ValidateResult struct {
	Allowed  bool      `json:"allowed"`
	Findings []Finding `json:"findings"`
	// NeedsApproval: a policy in mode "ask" would hold it for a person.
	NeedsApproval bool `json:"needs_approval,omitempty"`
}

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired" // nobody decided within approval_timeout
)

// Approval is a request that a policy in mode "ask" holds for a person's
// decision: what it would run, why it was asked about, and how it ended.
type Approval struct {
	ID       string         `json:"id"`
	State    string         `json:"state"`
	Kind     string         `json:"kind"` // run, exec or put
	Language string         `json:"language"`
	Session  string         `json:"session,omitempty"`
	Argv     []string       `json:"argv,omitempty"`
	Entry    string         `json:"entry,omitempty"`
	Files    []ApprovalFile `json:"files,omitempty"`
	// Question is the finding that asked; Findings are all the policies'.
	Question Finding    `json:"question"`
	Findings []Finding  `json:"findings"`
	Created  time.Time  `json:"created"`
	Deadline time.Time  `json:"deadline"`
	Decided  *time.Time `json:"decided,omitempty"`
	By       string     `json:"by,omitempty"` // who decided, in words
	Reason   string     `json:"reason,omitempty"`
	// Waiting says whether its client still waits for the decision (a
	// client that went, or a restart, leaves the decision to be recorded
	// only).
	Waiting bool `json:"waiting"`
	// RequestedBy asked for what is held; DecidedBy decided it; Refused
	// are decisions not taken (the requester's own, or someone not among
	// the approvers), with why.
	RequestedBy *Requester        `json:"requested_by,omitempty"`
	DecidedBy   *Requester        `json:"decided_by,omitempty"`
	Refused     []RefusedDecision `json:"refused,omitempty"`
}

// Requester is who asked sandboxd for something: the process at the
// socket's other end (uid, gid, pid and command, as the kernel reports
// them), a browser signed in to the dashboard (with the uid that made its
// login link), or an E2B API key. Client is what the client calls itself
// (the Sandboxd-Client header: an MCP client's name), as it says.
type Requester struct {
	Via     string  `json:"via"` // socket, dashboard, e2b
	UID     *uint32 `json:"uid,omitempty"`
	GID     *uint32 `json:"gid,omitempty"`
	PID     int     `json:"pid,omitempty"`
	User    string  `json:"user,omitempty"`
	Process string  `json:"process,omitempty"`
	Client  string  `json:"client,omitempty"`
	Key     string  `json:"key,omitempty"` // an E2B key's id
}

// RefusedDecision is a decision on an approval that was not taken.
type RefusedDecision struct {
	By     Requester `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// ApprovalOutcome is how a request a policy asked about was decided, as
// its result and its history record carry it.
type ApprovalOutcome struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ApprovalFile is a file of an approval's program, as text for a person
// to read (the start of a large one).
type ApprovalFile struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	// FirstLine is the line of the file Content begins at, when it shows
	// a part of a larger file (where a finding is); 0 is 1.
	FirstLine int `json:"first_line,omitempty"`
}

// ApprovalList is the body of GET /v1/approvals.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// ApprovalDecision is the body of POST /v1/approvals/{id}/approve|deny.
type ApprovalDecision struct {
	Reason string `json:"reason,omitempty"`
}

// RunResult is the result of POST /v1/run (and the final streaming event).
type RunResult struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Session  string `json:"session,omitempty"` // set for a session exec
	// Container is the short id of the container a one-shot run ran in:
	// one container serves many runs, each in a sandbox made fresh.
	Container      string  `json:"container,omitempty"`
	ExitCode       int     `json:"exit_code"`
	Signal         string  `json:"signal,omitempty"`
	Stdout         string  `json:"stdout"`
	StdoutEncoding string  `json:"stdout_encoding,omitempty"`
	Stderr         string  `json:"stderr"`
	StderrEncoding string  `json:"stderr_encoding,omitempty"`
	StdoutBytes    int64   `json:"stdout_bytes"`
	StderrBytes    int64   `json:"stderr_bytes"`
	DurationMS     float64 `json:"duration_ms"`
	// Warm: a runtime started ahead in the sandbox ran the program (see
	// the language's pool figures).
	Warm      bool      `json:"warm,omitempty"`
	TimedOut  bool      `json:"timed_out"`
	OOMKilled bool      `json:"oom_killed"`
	Truncated bool      `json:"truncated"`
	Stage     string    `json:"stage,omitempty"` // step that ended the run: compile or run
	Steps     []Step    `json:"steps,omitempty"` // each step, for programs that compile first
	Error     string    `json:"error,omitempty"` // the program could not be started
	Usage     Usage     `json:"usage"`
	Timings   Timings   `json:"timings"`
	Findings  []Finding `json:"findings"`
	Decision  string    `json:"decision"` // the policies' combined decision: allowed
	// Display is what the execution showed besides its output: a
	// context's final expression value, figures, tables.
	Display []Display `json:"display,omitempty"`
	// Context is set for an exec in a context.
	Context *ContextState `json:"context,omitempty"`
	// Resumed: the session was hibernated, and woke for this exec in
	// ResumeMS.
	Resumed  bool    `json:"resumed,omitempty"`
	ResumeMS float64 `json:"resume_ms,omitempty"`
	// Outputs are the files under /workspace/outputs a session's exec
	// made or changed (up to 100; OutputsOmitted counts the rest): what a
	// client may want to download.
	Outputs        []OutputFile `json:"outputs,omitempty"`
	OutputsOmitted int          `json:"outputs_omitted,omitempty"`
	// Egress lists the execution's connections through the egress proxy,
	// up to 256; EgressUnrecorded counts those beyond.
	Egress           []Egress `json:"egress,omitempty"`
	EgressUnrecorded int      `json:"egress_unrecorded,omitempty"`
	// Approval is the person's decision that let it run, when a policy
	// in mode "ask" held it.
	Approval *ApprovalOutcome `json:"approval,omitempty"`
}

// Step is one step of a run (compile, then run), reported apart so that
// "does not compile" is told from "crashed". Stderr is the step's own.
type Step struct {
	Name           string  `json:"name"`
	ExitCode       int     `json:"exit_code"`
	TimedOut       bool    `json:"timed_out,omitempty"`
	DurationMS     float64 `json:"duration_ms"`
	Stderr         string  `json:"stderr"`
	StderrEncoding string  `json:"stderr_encoding,omitempty"`
}

// Event types of a streaming (application/x-ndjson) response.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventResult = "result"
	EventError  = "error"
	// EventQueued says, in data, what a run waits on before it starts,
	// once it has waited a second and each time that changes.
	EventQueued = "queued"
)

// ContentTypeNDJSON asks for, and marks, a streaming response.
const ContentTypeNDJSON = "application/x-ndjson"

// Event is one line of a streaming response: output as it is produced, then
// exactly one result or error.
type Event struct {
	Type     string     `json:"type"`
	Data     string     `json:"data,omitempty"`
	Encoding string     `json:"encoding,omitempty"`
	Result   *RunResult `json:"result,omitempty"`
	Error    *Error     `json:"error,omitempty"`
}

// Execution is one recorded execution, as GET /v1/executions lists them.
type Execution struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"` // run, exec, terminal, or process (an E2B client's)
	Language  string    `json:"language"`
	Session   string    `json:"session,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// Outcome is ok, nonzero, timeout, oom, error (sandboxd could not
	// carry it out) or denied (by the policies).
	Outcome     string  `json:"outcome"`
	ExitCode    int     `json:"exit_code"`
	Signal      string  `json:"signal,omitempty"`
	TimedOut    bool    `json:"timed_out"`
	OOMKilled   bool    `json:"oom_killed"`
	Truncated   bool    `json:"truncated"`
	StdoutBytes int64   `json:"stdout_bytes"`
	StderrBytes int64   `json:"stderr_bytes"`
	Limits      Limits  `json:"limits"`
	Usage       Usage   `json:"usage"`
	Timings     Timings `json:"timings"`
	Error       string  `json:"error,omitempty"`
	// Decision is the policies' combined decision: allowed or denied (a
	// denied request never ran); Findings are theirs, secrets masked. The
	// history keeps the first few findings, each cut short, and counts the
	// rest in FindingsOmitted: a record's size is bounded.
	Decision        string    `json:"decision"`
	Findings        []Finding `json:"findings,omitempty"`
	FindingsOmitted int       `json:"findings_omitted,omitempty"`
	// Egress is the execution's connections through the egress proxy,
	// denied ones first; the history keeps a few and counts the rest in
	// EgressOmitted.
	Egress        []Egress `json:"egress,omitempty"`
	EgressOmitted int      `json:"egress_omitted,omitempty"`
	// Approval is how a person decided, when a policy in mode "ask" held
	// it (approved, denied or expired).
	Approval *ApprovalOutcome `json:"approval,omitempty"`
	// Requester asked for it (history records only).
	Requester *Requester `json:"requester,omitempty"`
}

// Policy decisions.
const (
	DecisionAllowed = "allowed"
	DecisionDenied  = "denied"
)

// ExecutionFilter selects executions: each field that is set must match.
type ExecutionFilter struct {
	Language, Session, Kind, Outcome string
}

// ExecutionList is the body of GET /v1/executions, newest first.
type ExecutionList struct {
	Executions []Execution `json:"executions"`
}

// PoolStats are a language's warm pool figures.
type PoolStats struct {
	Idle      int `json:"idle"`
	IdleUsed  int `json:"idle_used"` // of Idle: recycled after a run (one-shot runs only)
	Busy      int `json:"busy"`
	Recycling int `json:"recycling"` // being made fresh after a run
	Starting  int `json:"starting"`
	Removing  int `json:"removing"`
	Waiting   int `json:"waiting"` // requests queued for a container
	// StartingFor is what the containers being started wait on outside
	// sandboxd, when they said (a node pulling the image, a pod no node
	// can take yet).
	StartingFor string `json:"starting_for,omitempty"`
	// Target is how many the pool wants idle now: min_idle, or more when
	// the recent peak of demand was higher (the pool follows demand).
	Target    int    `json:"target"`
	MinIdle   int    `json:"min_idle"`
	Max       int    `json:"max"`
	Hits      uint64 `json:"hits"`   // runs served by a warm container
	Reused    uint64 `json:"reused"` // of Hits: by a container that served runs before
	Misses    uint64 `json:"misses"` // runs that waited for a create
	Created   uint64 `json:"created"`
	Recycled  uint64 `json:"recycled"` // containers made fresh after a run and kept
	Retired   uint64 `json:"retired"`  // containers removed after a run (not reusable)
	Trimmed   uint64 `json:"trimmed"`  // idle containers removed as demand fell
	Destroyed uint64 `json:"destroyed"`
	Failures  uint64 `json:"failures"`
	LastError string `json:"last_error,omitempty"`
	// Warm: the language's programs are run by a runtime started ahead in
	// each container (a container joins the pool once it is ready).
	// WarmHits counts runs it ran; WarmMisses runs that started cold
	// (another environment or directory, or no runtime ready);
	// WarmFailures runtimes that never became ready.
	Warm         bool   `json:"warm"`
	WarmHits     uint64 `json:"warm_hits"`
	WarmMisses   uint64 `json:"warm_misses"`
	WarmFailures uint64 `json:"warm_failures"`
}

// Language is one entry of GET /v1/languages.
type Language struct {
	Name         string   `json:"name"`
	DisplayName  string   `json:"display_name"`
	Aliases      []string `json:"aliases"`
	Extensions   []string `json:"extensions"`
	Image        string   `json:"image"`              // what its containers run: BaseImage, or BaseImage with Packages
	BaseImage    string   `json:"base_image"`         // the configured image
	Packages     []string `json:"packages,omitempty"` // baked into Image
	ImagePresent bool     `json:"image_present"`
	Version      string   `json:"version,omitempty"` // the runtime's, as the image reports it; empty until known
	Plugin       string   `json:"plugin"`
	Runtime      string   `json:"runtime"` // the OCI runtime its containers run under, e.g. runc or runsc
	Limits       Limits   `json:"limits"`
	Network      Network  `json:"network"`  // the most its sandboxes may reach
	Contexts     bool     `json:"contexts"` // sessions may keep its interpreters (exec with "context")
	// ContextLanguages are the other languages whose contexts its sessions
	// run beside their own (exec with "context" and "language"), as its
	// block's contexts list them.
	ContextLanguages []string `json:"context_languages,omitempty"`
	// Desktop is the screen its sessions have ("1024x768"; the desktop
	// API drives it), empty when they have none.
	Desktop string `json:"desktop,omitempty"`
	// Hibernation says what a hibernated session of it keeps: "memory"
	// (its sandbox checkpointed: processes and contexts too) or
	// "workspace" (files, env, limits, network; contexts' memory is lost).
	Hibernation string `json:"hibernation"`
	// Instructions tell an AI agent what the language is for here and how
	// to use it (the operator's, or the plugin's shipped ones).
	Instructions string    `json:"instructions,omitempty"`
	Pool         PoolStats `json:"pool"`
	// Building is set while sandboxd builds the language's image (see
	// build_missing_images); runs get image_building until it lands.
	Building *ImageBuilding `json:"building,omitempty"`
	Error    string         `json:"error,omitempty"` // e.g. the image is missing, and how to build it
}

// ImageBuilding is a language's image build under way.
type ImageBuilding struct {
	Since time.Time `json:"since"`
	Step  string    `json:"step"` // how far it has got, e.g. "Step 3/9 : RUN apt-get ..."
}

// ImageBuildRequest is the body of POST /v1/images/build. No languages:
// every configured language.
type ImageBuildRequest struct {
	Languages []string `json:"languages,omitempty"`
}

// ImageBuilt is the outcome of one image of a build.
type ImageBuilt struct {
	Language   string   `json:"language"`
	Image      string   `json:"image"`              // a registry's name: built and pushed
	Packages   []string `json:"packages,omitempty"` // set for an image derived with packages
	DurationMS float64  `json:"duration_ms"`
	Note       string   `json:"note,omitempty"` // e.g. an image sandboxd does not build
	// PulledBy are the cluster nodes that pulled the image once it was
	// pushed (a language in pods).
	PulledBy []string `json:"pulled_by,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// ImageBuildResult is the answer of POST /v1/images/build (and its final
// streaming event).
type ImageBuildResult struct {
	Images []ImageBuilt `json:"images"`
}

// ImageBuildEvent is a line of a streamed image build:
// {"type":"progress","image":...,"line":...}, then one "result" (or
// "error" when nothing could be built).
type ImageBuildEvent struct {
	Type   string            `json:"type"`
	Image  string            `json:"image,omitempty"`
	Line   string            `json:"line,omitempty"`
	Result *ImageBuildResult `json:"result,omitempty"`
	Error  *Error            `json:"error,omitempty"`
}

// LanguageList is the body of GET /v1/languages.
type LanguageList struct {
	Languages []Language `json:"languages"`
}

// Plugin is one entry of GET /v1/plugins.
type Plugin struct {
	Kind      string    `json:"kind"`
	Name      string    `json:"name"`
	Path      string    `json:"path"`
	Version   string    `json:"version,omitempty"`
	Running   bool      `json:"running"`
	Restarts  int       `json:"restarts"`
	LastError string    `json:"last_error,omitempty"`
	RetryAt   time.Time `json:"retry_at,omitempty"`
}

// PluginList is the body of GET /v1/plugins.
type PluginList struct {
	Plugins []Plugin `json:"plugins"`
}

// Health is the body of GET /v1/health. Status is "ok" or "degraded";
// degraded answers 503.
type Health struct {
	Status   string       `json:"status"`
	Version  string       `json:"version"`
	Uptime   Duration     `json:"uptime"`
	Docker   DockerHealth `json:"docker"`
	Plugins  []Plugin     `json:"plugins"`
	Problems []string     `json:"problems,omitempty"`
}

// DockerHealth is the engine part of Health.
type DockerHealth struct {
	OK         bool   `json:"ok"`
	Version    string `json:"version,omitempty"`
	APIVersion string `json:"api_version,omitempty"`
	Runtime    string `json:"runtime,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Stats is the body of GET /v1/stats.
type Stats struct {
	Uptime             Duration             `json:"uptime"`
	Executions         uint64               `json:"executions"`
	InFlight           int64                `json:"in_flight"`
	Outcomes           map[string]uint64    `json:"outcomes"` // ok, nonzero, timeout, oom, error
	Pools              map[string]PoolStats `json:"pools"`
	Rules              map[string]RuleStats `json:"rules"`    // by "policy/rule"
	Sessions           int                  `json:"sessions"` // running: neither frozen nor hibernated
	SessionsFrozen     int                  `json:"sessions_frozen"`
	SessionsLost       int                  `json:"sessions_lost"` // whose container vanished, kept until deleted or expired
	SessionsHibernated int                  `json:"sessions_hibernated"`
	Egress             EgressCounts         `json:"egress"` // connections since the start
}

// EgressCounts are connections through the egress proxy by decision.
type EgressCounts struct {
	Allowed uint64 `json:"allowed"`
	Denied  uint64 `json:"denied"`
}

// StatsSample is what the daemon did over one interval of its timeline:
// counts are of that interval, levels are at its end.
type StatsSample struct {
	At      time.Time `json:"at"` // the interval's end
	Seconds float64   `json:"seconds"`
	// Outcomes counts the executions that ended in it, by outcome;
	// LatencyP50MS and LatencyP95MS are of their total times.
	Outcomes     map[string]uint64 `json:"outcomes"`
	LatencyP50MS float64           `json:"latency_p50_ms"`
	LatencyP95MS float64           `json:"latency_p95_ms"`
	InFlight     int64             `json:"in_flight"`
	Sessions     int               `json:"sessions"`
	// Pools are the languages' pools that held or served containers.
	Pools map[string]PoolSample `json:"pools"`
	// WarmRuns ran in a runtime started ahead; ColdRuns could have, but
	// started as usual.
	WarmRuns uint64       `json:"warm_runs"`
	ColdRuns uint64       `json:"cold_runs"`
	Egress   EgressCounts `json:"egress"`
}

// PoolSample is a pool over one interval: idle and busy at its end, the
// requests it served warm (hits) and those that waited for a create.
type PoolSample struct {
	Idle   int    `json:"idle"`
	Busy   int    `json:"busy"`
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
}

// StatsHistory is the body of GET /v1/stats/history: the last hour, a
// sample every Every, oldest first.
type StatsHistory struct {
	Every   Duration      `json:"every"`
	Samples []StatsSample `json:"samples"`
}

// SessionRequest is the body of POST /v1/sessions.
type SessionRequest struct {
	Language    string            `json:"language"`
	Limits      *Limits           `json:"limits,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	TTL         Duration          `json:"ttl,omitempty"`
	IdleTimeout Duration          `json:"idle_timeout,omitempty"`
	Project     string            `json:"project,omitempty"` // id or name
	Network     *Network          `json:"network,omitempty"` // left out: the language's allow-list
	Secrets     []string          `json:"secrets,omitempty"` // as a run's, for the session's life
	// FromSnapshot starts the session with a snapshot's workspace (id or
	// name); its language is the snapshot's unless one is given.
	FromSnapshot string `json:"from_snapshot,omitempty"`
}

// Snapshot is a saved workspace: its files, directories and links (not
// its processes, nor a context's interpreter state), content-addressed in
// the state directory.
type Snapshot struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Language  string    `json:"language"`
	Session   string    `json:"session"` // the session it was taken from
	Size      int64     `json:"size"`    // bytes of its archive
	SHA256    string    `json:"sha256"`
	Skipped   int       `json:"skipped,omitempty"` // FIFOs, sockets and devices left out
	CreatedAt time.Time `json:"created_at"`
}

// SnapshotList is the body of GET /v1/snapshots.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// SnapshotRequest is the body of POST /v1/sessions/{id}/snapshot.
type SnapshotRequest struct {
	Name string `json:"name"`
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork: Count new
// sessions (default 1) that start from the session's workspace now.
type ForkRequest struct {
	Count int      `json:"count,omitempty"`
	Name  string   `json:"name,omitempty"` // the snapshot's; default: made up
	TTL   Duration `json:"ttl,omitempty"`
}

// ForkResult is the answer of a fork: the snapshot it took and the
// sessions made from it.
type ForkResult struct {
	Snapshot Snapshot  `json:"snapshot"`
	Sessions []Session `json:"sessions"`
}

// Session states.
const (
	SessionActive     = "active"
	SessionHibernated = "hibernated" // its workspace on disk, no container; the next call resumes it
	SessionFrozen     = "frozen"     // its container paused, memory and processes kept, no CPU used; the next call thaws it
	SessionLost       = "lost"       // its container vanished, or its archive cannot be trusted
)

// ContextsLostByHibernation is what a context of a session that
// hibernated reports on its first cell after: its interpreter's memory was
// not kept.
const ContextsLostByHibernation = "hibernated without memory"

// HeaderClient is where a client may name itself (an MCP client's name,
// an agent framework's): the history and approvals record it as the
// client says, beside what sandboxd vouches for (the socket peer).
const HeaderClient = "Sandboxd-Client"

// HeaderResumedMS is set on the answer to any call that woke a hibernated
// session: how long the resume took, in milliseconds.
const HeaderResumedMS = "Sandboxd-Resumed-Ms"

// Hibernation is where a hibernated session's workspace sleeps: a tar
// archive under state_dir/sessions, checked against its digest on resume.
type Hibernation struct {
	At      time.Time `json:"at"`
	Path    string    `json:"path"`              // the archive, on sandboxd's host
	Bytes   int64     `json:"bytes"`             // the archive's size on disk
	SHA256  string    `json:"sha256"`            // of the archive
	Skipped int       `json:"skipped,omitempty"` // FIFOs, sockets and devices left out
	// Memory: the sandbox was checkpointed too (gVisor), so its processes
	// and contexts come back as they were; the archive serves if the
	// checkpoint cannot be restored.
	Memory bool `json:"memory"`
	// Contexts are the interpreters that ran when it hibernated.
	Contexts []string `json:"contexts,omitempty"`
}

// Session is a container of one's own that keeps its files across
// executions until it is deleted or expires.
type Session struct {
	ID          string            `json:"id"`
	Language    string            `json:"language"`
	State       string            `json:"state"`
	Error       string            `json:"error,omitempty"` // why it was lost
	Project     string            `json:"project,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	ExpiresAt   time.Time         `json:"expires_at"`
	LastUsedAt  time.Time         `json:"last_used_at"`
	IdleTimeout Duration          `json:"idle_timeout"`
	Limits      Limits            `json:"limits"`
	Network     Network           `json:"network"`
	Env         map[string]string `json:"env,omitempty"`
	Secrets     []string          `json:"secrets,omitempty"` // their placeholders are in Env
	ContainerID string            `json:"container_id"`      // empty while hibernated
	Executions  int               `json:"executions"`
	// Hibernation is set while the session is hibernated.
	Hibernation *Hibernation `json:"hibernation,omitempty"`
	// FrozenAt is set while the session is frozen: since when.
	FrozenAt *time.Time `json:"frozen_at,omitempty"`
	// Resumes counts the times it woke from hibernation; ResumeMS is how
	// long the last took.
	Resumes  int     `json:"resumes,omitempty"`
	ResumeMS float64 `json:"resume_ms,omitempty"`
	// ContextsLost are contexts whose memory hibernation lost, until their
	// next cell reports it.
	ContextsLost []string `json:"contexts_lost,omitempty"`
}

// SessionList is the body of GET /v1/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// ExecRequest is the body of POST /v1/sessions/{id}/exec: a command (argv)
// or a program in the session's language (code or files, as for run).
type ExecRequest struct {
	Argv          []string `json:"argv,omitempty"`
	Code          string   `json:"code,omitempty"`
	Files         []File   `json:"files,omitempty"`
	Entry         string   `json:"entry,omitempty"`
	Args          []string `json:"args,omitempty"`
	Stdin         string   `json:"stdin,omitempty"`
	StdinEncoding string   `json:"stdin_encoding,omitempty"`
	Cwd           string   `json:"cwd,omitempty"` // relative to /workspace
	// Context runs code in the session's long-lived interpreter of this
	// name (started on first use): variables, imports and open files
	// persist from exec to exec, and a final expression's value is shown.
	Context string `json:"context,omitempty"`
	// Language is a context's language when it is not the session's: one
	// its language lists in contexts (GET /v1/languages:
	// context_languages). A context runs cells of the language it was
	// started for.
	Language string            `json:"language,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Timeout  Duration          `json:"timeout,omitempty"`
	Limits   *Limits           `json:"limits,omitempty"` // timeout and output_limit apply
}

// FileEntry is one file of a session listing. Links are reported, never
// followed.
type FileEntry struct {
	Path    string    `json:"path"` // relative to /workspace
	Type    string    `json:"type"` // file, dir, symlink, fifo, socket, device
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // octal permission bits, e.g. "0644"
	ModTime time.Time `json:"mtime"`
	Target  string    `json:"target,omitempty"` // where a symlink points
	// Metadata is a file's user-defined metadata: its user.e2b.* extended
	// attributes (as E2B's agent keeps them), the prefix taken off.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FileEvent is a change under a watched directory of a session's
// workspace (GET /v1/sessions/{id}/watch).
type FileEvent struct {
	Path string `json:"path,omitempty"` // relative to /workspace
	// Type is create, write, remove, rename (moved away or in) or chmod;
	// overflow says that Count events were left out (more came at once
	// than one batch carries, or than the client read); ready, the first
	// of a stream, that the watch is set.
	Type  string `json:"type"`
	Count int    `json:"count,omitempty"`
}

// Kinds of FileEvent beside the changes': the first of a stream, and the
// count of what was left out.
const (
	FileEventReady    = "ready"
	FileEventOverflow = "overflow"
)

// Desktop is a desktop session's screen (GET /v1/sessions/{id}/desktop,
// and the answer of each action): its size in pixels, the pointer, the
// focused window and the windows the window manager shows.
type Desktop struct {
	Width   int             `json:"width"`
	Height  int             `json:"height"`
	Cursor  Point           `json:"cursor"`
	Focused string          `json:"focused,omitempty"` // a window's id
	Windows []DesktopWindow `json:"windows"`
}

// Point is a place on a screen, in pixels from its top left corner.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// DesktopWindow is one window on a desktop's screen.
type DesktopWindow struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// DesktopAction is the body of POST /v1/sessions/{id}/desktop/actions:
// one thing done to the screen, as Action names it.
//   - move: the pointer to x, y.
//   - click, double_click: button (left, middle, right; left by
//     default), at x, y or where the pointer is.
//   - drag: button held from x, y to to_x, to_y.
//   - scroll: amount wheel clicks (3 by default) in direction (up, down,
//     left, right), at x, y or where the pointer is.
//   - type: text (at most 4 KiB), as keystrokes, to the focused window.
//   - key: keys, a key or chord as xdotool names them ("Return",
//     "ctrl+c", "ctrl+shift+t"), or several separated by spaces.
//   - open: target, a URL or a path, in Chromium (a file is shown, never run).
//   - focus: window, by the id the screen's windows give.
type DesktopAction struct {
	Action    string `json:"action"`
	X         *int   `json:"x,omitempty"`
	Y         *int   `json:"y,omitempty"`
	ToX       *int   `json:"to_x,omitempty"`
	ToY       *int   `json:"to_y,omitempty"`
	Button    string `json:"button,omitempty"`
	Direction string `json:"direction,omitempty"`
	Amount    int    `json:"amount,omitempty"`
	Text      string `json:"text,omitempty"`
	Keys      string `json:"keys,omitempty"`
	Target    string `json:"target,omitempty"`
	Window    string `json:"window,omitempty"`
}

// PortList is the body of GET /v1/sessions/{id}/ports: the TCP ports
// listening inside the session's sandbox (its own loopback or any
// address; the sandbox has no network of its own).
type PortList struct {
	Ports []Port `json:"ports"`
}

// Port is a TCP socket listening in a sandbox.
type Port struct {
	Address string `json:"address"` // e.g. 0.0.0.0, 127.0.0.1, ::
	Port    int    `json:"port"`
}

// FileList is the body of GET /v1/sessions/{id}/files.
type FileList struct {
	Path    string      `json:"path"`
	Entries []FileEntry `json:"entries"`
}

// FileWritten answers an upload.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Findings are what the policies said of the upload (they judge its
	// first MiB) when they let it through; a denial is policy_denied.
	Findings []Finding `json:"findings,omitempty"`
}

// ContentTypeTar marks a directory download.
const ContentTypeTar = "application/x-tar"

// ProjectRequest is the body of POST /v1/projects.
type ProjectRequest struct {
	Name string `json:"name"`
}

// Project is a persistent set of files that sessions see read-only at
// /workspace/project_files. Content is stored once per SHA-256.
type Project struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	CreatedAt time.Time     `json:"created_at"`
	Files     []ProjectFile `json:"files"`
	Size      int64         `json:"size"`
	Sessions  []string      `json:"sessions,omitempty"` // active sessions that mount it
}

// ProjectFile is one file of a project.
type ProjectFile struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	AddedAt time.Time `json:"added_at"`
}

// ProjectList is the body of GET /v1/projects.
type ProjectList struct {
	Projects []Project `json:"projects"`
}

// DashboardLogin is the body of POST /v1/dashboard/login: a link that
// signs a browser in to the dashboard's TCP listener, good until
// ExpiresAt.
type DashboardLogin struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PreviewRequest asks for a preview link (POST
// /v1/sessions/{id}/ports/{port}/preview).
type PreviewRequest struct {
	TTL Duration `json:"ttl,omitempty"` // default 1h, at most 168h
}

// Preview is a link that opens a session's port to a browser on the TCP
// listener, at an origin of its own (Host), with a token for that port
// of that session only.
type Preview struct {
	URL       string    `json:"url"`
	Host      string    `json:"host"`
	Token     string    `json:"token"`
	Session   string    `json:"session"`
	Port      int       `json:"port"`
	ExpiresAt time.Time `json:"expires_at"`
}
