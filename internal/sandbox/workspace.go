package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Workspace is what a session does with its sandbox beside running
// programs: its files, its contexts, its listening ports, what it uses and
// its reset, in sessions' terms. Each is the supervisor's operation inside
// the container, so sandboxd never opens a path of a sandbox-writable tree
// on the host, and a failure the supervisor reports is classified
// (errdefs). Paths are relative to the workspace, or absolute under TmpDir.
type Workspace struct{ sb *runtime.Sandbox }

// WorkspaceOf is the workspace of sb, a session's sandbox.
func WorkspaceOf(sb *runtime.Sandbox) Workspace { return Workspace{sb} }

// The supervisor's terms that a session's callers meet: a file's entry,
// a change to one, a listening port and a context.
type (
	FileEntry = supervisor.Entry
	FileEvent = supervisor.FileEvent
	Port      = supervisor.Port
	Context   = supervisor.Context
)

// TmpDir is the sandbox's own /tmp, which files may name beside the
// workspace.
const TmpDir = supervisor.TmpDir

// EventOverflow is the FileEvent that says how many changes a watch did
// not deliver.
const EventOverflow = supervisor.EventOverflow

// CheckMetadata says what is wrong with a file's metadata, if anything.
func CheckMetadata(metadata map[string]string) error { return supervisor.CheckMetadata(metadata) }

// do runs a workspace operation: what describes it when the supervisor
// does not answer, subject what it refused.
func (w Workspace) do(ctx context.Context, what, subject, op string, req supervisor.FileRequest, in io.Reader, data func([]byte)) (supervisor.FileResult, error) {
	res, err := w.sb.File(ctx, op, req, in, data)
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	if res.Error != "" {
		return res, classify(subject, res)
	}
	return res, nil
}

// Put writes body to name, creating the directories on the way, with the
// permission bits mode (0: the default) and metadata (replacing the
// file's): at most max bytes, or too_large. It answers the size written.
func (w Workspace) Put(ctx context.Context, name string, mode uint32, max int64, metadata map[string]string, body io.Reader) (int64, error) {
	// One byte over the limit is enough for the supervisor to refuse.
	res, err := w.do(ctx, "uploading "+name, name, supervisor.OpPut, supervisor.FileRequest{Path: name, Mode: mode, Max: max, Metadata: metadata}, io.LimitReader(body, max+1), nil)
	return res.Size, err
}

// List describes name first, then what is under it (all below it too,
// recursive).
func (w Workspace) List(ctx context.Context, name string, recursive bool) ([]FileEntry, error) {
	res, err := w.do(ctx, "listing "+name, name, supervisor.OpList, supervisor.FileRequest{Path: name, Recursive: recursive}, nil, nil)
	if err != nil {
		return nil, err
	}
	if len(res.Entries) == 0 || path.Clean(res.Entries[0].Path) != name {
		return nil, fmt.Errorf("listing %s: %w: the answer does not start with the path", name, supervisor.ErrDead)
	}
	return res.Entries, nil
}

// Mkdir makes a directory and its parents: conflict when the path is
// there already.
func (w Workspace) Mkdir(ctx context.Context, name string) (*FileEntry, error) {
	return w.entry(ctx, supervisor.OpMkdir, supervisor.FileRequest{Path: name})
}

// Move renames from to to, replacing what that holds as rename(2) does.
func (w Workspace) Move(ctx context.Context, from, to string) (*FileEntry, error) {
	return w.entry(ctx, supervisor.OpMove, supervisor.FileRequest{Path: from, To: to})
}

// entry runs an operation whose answer is one entry.
func (w Workspace) entry(ctx context.Context, op string, req supervisor.FileRequest) (*FileEntry, error) {
	res, err := w.do(ctx, op+" "+req.Path, req.Path, op, req, nil, nil)
	if err != nil {
		return nil, err
	}
	if len(res.Entries) != 1 {
		return nil, fmt.Errorf("%s %s: %w: the answer is not one entry", op, req.Path, supervisor.ErrDead)
	}
	return &res.Entries[0], nil
}

// Read sends a regular file's bytes to data, or a directory's tree as a
// tar archive (dir): at most max bytes, or too_large.
func (w Workspace) Read(ctx context.Context, name string, dir bool, max int64, data func([]byte)) error {
	op := supervisor.OpGet
	if dir {
		op = supervisor.OpTar
	}
	_, err := w.do(ctx, "downloading "+name, name, op, supervisor.FileRequest{Path: name, Max: max}, nil, data)
	return err
}

// Archive sends the workspace's own files (not project_files) as a tar
// archive to data: at most max bytes, or too_large. It answers how many
// entries it left out (FIFOs, sockets, devices).
func (w Workspace) Archive(ctx context.Context, max int64, data func([]byte)) (skipped int, err error) {
	res, err := w.do(ctx, "archiving the workspace", "", supervisor.OpTar, supervisor.FileRequest{Path: ".", Max: max, Snapshot: true}, nil, data)
	return res.Skipped, err
}

// Extract unpacks a snapshot's tar archive into the workspace.
func (w Workspace) Extract(ctx context.Context, archive io.Reader) error {
	_, err := w.do(ctx, "restoring the snapshot", "restoring the snapshot", supervisor.OpUntar, supervisor.FileRequest{Path: "."}, archive, nil)
	return err
}

