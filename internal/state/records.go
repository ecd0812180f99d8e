package state

import (
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/units"
)

// The records bbolt holds: the store's own types, not the wire's, so that
// a field renamed or retyped in package api changes no stored byte. Their
// JSON is schema 1's, as the api types wrote it on 2026-11-24
// (testdata/schema1.db). A flat record converts to and from its api type
// with a plain conversion, which stops compiling the day the two differ:
// that is when a migration, or a new field here, is decided. The nested
// ones are mapped field by field (TestRecordsKeepEveryField).

type limitsRecord struct {
	Timeout     units.Duration `json:"timeout,omitempty"`
	Memory      units.ByteSize `json:"memory,omitempty"`
	CPUs        float64        `json:"cpus,omitempty"`
	Pids        int64          `json:"pids,omitempty"`
	OutputLimit units.ByteSize `json:"output_limit,omitempty"`
}

type usageRecord struct {
	CPUUserMS            float64 `json:"cpu_user_ms"`
	CPUSysMS             float64 `json:"cpu_sys_ms"`
	MaxRSSBytes          int64   `json:"max_rss_bytes"`
	WorkspaceBytes       int64   `json:"workspace_bytes,omitempty"`
	NetworkSentBytes     int64   `json:"network_sent_bytes,omitempty"`
	NetworkReceivedBytes int64   `json:"network_received_bytes,omitempty"`
}

type timingsRecord struct {
	QueueMS     float64 `json:"queue_ms"`
	RunMS       float64 `json:"run_ms"`
	TotalMS     float64 `json:"total_ms"`
	QueueReason string  `json:"queue_reason,omitempty"`
}

