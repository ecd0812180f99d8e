// Package supervisor is the conversation between sandboxd and sandbox-init,
// the supervisor that runs as PID 1 in every sandbox container.
//
// # Channel
//
// Newline-framed JSON messages, over one of three connections. On
// sandboxd's host, a runc sandbox's supervisor dials a Unix socket of
// sandboxd's, whose directory is mounted read-only into every sandbox
// (runtime/docker's channel.go), and opens with a token only it was given:
// messages pass between the two processes alone. A gVisor sandbox (which
// must checkpoint with no host connection open) and one on a remote
// engine speak on the container's stdio, attached once through the Docker
// API when the container is created; that works anywhere, but every
// message also travels through dockerd and the container's shim (about
// 5 ms of CPU per one-shot run), and binary data is base64 inside JSON
// either way (a third bigger, but output is capped). A Kubernetes pod's
// supervisor listens on its loopback, reached by port forwarding.
// No `docker exec` is paid per execution.
//
// # Trust
//
// The supervisor runs beside the code it runs, so everything it says is
// untrusted: Conn bounds line sizes, ignores unknown ids, enforces output
// caps itself and treats any protocol violation as a dead container.
//
// # Messages
//
// host -> supervisor: hello; exec (then in chunks of its stdin); the
// workspace operations put (then in chunks of the file), get, tar, list,
// mkdir, move, remove, watch and reset; ports and usage; kill.
// supervisor -> host: hello; in_ack per input chunk; out (an execution's
// output, or the bytes of get and tar); exit ends an exec, done ends a
// workspace operation.
//
// Workspace operations run inside the container, on the supervisor's side of
// the mount namespace, through os.Root: a link planted in the workspace is
// resolved there, never on the host, and never out of the workspace.
package supervisor

import "fmt"

// Version is the protocol version; hello exchanges it.
const Version = 1

// The environment of a supervisor that does not speak on its stdio
// (runtime/supervisor/sandboxinit/listen.go): the TCP address on the
// sandbox's loopback it listens on, or the Unix socket it dials, and the
// token a connection opens with.
//
// EnvNproc is the RLIMIT_NPROC the supervisor sets on itself, and so on
// everything it starts, where the runtime has no per-sandbox pids limit
// (a pod's is the kubelet's, one for every pod of the node): the uid is
// the sandbox's alone, so the limit is the sandbox's.
const (
	EnvListen = "SANDBOXD_SUPERVISOR_LISTEN"
	EnvDial   = "SANDBOXD_SUPERVISOR_DIAL"
	EnvToken  = "SANDBOXD_SUPERVISOR_TOKEN"
	// EnvTokenSum is, for a supervisor that listens, the token's
	// SHA-256 (TokenSum): a pod's spec is read by whoever may read pods,
	// and the digest opens nothing.
	EnvTokenSum = "SANDBOXD_SUPERVISOR_TOKEN_SHA256"
	EnvNproc    = "SANDBOXD_SUPERVISOR_NPROC"
)

// ChannelDir is where a Docker sandbox on sandboxd's host has sandboxd's
// directory of ChannelSocket mounted, read-only: its supervisor dials the
// socket (EnvDial) rather than speaking on its stdio.
const (
	ChannelDir    = "/.sandboxd/channel"
	ChannelSocket = ChannelDir + "/supervisor.sock"
)

// ReservedThreads is how many OS threads the supervisor starts up front so
// that it never needs a new one once the code it runs has used up the pids
// limit. The container's pids limit is raised by as much, so the code still
// gets the limit it was given.
const ReservedThreads = 24

// Egress: a sandbox allowed out has sandboxd's egress proxy socket
// mounted at EgressSocket; the supervisor listens on EgressListen, on the
// container's own loopback, and carries each connection to the socket.
// The container has no network interface but loopback.
const (
	EgressDir    = "/.sandboxd/egress"
	EgressSocket = EgressDir + "/proxy.sock"
	EgressListen = "127.0.0.1:3128"
)

