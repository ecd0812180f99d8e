package state

import (
	"time"

	"github.com/sandboxd/sandboxd/internal/units"
)

// The records sandboxd keeps: its own types, which the packages that own
// sessions, projects, snapshots, approvals and the history work on, and
// which bbolt holds as they are. They are not the wire's: the API's types
// (package api) are mapped to and from these in one place
// (internal/wire), so a field renamed or retyped on the wire changes no
// stored byte. Their JSON is schema 1's, as sandboxd wrote it on
// 2026-11-24 (testdata/schema1.db): a JSON name changed here fails
// TestTodaysFileStillReads until SchemaVersion moves and a migration
// reads the old file.

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired" // nobody decided within approval_timeout
)

// Session states.
const (
	SessionActive     = "active"
	SessionHibernated = "hibernated" // its workspace on disk, no container; the next call resumes it
	SessionFrozen     = "frozen"     // its container paused, memory and processes kept; the next call thaws it
	SessionLost       = "lost"       // its container vanished, or its archive cannot be trusted
)

// Limits are the limits a run or a session had.
type Limits struct {
	Timeout     units.Duration `json:"timeout,omitempty"`
	Memory      units.ByteSize `json:"memory,omitempty"`
	CPUs        float64        `json:"cpus,omitempty"`
	Pids        int64          `json:"pids,omitempty"`
	OutputLimit units.ByteSize `json:"output_limit,omitempty"`
}

// Usage is what a run used.
type Usage struct {
	CPUUserMS            float64 `json:"cpu_user_ms"`
	CPUSysMS             float64 `json:"cpu_sys_ms"`
	MaxRSSBytes          int64   `json:"max_rss_bytes"`
	WorkspaceBytes       int64   `json:"workspace_bytes,omitempty"`
	NetworkSentBytes     int64   `json:"network_sent_bytes,omitempty"`
	NetworkReceivedBytes int64   `json:"network_received_bytes,omitempty"`
}

// Timings are where a run's time went.
type Timings struct {
	QueueMS     float64 `json:"queue_ms"`
	RunMS       float64 `json:"run_ms"`
	TotalMS     float64 `json:"total_ms"`
	QueueReason string  `json:"queue_reason,omitempty"`
}