type findingRecord struct {
	Policy   string `json:"policy"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Snippet  string `json:"snippet,omitempty"`
}

type egressRecord struct {
	Host          string `json:"host"`
	Port          int    `json:"port"`
	Allowed       bool   `json:"allowed"`
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	Error         string `json:"error,omitempty"`
}

type approvalOutcomeRecord struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

type executionRecord struct {
	ID              string                 `json:"id"`
	Kind            string                 `json:"kind"`
	Language        string                 `json:"language"`
	Session         string                 `json:"session,omitempty"`
	StartedAt       time.Time              `json:"started_at"`
	Outcome         string                 `json:"outcome"`
	ExitCode        int                    `json:"exit_code"`
	Signal          string                 `json:"signal,omitempty"`
	TimedOut        bool                   `json:"timed_out"`
	OOMKilled       bool                   `json:"oom_killed"`
	Truncated       bool                   `json:"truncated"`
	StdoutBytes     int64                  `json:"stdout_bytes"`
	StderrBytes     int64                  `json:"stderr_bytes"`
	Limits          limitsRecord           `json:"limits"`
	Usage           usageRecord            `json:"usage"`
	Timings         timingsRecord          `json:"timings"`
	Error           string                 `json:"error,omitempty"`
	Decision        string                 `json:"decision"`
	Findings        []findingRecord        `json:"findings,omitempty"`
	FindingsOmitted int                    `json:"findings_omitted,omitempty"`
	Egress          []egressRecord         `json:"egress,omitempty"`
	EgressOmitted   int                    `json:"egress_omitted,omitempty"`
	Approval        *approvalOutcomeRecord `json:"approval,omitempty"`
}

func toExecution(e api.Execution) executionRecord {
	return executionRecord{
		ID: e.ID, Kind: e.Kind, Language: e.Language, Session: e.Session, StartedAt: e.StartedAt,
		Outcome: e.Outcome, ExitCode: e.ExitCode, Signal: e.Signal, TimedOut: e.TimedOut, OOMKilled: e.OOMKilled,
		Truncated: e.Truncated, StdoutBytes: e.StdoutBytes, StderrBytes: e.StderrBytes,
		Limits: limitsRecord(e.Limits), Usage: usageRecord(e.Usage), Timings: timingsRecord(e.Timings),
		Error: e.Error, Decision: e.Decision,
		Findings: convert(e.Findings, func(f api.Finding) findingRecord { return findingRecord(f) }), FindingsOmitted: e.FindingsOmitted,
		Egress: convert(e.Egress, func(g api.Egress) egressRecord { return egressRecord(g) }), EgressOmitted: e.EgressOmitted,
		Approval: convertPtr(e.Approval, func(a api.ApprovalOutcome) approvalOutcomeRecord { return approvalOutcomeRecord(a) }),
	}
}

func (r executionRecord) wire() api.Execution {
	return api.Execution{
		ID: r.ID, Kind: r.Kind, Language: r.Language, Session: r.Session, StartedAt: r.StartedAt,
		Outcome: r.Outcome, ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, OOMKilled: r.OOMKilled,
		Truncated: r.Truncated, StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes,
		Limits: api.Limits(r.Limits), Usage: api.Usage(r.Usage), Timings: api.Timings(r.Timings),
		Error: r.Error, Decision: r.Decision,
		Findings: convert(r.Findings, func(f findingRecord) api.Finding { return api.Finding(f) }), FindingsOmitted: r.FindingsOmitted,
		Egress: convert(r.Egress, func(g egressRecord) api.Egress { return api.Egress(g) }), EgressOmitted: r.EgressOmitted,
		Approval: convertPtr(r.Approval, func(a approvalOutcomeRecord) api.ApprovalOutcome { return api.ApprovalOutcome(a) }),
	}
}

type networkRecord struct {
	Allow []string `json:"allow"`
}

type hibernationRecord struct {
	At       time.Time `json:"at"`
	Path     string    `json:"path"`
	Bytes    int64     `json:"bytes"`
	SHA256   string    `json:"sha256"`
	Skipped  int       `json:"skipped,omitempty"`
	Memory   bool      `json:"memory"`
	Contexts []string  `json:"contexts,omitempty"`
}

type sessionRecord struct {
	ID           string             `json:"id"`
	Language     string             `json:"language"`
	State        string             `json:"state"`
	Error        string             `json:"error,omitempty"`
	Project      string             `json:"project,omitempty"`
	CreatedAt    time.Time          `json:"created_at"`
	ExpiresAt    time.Time          `json:"expires_at"`
	LastUsedAt   time.Time          `json:"last_used_at"`
	IdleTimeout  units.Duration     `json:"idle_timeout"`
	Limits       limitsRecord       `json:"limits"`
	Network      networkRecord      `json:"network"`
	Env          map[string]string  `json:"env,omitempty"`
	Secrets      []string           `json:"secrets,omitempty"`
	ContainerID  string             `json:"container_id"`
	Executions   int                `json:"executions"`
	Hibernation  *hibernationRecord `json:"hibernation,omitempty"`
	Resumes      int                `json:"resumes,omitempty"`
	ResumeMS     float64            `json:"resume_ms,omitempty"`
	ContextsLost []string           `json:"contexts_lost,omitempty"`
}

func toSession(s api.Session) sessionRecord {
	return sessionRecord{
		ID: s.ID, Language: s.Language, State: s.State, Error: s.Error, Project: s.Project,
		CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt, LastUsedAt: s.LastUsedAt, IdleTimeout: s.IdleTimeout,
		Limits: limitsRecord(s.Limits), Network: networkRecord(s.Network), Env: s.Env, Secrets: s.Secrets,
		ContainerID: s.ContainerID, Executions: s.Executions,
		Hibernation: convertPtr(s.Hibernation, func(h api.Hibernation) hibernationRecord { return hibernationRecord(h) }),
		Resumes:     s.Resumes, ResumeMS: s.ResumeMS, ContextsLost: s.ContextsLost,
	}
}

func (r sessionRecord) wire() api.Session {
	return api.Session{
		ID: r.ID, Language: r.Language, State: r.State, Error: r.Error, Project: r.Project,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, IdleTimeout: r.IdleTimeout,
		Limits: api.Limits(r.Limits), Network: api.Network(r.Network), Env: r.Env, Secrets: r.Secrets,
		ContainerID: r.ContainerID, Executions: r.Executions,
		Hibernation: convertPtr(r.Hibernation, func(h hibernationRecord) api.Hibernation { return api.Hibernation(h) }),
		Resumes:     r.Resumes, ResumeMS: r.ResumeMS, ContextsLost: r.ContextsLost,
	}
}

type projectFileRecord struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	AddedAt time.Time `json:"added_at"`
}

type projectRecord struct {
	ID        string              `json:"id"`
	Name      string              `json:"name"`
	CreatedAt time.Time           `json:"created_at"`
	Files     []projectFileRecord `json:"files"`
	Size      int64               `json:"size"`
	Sessions  []string            `json:"sessions,omitempty"`
}

func toProject(p api.Project) projectRecord {
	return projectRecord{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, Size: p.Size, Sessions: p.Sessions,
		Files: convert(p.Files, func(f api.ProjectFile) projectFileRecord { return projectFileRecord(f) })}
}

func (r projectRecord) wire() api.Project {
	return api.Project{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt, Size: r.Size, Sessions: r.Sessions,
		Files: convert(r.Files, func(f projectFileRecord) api.ProjectFile { return api.ProjectFile(f) })}
}

type snapshotRecord struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Language  string    `json:"language"`
	Session   string    `json:"session"`
	Size      int64     `json:"size"`
	SHA256    string    `json:"sha256"`
	Skipped   int       `json:"skipped,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

type approvalFileRecord struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

type approvalRecord struct {
	ID       string               `json:"id"`
	State    string               `json:"state"`
	Kind     string               `json:"kind"`
	Language string               `json:"language"`
	Session  string               `json:"session,omitempty"`
	Argv     []string             `json:"argv,omitempty"`
	Entry    string               `json:"entry,omitempty"`
	Files    []approvalFileRecord `json:"files,omitempty"`
	Question findingRecord        `json:"question"`
	Findings []findingRecord      `json:"findings"`
	Created  time.Time            `json:"created"`
	Deadline time.Time            `json:"deadline"`
	Decided  *time.Time           `json:"decided,omitempty"`
	By       string               `json:"by,omitempty"`
	Reason   string               `json:"reason,omitempty"`
	Waiting  bool                 `json:"waiting"`
}

func toApproval(a api.Approval) approvalRecord {
	return approvalRecord{
		ID: a.ID, State: a.State, Kind: a.Kind, Language: a.Language, Session: a.Session, Argv: a.Argv, Entry: a.Entry,
		Files:    convert(a.Files, func(f api.ApprovalFile) approvalFileRecord { return approvalFileRecord(f) }),
		Question: findingRecord(a.Question),
		Findings: convert(a.Findings, func(f api.Finding) findingRecord { return findingRecord(f) }),
		Created:  a.Created, Deadline: a.Deadline, Decided: a.Decided, By: a.By, Reason: a.Reason, Waiting: a.Waiting,
	}
}

func (r approvalRecord) wire() api.Approval {
	return api.Approval{
		ID: r.ID, State: r.State, Kind: r.Kind, Language: r.Language, Session: r.Session, Argv: r.Argv, Entry: r.Entry,
		Files:    convert(r.Files, func(f approvalFileRecord) api.ApprovalFile { return api.ApprovalFile(f) }),
		Question: api.Finding(r.Question),
		Findings: convert(r.Findings, func(f findingRecord) api.Finding { return api.Finding(f) }),
		Created:  r.Created, Deadline: r.Deadline, Decided: r.Decided, By: r.By, Reason: r.Reason, Waiting: r.Waiting,
	}
}

// convert maps a slice, keeping nil nil.
func convert[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

// convertPtr maps what p points to, keeping nil nil.
func convertPtr[T, U any](p *T, f func(T) U) *U {
	if p == nil {
		return nil
	}
	u := f(*p)
	return &u
}