// Message ops.
const (
	OpHello = "hello"
	// OpLog is a line of the supervisor's own diagnostics, sent to a
	// host whose hello asked for them (Message.Logs) instead of to its
	// stderr: a pod's stderr is its node's log.
	OpLog     = "log"
	OpExec    = "exec"
	OpIn      = "in" // a chunk of an exec's stdin or of a put's file
	OpInClose = "in_close"
	OpInAck   = "in_ack"
	OpKill    = "kill"
	OpOut     = "out"
	OpExit    = "exit"

	OpPut    = "put"    // write File.Path from the in chunks that follow
	OpGet    = "get"    // send a regular file's bytes as out chunks
	OpTar    = "tar"    // send a tar archive of File.Path as out chunks
	OpList   = "list"   // entries of a directory
	OpRemove = "remove" // remove a file or a tree
	OpReset  = "reset"  // kill every process, empty the workspace but project_files
	// OpRecycle resets a one-shot sandbox for its next run, then checks
	// that it is as its supervisor found it at start (ErrNotFresh if
	// not), then starts the warm processes it names.
	OpRecycle = "recycle"
	OpUntar   = "untar" // extract the tar archive the in chunks carry into the workspace
	OpPorts   = "ports" // the TCP ports listening in the sandbox
	OpMkdir   = "mkdir" // make a directory and its parents
	OpMove    = "move"  // rename File.Path to File.To
	OpUsage   = "usage" // what the whole sandbox uses now
	// OpWatch streams what changes under the directory File.Path (below
	// it too, File.Recursive) as out messages on the Events stream, each
	// a JSON array of FileEvent (the first, empty, once the watch is
	// set), until it is killed (done) or the directory goes (done with
	// ErrNotFound).
	OpWatch = "watch"
	OpDone  = "done" // the answer to a workspace or context operation

	OpResize     = "resize"      // a terminal execution's new window size
	OpContexts   = "contexts"    // list the running context kernels
	OpContextEnd = "context_end" // end the context File.Path names
	OpWarm       = "warm"        // start a warm process (Warm); done when it is ready
)

// Data is the stream of OpOut for get and tar.
const Data = "data"

// Events is the stream of OpOut for watch.
const Events = "events"

// FileEvent is a change under a watched directory.
type FileEvent struct {
	Path  string `json:"path,omitempty"`  // relative to /workspace
	Type  string `json:"type"`            // one of the Event kinds
	Count int    `json:"count,omitempty"` // EventOverflow: how many were left out
}

// Kinds of FileEvent.
const (
	EventCreate = "create"
	EventWrite  = "write"
	EventRemove = "remove"
	EventRename = "rename" // moved away or moved in
	EventChmod  = "chmod"
	// EventOverflow says that Count events were left out: more came at
	// once than a batch carries.
	EventOverflow = "overflow"
)

// Streams of OpOut.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// BuildDir is made by the supervisor in every sandbox (and again after a
// reset) for compiled programs: /tmp is writable and allows execution.
const BuildDir = "/tmp/.sandboxd"

// MaxLine bounds one message on the wire, in either direction.
const MaxLine = 64 << 20

// InChunk is the largest input payload per message; the host waits for an
// in_ack before sending the next, so a program that never reads its stdin
// costs the supervisor one chunk of memory, not the whole input.
const InChunk = 256 << 10

// OutChunk is the largest output payload per message.
const OutChunk = 256 << 10

// Message is one line of the protocol. Fields are set according to Op.
type Message struct {
	Op      string       `json:"op"`
	ID      uint64       `json:"id,omitempty"`
	Nonce   string       `json:"nonce,omitempty"`
	Version int          `json:"version,omitempty"`
	Logs    bool         `json:"logs,omitempty"` // hello: the host takes OpLog
	Exec    *ExecRequest `json:"exec,omitempty"`
	Stream  string       `json:"stream,omitempty"`
	Data    []byte       `json:"data,omitempty"`
	Result  *ExecResult  `json:"result,omitempty"`
	File    *FileRequest `json:"file,omitempty"`
	Done    *FileResult  `json:"done,omitempty"`
	Size    *WinSize     `json:"size,omitempty"` // resize
	Warm    *WarmRequest `json:"warm,omitempty"`
}

// WarmDir is where a warm process's hook files are written.
const WarmDir = BuildDir + "/warm"