// Finding is what a policy found in a request.
type Finding struct {
	Policy   string `json:"policy"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Snippet  string `json:"snippet,omitempty"`
}

// Egress is one connection a run made, or tried to.
type Egress struct {
	Host          string `json:"host"`
	Port          int    `json:"port"`
	Allowed       bool   `json:"allowed"`
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	Error         string `json:"error,omitempty"`
}

// Requester is who asked sandboxd for something: the process at the
// socket's other end, a browser signed in to the dashboard (with the uid
// that made its login link), or an E2B API key (see internal/principal).
type Requester struct {
	Via     string  `json:"via"` // socket, dashboard, e2b
	UID     *uint32 `json:"uid,omitempty"`
	GID     *uint32 `json:"gid,omitempty"`
	PID     int     `json:"pid,omitempty"`
	User    string  `json:"user,omitempty"`    // the uid's name, when it has one
	Process string  `json:"process,omitempty"` // the peer's command
	Client  string  `json:"client,omitempty"`  // as the client names itself: not vouched for
	Key     string  `json:"key,omitempty"`     // an E2B key's id
}

// ApprovalOutcome is how the approval a run waited for ended.
type ApprovalOutcome struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Execution is one run's history record.
type Execution struct {
	ID              string           `json:"id"`
	Kind            string           `json:"kind"`
	Language        string           `json:"language"`
	Session         string           `json:"session,omitempty"`
	StartedAt       time.Time        `json:"started_at"`
	Outcome         string           `json:"outcome"`
	ExitCode        int              `json:"exit_code"`
	Signal          string           `json:"signal,omitempty"`
	TimedOut        bool             `json:"timed_out"`
	OOMKilled       bool             `json:"oom_killed"`
	Truncated       bool             `json:"truncated"`
	StdoutBytes     int64            `json:"stdout_bytes"`
	StderrBytes     int64            `json:"stderr_bytes"`
	Limits          Limits           `json:"limits"`
	Usage           Usage            `json:"usage"`
	Timings         Timings          `json:"timings"`
	Error           string           `json:"error,omitempty"`
	Decision        string           `json:"decision"`
	Findings        []Finding        `json:"findings,omitempty"`
	FindingsOmitted int              `json:"findings_omitted,omitempty"`
	Egress          []Egress         `json:"egress,omitempty"`
	EgressOmitted   int              `json:"egress_omitted,omitempty"`
	Approval        *ApprovalOutcome `json:"approval,omitempty"`
	Requester       *Requester       `json:"requester,omitempty"`
}

// Network is what a sandbox may reach.
type Network struct {
	Allow  []string `json:"allow"`
	Deny   []string `json:"deny,omitempty"`
	Except []string `json:"except,omitempty"`
	Proxy  *Proxy   `json:"proxy,omitempty"`
}

// Proxy is a SOCKS5 proxy a sandbox's connections go through.
type Proxy struct {
	Address  string `json:"address"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// Hibernation is where a hibernated session's workspace waits.
type Hibernation struct {
	At       time.Time `json:"at"`
	Path     string    `json:"path"`
	Bytes    int64     `json:"bytes"`
	SHA256   string    `json:"sha256"`
	Skipped  int       `json:"skipped,omitempty"`
	Memory   bool      `json:"memory"`
	Contexts []string  `json:"contexts,omitempty"`
}

// Session is a long-lived sandbox.
type Session struct {
	ID           string            `json:"id"`
	Language     string            `json:"language"`
	State        string            `json:"state"`
	Error        string            `json:"error,omitempty"`
	Project      string            `json:"project,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	ExpiresAt    time.Time         `json:"expires_at"`
	LastUsedAt   time.Time         `json:"last_used_at"`
	IdleTimeout  units.Duration    `json:"idle_timeout"`
	Limits       Limits            `json:"limits"`
	Network      Network           `json:"network"`
	Env          map[string]string `json:"env,omitempty"`
	Secrets      []string          `json:"secrets,omitempty"`
	ContainerID  string            `json:"container_id"`
	Executions   int               `json:"executions"`
	Hibernation  *Hibernation      `json:"hibernation,omitempty"`
	FrozenAt     *time.Time        `json:"frozen_at,omitempty"`
	Resumes      int               `json:"resumes,omitempty"`
	ResumeMS     float64           `json:"resume_ms,omitempty"`
	ContextsLost []string          `json:"contexts_lost,omitempty"`
}

// ProjectFile is one file of a project.
type ProjectFile struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	AddedAt time.Time `json:"added_at"`
}

// Project is a named set of files sessions start with.
type Project struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	CreatedAt time.Time     `json:"created_at"`
	Files     []ProjectFile `json:"files"`
	Size      int64         `json:"size"`
	Sessions  []string      `json:"sessions,omitempty"`
}

// Snapshot is a saved workspace's record (its archive lives beside the database).
type Snapshot struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Language  string    `json:"language"`
	Session   string    `json:"session"`
	Size      int64     `json:"size"`
	SHA256    string    `json:"sha256"`
	Skipped   int       `json:"skipped,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ApprovalFile is a file of the request an approval is about, as the person sees it.
type ApprovalFile struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	FirstLine int    `json:"first_line,omitempty"` // the file's line Content begins at, when it is a part of a larger file
}

// Approval is a request a policy in mode "ask" put to a person, and its decision.
type Approval struct {
	ID       string         `json:"id"`
	State    string         `json:"state"`
	Kind     string         `json:"kind"`
	Language string         `json:"language"`
	Session  string         `json:"session,omitempty"`
	Argv     []string       `json:"argv,omitempty"`
	Entry    string         `json:"entry,omitempty"`
	Files    []ApprovalFile `json:"files,omitempty"`
	Question Finding        `json:"question"`
	Findings []Finding      `json:"findings"`
	Created  time.Time      `json:"created"`
	Deadline time.Time      `json:"deadline"`
	Decided  *time.Time     `json:"decided,omitempty"`
	By       string         `json:"by,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Waiting  bool           `json:"waiting"`
	// RequestedBy asked for what is approved; DecidedBy decided it (By
	// says so in words); Refused are the decisions not taken, and why.
	RequestedBy *Requester        `json:"requested_by,omitempty"`
	DecidedBy   *Requester        `json:"decided_by,omitempty"`
	Refused     []RefusedDecision `json:"refused,omitempty"`
}

// RefusedDecision is a decision on an approval that was not taken: who
// tried, when, and why not.
type RefusedDecision struct {
	By     Requester `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// ExecutionFilter selects executions: each field that is set must match.
type ExecutionFilter struct {
	Language, Session, Kind, Outcome string
}

// Match says whether e is selected.
func (f ExecutionFilter) Match(e Execution) bool {
	ok := func(want, got string) bool { return want == "" || want == got }
	return ok(f.Language, e.Language) && ok(f.Session, e.Session) && ok(f.Kind, e.Kind) && ok(f.Outcome, e.Outcome)
}