// Watch sends what changes under the directory name (below it too,
// recursive) to events, a batch at a time, the first empty once the watch
// is set, until ctx ends or the directory goes.
func (w Workspace) Watch(ctx context.Context, name string, recursive bool, events func([]FileEvent)) error {
	res, err := w.sb.Watch(ctx, supervisor.FileRequest{Path: name, Recursive: recursive}, events)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("watching %s: %w", name, err)
	case res.Error != "":
		return classify(name, res)
	}
	return nil
}

// Remove removes a file or a directory tree.
func (w Workspace) Remove(ctx context.Context, name string) error {
	_, err := w.do(ctx, "removing "+name, name, supervisor.OpRemove, supervisor.FileRequest{Path: name}, nil, nil)
	return err
}

// Contexts are the sandbox's running contexts.
func (w Workspace) Contexts(ctx context.Context) ([]Context, error) {
	res, err := w.do(ctx, "listing contexts", "listing contexts", supervisor.OpContexts, supervisor.FileRequest{}, nil, nil)
	return res.Contexts, err
}

// EndContext ends a context: its interpreter and its state.
func (w Workspace) EndContext(ctx context.Context, name string) error {
	_, err := w.do(ctx, "ending context "+name, "context "+name, supervisor.OpContextEnd, supervisor.FileRequest{Path: name}, nil, nil)
	return err
}

// Ports are the TCP ports listening in the sandbox.
func (w Workspace) Ports(ctx context.Context) ([]Port, error) {
	res, err := w.do(ctx, "listing the ports", "listing the ports", supervisor.OpPorts, supervisor.FileRequest{}, nil, nil)
	return res.Ports, err
}

// Reset ends every process of the sandbox and empties its workspace (but
// project_files).
func (w Workspace) Reset(ctx context.Context) error {
	_, err := w.do(ctx, "resetting the sandbox", "resetting the sandbox", supervisor.OpReset, supervisor.FileRequest{Path: "."}, nil, nil)
	return err
}

// Forward connects in and out to the TCP port of the sandbox's loopback,
// through a relay the supervisor runs beside the session's programs, until
// either end closes or ttl passes; the sandbox's network stays none. It
// answers why no connection was made (nothing listens there), empty when
// one was.
func (w Workspace) Forward(ctx context.Context, port int, ttl time.Duration, in io.Reader, out func([]byte)) (refused string, err error) {
	var stderr bytes.Buffer
	// Never cancelled: a client that goes closes in, and the relay ends
	// by itself.
	res, err := w.sb.Exec(context.WithoutCancel(ctx), supervisor.ExecRequest{
		Argv:        []string{runtime.SupervisorPath, supervisor.RelayArg, strconv.Itoa(port)},
		KeepOthers:  true,                     // the server it reaches, above all
		Env:         []string{"GOMAXPROCS=1"}, // as few threads as the relay can do with
		TimeoutMS:   max(ttl.Milliseconds(), 1),
		OutputLimit: 1 << 50, // a connection's bytes are not output to keep
	}, in, func(stream string, data []byte) {
		switch {
		case stream == supervisor.Stdout:
			out(data)
		case stderr.Len() < forwardStderr:
			stderr.Write(data[:min(len(data), forwardStderr-stderr.Len())])
		}
	})
	if err != nil {
		return "", fmt.Errorf("forwarding port %d: %w", port, err)
	}
	if res.ExitCode != 0 {
		return strings.TrimSpace(stderr.String()), nil
	}
	return "", nil
}

// forwardStderr bounds what a relay may say of why it failed.
const forwardStderr = 4 << 10

// Usage is what the sandbox uses now, as its supervisor measures it (the
// network figures are its egress gate's, not the supervisor's).
func (w Workspace) Usage(ctx context.Context) (stats.SandboxUsage, error) {
	res, err := w.sb.File(ctx, supervisor.OpUsage, supervisor.FileRequest{}, nil, nil)
	if err == nil && res.Usage == nil {
		err = fmt.Errorf("the supervisor did not say (%s)", res.Error)
	}
	if err != nil {
		return stats.SandboxUsage{}, err
	}
	r := res.Usage
	return stats.SandboxUsage{
		At: time.Now().UTC(), CPUSeconds: float64(r.CPUUS) / 1e6, MemoryBytes: r.MemoryBytes,
		Processes: r.Processes, WorkspaceBytes: r.WorkspaceBytes, TmpBytes: r.TmpBytes,
	}, nil
}

// classify is the error for a workspace operation on p that the
// supervisor refused ("": its message names what it refused).
func classify(p string, res supervisor.FileResult) error {
	msg := res.Error
	if p != "" && !strings.HasPrefix(msg, p) {
		msg = p + ": " + msg
	}
	switch res.ErrorKind {
	case supervisor.ErrNotFound:
		return errdefs.Errorf(errdefs.NotFound, "%s", msg)
	case supervisor.ErrTooLarge:
		return errdefs.Errorf(errdefs.TooLarge, "%s", msg)
	case supervisor.ErrNoSpace:
		return errdefs.Errorf(errdefs.NoSpace, "%s: the workspace is full (its size is the disk limit)", msg)
	case supervisor.ErrNotRegular, supervisor.ErrReadOnly, supervisor.ErrExists:
		return errdefs.Errorf(errdefs.Conflict, "%s", msg)
	}
	return errdefs.Errorf(errdefs.Invalid, "%s", msg)
}