// WarmRequest starts a warm process: a language's runtime, loaded ahead,
// that stands in for the next exec whose argv begins with Stands, in Dir,
// with Env (see the language package's WarmProtocol). It replaces a warm
// process that has not been used.
type WarmRequest struct {
	Argv   []string `json:"argv"`
	Stands []string `json:"stands"`
	Env    []string `json:"env,omitempty"`   // KEY=VALUE: the runs' it stands in for, as an ExecRequest's
	Hook   []string `json:"hook,omitempty"`  // KEY=VALUE: its own on top, gone once it runs a program
	Dir    string   `json:"dir,omitempty"`   // default /workspace
	Files  []File   `json:"files,omitempty"` // its hook: absolute paths under WarmDir
	// Exact: it stands in only for an argv that is Stands, no more.
	Exact bool `json:"exact,omitempty"`
	// Forks: its runtime can be a zygote (language.Warm's Forks), kept
	// across runs to fork warm processes, where the supervisor may.
	Forks bool `json:"forks,omitempty"`
	// Isolate starts it as ExecRequest.Isolate does; it stands in only
	// for execs that ask the same.
	Isolate Isolation `json:"isolate,omitempty"`
	// TimeoutMS bounds the wait for it to be ready; past it, it is ended.
	TimeoutMS int64 `json:"timeout_ms"`
}

// WinSize is a terminal's window size.
type WinSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// FileRequest names the target of a workspace operation.
type FileRequest struct {
	Path      string `json:"path"`                // relative to /workspace; "." is the workspace
	Mode      uint32 `json:"mode,omitempty"`      // put: permission bits
	Max       int64  `json:"max,omitempty"`       // put, get, tar: refuse above this many bytes
	Recursive bool   `json:"recursive,omitempty"` // list: the whole tree
	// Metadata, on a put, replaces the file's metadata (none clears it).
	Metadata map[string]string `json:"metadata,omitempty"`
	// Snapshot: tar leaves project_files out (a session's own files only).
	Snapshot bool   `json:"snapshot,omitempty"`
	To       string `json:"to,omitempty"` // move: the new path, relative to /workspace
	// Warm, on a recycle: the warm processes to start once the sandbox
	// is fresh, in the same round trip; the answer waits until each is
	// ready or has failed (FileResult.WarmErrors).
	Warm []WarmRequest `json:"warm,omitempty"`
}

// Error kinds of a FileResult.
const (
	ErrNotFound   = "not_found"
	ErrNotRegular = "not_regular" // a FIFO, socket or device: never opened for reading
	ErrTooLarge   = "too_large"
	ErrNoSpace    = "no_space"
	ErrReadOnly   = "read_only"
	ErrInvalid    = "invalid"   // escapes the workspace, a directory where a file is needed, ...
	ErrExists     = "exists"    // mkdir: the path is there already
	ErrNotFresh   = "not_fresh" // recycle: something a run left could not be undone
)

// FileResult answers a workspace or context operation.
type FileResult struct {
	Error     string    `json:"error,omitempty"`
	ErrorKind string    `json:"error_kind,omitempty"`
	Size      int64     `json:"size,omitempty"` // get, tar: bytes sent; put: bytes written
	Entries   []Entry   `json:"entries,omitempty"`
	Skipped   int       `json:"skipped,omitempty"` // tar: FIFOs, sockets and devices left out
	Contexts  []Context `json:"contexts,omitempty"`
	Ports     []Port    `json:"ports,omitempty"`
	Usage     *Usage    `json:"usage,omitempty"`
	// WarmErrors, on a recycle with Warm: why each warm process failed,
	// "" for one that is ready.
	WarmErrors []string `json:"warm_errors,omitempty"`
}

// Usage is what a whole sandbox uses at a moment.
type Usage struct {
	CPUUS          int64 `json:"cpu_us"` // since the sandbox started
	MemoryBytes    int64 `json:"memory_bytes"`
	Processes      int   `json:"processes"` // besides the supervisor
	WorkspaceBytes int64 `json:"workspace_bytes"`
	TmpBytes       int64 `json:"tmp_bytes"`
}

// Port is a TCP socket listening in the sandbox.
type Port struct {
	Address string `json:"address"` // the address it is bound to, e.g. 0.0.0.0 or ::1
	Port    int    `json:"port"`
}

// Context is a running context kernel.
type Context struct {
	Name       string `json:"name"`
	Language   string `json:"language,omitempty"`
	PID        int    `json:"pid"`
	StartedAt  int64  `json:"started_at_ns"`
	Executions int    `json:"executions"`
	RSSBytes   int64  `json:"rss_bytes"`
}

