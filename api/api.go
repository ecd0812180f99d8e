// Package api holds the v1 wire contract of sandboxd: the JSON bodies of
// every endpoint, the streaming events and the stable error codes. The
// daemon's server and the public Go client both use it; it has no logic
// beyond encoding.
package api

import "time"

// Stable error codes.
const (
	CodeInvalidRequest     = "invalid_request"
	CodeUnknownLanguage    = "unknown_language"
	CodeNotFound           = "not_found"
	CodePolicyDenied       = "policy_denied"
	CodePoolExhausted      = "pool_exhausted"
	CodeRuntimeUnavailable = "runtime_unavailable"
	CodeImageMissing       = "image_missing"
	CodePluginUnavailable  = "plugin_unavailable"
	CodeShuttingDown       = "shutting_down"
	CodeInternal           = "internal"
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
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

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
}

// Usage is what an execution consumed.
type Usage struct {
	CPUUserMS   float64 `json:"cpu_user_ms"`
	CPUSysMS    float64 `json:"cpu_sys_ms"`
	MaxRSSBytes int64   `json:"max_rss_bytes"`
}

// Timings split an execution's wall time.
type Timings struct {
	QueueMS float64 `json:"queue_ms"` // waiting for a warm container
	RunMS   float64 `json:"run_ms"`   // inside the sandbox
	TotalMS float64 `json:"total_ms"`
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
}

// RunResult is the result of POST /v1/run (and the final streaming event).
type RunResult struct {
	ID             string    `json:"id"`
	Language       string    `json:"language"`
	ExitCode       int       `json:"exit_code"`
	Signal         string    `json:"signal,omitempty"`
	Stdout         string    `json:"stdout"`
	StdoutEncoding string    `json:"stdout_encoding,omitempty"`
	Stderr         string    `json:"stderr"`
	StderrEncoding string    `json:"stderr_encoding,omitempty"`
	StdoutBytes    int64     `json:"stdout_bytes"`
	StderrBytes    int64     `json:"stderr_bytes"`
	DurationMS     float64   `json:"duration_ms"`
	TimedOut       bool      `json:"timed_out"`
	OOMKilled      bool      `json:"oom_killed"`
	Truncated      bool      `json:"truncated"`
	Stage          string    `json:"stage,omitempty"` // step that ended the run: compile or run
	Error          string    `json:"error,omitempty"` // the program could not be started
	Usage          Usage     `json:"usage"`
	Timings        Timings   `json:"timings"`
	Findings       []Finding `json:"findings"`
}

// Event types of a streaming (application/x-ndjson) response.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventResult = "result"
	EventError  = "error"
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
	ID          string    `json:"id"`
	Kind        string    `json:"kind"` // run
	Language    string    `json:"language"`
	StartedAt   time.Time `json:"started_at"`
	ExitCode    int       `json:"exit_code"`
	Signal      string    `json:"signal,omitempty"`
	TimedOut    bool      `json:"timed_out"`
	OOMKilled   bool      `json:"oom_killed"`
	Truncated   bool      `json:"truncated"`
	StdoutBytes int64     `json:"stdout_bytes"`
	StderrBytes int64     `json:"stderr_bytes"`
	Limits      Limits    `json:"limits"`
	Usage       Usage     `json:"usage"`
	Timings     Timings   `json:"timings"`
	Error       string    `json:"error,omitempty"`
}

// ExecutionList is the body of GET /v1/executions, newest first.
type ExecutionList struct {
	Executions []Execution `json:"executions"`
}

// PoolStats are a language's warm pool figures.
type PoolStats struct {
	Idle      int    `json:"idle"`
	Busy      int    `json:"busy"`
	Starting  int    `json:"starting"`
	Removing  int    `json:"removing"`
	Target    int    `json:"target"` // min_idle
	Max       int    `json:"max"`
	Hits      uint64 `json:"hits"`   // runs served by a warm container
	Misses    uint64 `json:"misses"` // runs that waited for a create
	Created   uint64 `json:"created"`
	Destroyed uint64 `json:"destroyed"`
	Failures  uint64 `json:"failures"`
	LastError string `json:"last_error,omitempty"`
}

// Language is one entry of GET /v1/languages.
type Language struct {
	Name         string    `json:"name"`
	DisplayName  string    `json:"display_name"`
	Aliases      []string  `json:"aliases"`
	Extensions   []string  `json:"extensions"`
	Image        string    `json:"image"`
	ImagePresent bool      `json:"image_present"`
	Plugin       string    `json:"plugin"`
	Limits       Limits    `json:"limits"`
	Pool         PoolStats `json:"pool"`
	Error        string    `json:"error,omitempty"`
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
	Uptime     Duration             `json:"uptime"`
	Executions uint64               `json:"executions"`
	InFlight   int64                `json:"in_flight"`
	Outcomes   map[string]uint64    `json:"outcomes"` // ok, nonzero, timeout, oom, error
	Pools      map[string]PoolStats `json:"pools"`
}