// Cell is code for a context: the kernel named Name runs Code in its
// namespace; Argv (the language's context command) starts the kernel
// first when it is not running.
type Cell struct {
	Name string `json:"name"`
	Code string `json:"code"`
	// Language is the kernel's (the daemon's name for it): a context runs
	// cells of the language it was started for, and refuses another's.
	Language string `json:"language,omitempty"`
	// Env is set in the kernel's environment for this cell alone (the
	// kernel's own, which its children inherit) and taken back after it.
	Env map[string]string `json:"env,omitempty"`
}

// ContextMark begins the mark that ends a kernel's output of one cell, on
// its stdout and its stderr, before it answers on its reply descriptor:
// the mark is sent with the cell (ContextMark, a token of the cell's own,
// then "\x1e\x00"), and the kernel writes it as it is.
const ContextMark = "\x00\x1esandboxd:end:"

// TmpDir begins the names of a file request that lie under the sandbox's
// /tmp ("/tmp/notes.txt"); every other name is relative to its workspace.
const TmpDir = "/tmp"

// Display is one representation of a value a cell shows: its MIME type
// and data (text as is, binary types base64). Main marks those of the
// cell's final value, as against a figure's or a display() call's.
type Display struct {
	MIME string `json:"mime"`
	Data string `json:"data"`
	Main bool   `json:"main,omitempty"`
}

// CellResult says what became of a cell's context.
type CellResult struct {
	// Started: a new kernel was started for this cell.
	Started bool `json:"started,omitempty"`
	// Lost says why the context's earlier state is gone: the kernel ended
	// during this cell (killed at the deadline, crashed, exited), or
	// ended since the last one, and was started afresh.
	Lost string `json:"lost,omitempty"`
}

// Entry is one file of a listing.
type Entry struct {
	Path    string `json:"path"` // relative to /workspace
	Type    string `json:"type"` // file, dir, symlink, fifo, socket, device
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"`
	ModTime int64  `json:"mtime_ns"`
	Target  string `json:"target,omitempty"` // symlink: where it points, never followed
	// Metadata is a regular file's user-defined metadata (MetadataXattr).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// MetadataXattr is the namespace of the extended attributes that hold a
// file's user-defined metadata, the key after it: E2B's agent keeps its
// files' metadata there, so tools in the sandbox see and set the same
// (setfattr -n user.e2b.author -v me FILE).
const MetadataXattr = "user.e2b."

// Bounds of a file's metadata, as E2B's agent has them: a key's length
// (the kernel's limit on an attribute's name, less MetadataXattr), and
// the keys (each with MetadataXattr) and values together.
const (
	MaxMetadataKey   = 246
	MaxMetadataBytes = 4096
)

// File is written into the workspace before the execution starts.
type File struct {
	Path string `json:"path"`
	Data []byte `json:"data"`
	Mode uint32 `json:"mode,omitempty"`
}

// RelayArg starts sandbox-init as a relay (sandbox-init -relay PORT): it
// connects to PORT on the sandbox's own loopback and copies its stdin to
// the connection and the connection to its stdout, until the connection
// ends. sandboxd forwards a host port to a session's server through it.
const RelayArg = "-relay"

// Isolation is the PID namespace a program runs in where the runtime does
// not shield a namespace's first process from its members' signals
// (gVisor): there the supervisor is no process the program can name. Under
// runc the kernel shields the supervisor, PID 1, itself, and every
// isolation is the container's own namespace.
type Isolation string

const (
	// IsolateNone: the container's namespace, beside the supervisor.
	IsolateNone Isolation = ""
	// IsolateProgram: a namespace of its own, which ends with the program
	// (a one-shot run's steps).
	IsolateProgram Isolation = "program"
	// IsolateSession: the namespace the sandbox's lasting processes share
	// (a session's programs, contexts and warm runtimes), which outlives
	// each of them: a session's background processes outlive the exec that
	// started them, and later execs see them.
	IsolateSession Isolation = "session"
)

// ExecRequest starts one process.
type ExecRequest struct {
	Argv        []string `json:"argv"`
	Dir         string   `json:"dir,omitempty"` // default /workspace
	Env         []string `json:"env,omitempty"` // KEY=VALUE, the whole environment
	Files       []File   `json:"files,omitempty"`
	Stdin       bool     `json:"stdin,omitempty"` // stdin messages follow; otherwise an empty pipe
	TimeoutMS   int64    `json:"timeout_ms"`
	OutputLimit int64    `json:"output_limit"` // per stream
	// KillOnExit ends every other process in the container when the main
	// process exits (one-shot runs). Deadlines and kills do too, unless
	// KeepOthers.
	KillOnExit bool `json:"kill_on_exit,omitempty"`
	// KeepOthers limits what a deadline or kill ends to the process's own
	// group and descendants (a session's command): the session's other
	// commands, contexts and servers live on, as envd ends one command.
	KeepOthers bool `json:"keep_others,omitempty"`
	// Isolate runs the process in a PID namespace out of the supervisor's
	// sight and reach, where the runtime allows one (see Isolation).
	Isolate Isolation `json:"isolate,omitempty"`
	// Cell, when set, runs code in a context's kernel rather than
	// starting Argv (which starts the kernel when it is not running).
	Cell *Cell `json:"cell,omitempty"`
	// Outputs names a directory (relative to /workspace) whose new and
	// changed files the result lists.
	Outputs string `json:"outputs,omitempty"`
	// TTY runs the process on a pseudo-terminal of this size: stdin,
	// stdout and stderr are the terminal, whose output comes as stdout.
	TTY *WinSize `json:"tty,omitempty"`
	// Warm lets the warm process run it, when one is there that stands
	// in for Argv, Dir and Env; otherwise it starts as usual.
	Warm bool `json:"warm,omitempty"`
}

// OutputsDir is the workspace directory for results, made in every
// sandbox: a session's exec lists the files it made or changed there.
const OutputsDir = "outputs"

// Output is a file an execution made or changed.
type Output struct {
	Path string `json:"path"` // relative to /workspace
	Size int64  `json:"size"`
}

// ExecResult is how an execution ended and what it used.
type ExecResult struct {
	ExitCode    int    `json:"exit_code"`
	Signal      string `json:"signal,omitempty"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	OOMKilled   bool   `json:"oom_killed,omitempty"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	Truncated   bool   `json:"truncated,omitempty"`
	DurationUS  int64  `json:"duration_us"`
	UserUS      int64  `json:"user_us"`
	SysUS       int64  `json:"sys_us"`
	MaxRSSBytes int64  `json:"max_rss_bytes"`
	// WorkspaceBytes is how much of the workspace is in use at the end.
	WorkspaceBytes int64 `json:"workspace_bytes,omitempty"`
	// Survivors counts processes still alive after the kill; the host must
	// then destroy the container.
	Survivors int `json:"survivors,omitempty"`
	// StartError is set when the process could not be started at all
	// (no such program, bad file): the host reports it like a failed exec.
	StartError string `json:"start_error,omitempty"`
	// Display is what a cell shows: its final expression's value, figures.
	Display []Display `json:"display,omitempty"`
	// Outputs are the files under ExecRequest.Outputs the execution made
	// or changed; OutputsOmitted counts those past the first 100.
	Outputs        []Output `json:"outputs,omitempty"`
	OutputsOmitted int      `json:"outputs_omitted,omitempty"`
	// Context is set for a cell.
	Context *CellResult `json:"context,omitempty"`
	// Warm: the warm process ran it. WarmMissed says why an exec that
	// allowed one started as usual.
	Warm       bool   `json:"warm,omitempty"`
	WarmMissed string `json:"warm_missed,omitempty"`
	// Gone is set by the host, never sent: why the sandbox ended with the
	// execution, or must be removed after it.
	Gone string `json:"-"`
}

// CheckMetadata says what is wrong with a file's metadata, if anything:
// keys and values of printable US-ASCII, non-empty keys within
// MaxMetadataKey, all within MaxMetadataBytes.
func CheckMetadata(m map[string]string) error {
	total := 0
	for k, v := range m {
		switch {
		case k == "" || !printable(k) || !printable(v):
			return fmt.Errorf("metadata %q: keys (not empty) and values of printable US-ASCII", k)
		case len(k) > MaxMetadataKey:
			return fmt.Errorf("metadata key %.20q...: at most %d bytes", k, MaxMetadataKey)
		}
		total += len(MetadataXattr) + len(k) + len(v)
	}
	if total > MaxMetadataBytes {
		return fmt.Errorf("metadata of %d bytes (keys, with their %s prefix, and values): at most %d", total, MetadataXattr, MaxMetadataBytes)
	}
	return nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
