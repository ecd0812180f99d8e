package sessions

import (
	"context"
	"io"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sandbox"
	"github.com/sandboxd/sandboxd/runtime"
)

// The terms that a session's callers meet: a file's entry, a change to
// one, a listening port, a context, and the sandbox's /tmp.
type (
	Entry     = sandbox.FileEntry
	FileEvent = sandbox.FileEvent
	Port      = sandbox.Port
	Context   = sandbox.Context
)

// TmpDir is the sandbox's own /tmp, which files may name beside the
// workspace.
const TmpDir = sandbox.TmpDir

// Session files. Every operation is the sandbox's workspace's
// (sandbox.Workspace): sandboxd never opens a path of a sandbox-writable
// tree on the host, so no link planted there can lead it anywhere.

// Path checks a path from a request: relative to /workspace, inside
// it. "" and "." are the workspace itself.
func Path(p string) (string, error) {
	p = strings.TrimPrefix(p, runtime.Workspace+"/")
	if p == "" || p == "." || p == runtime.Workspace {
		return ".", nil
	}
	clean, err := request.CleanPath(p)
	if err != nil {
		return "", errdefs.Errorf(errdefs.Invalid, "path: %v", err)
	}
	return clean, nil
}

// FilePath is Path for the file operations and a command's directory,
// which reach the sandbox's /tmp too: a path there stays absolute
// ("/tmp/..."), as the supervisor takes it.
func FilePath(p string) (string, error) {
	rest, tmp := strings.CutPrefix(p, TmpDir)
	if !tmp || rest != "" && !strings.HasPrefix(rest, "/") {
		return Path(p)
	}
	if rest = strings.TrimLeft(rest, "/"); rest == "" {
		return TmpDir, nil
	}
	clean, err := request.CleanPath(rest)
	if err != nil {
		return "", errdefs.Errorf(errdefs.Invalid, "path: %s: %v", p, err)
	}
	return TmpDir + "/" + clean, nil
}

// writablePath is FilePath for uploads and removals.
func writablePath(p string) (string, error) {
	clean, aerr := FilePath(p)
	if aerr != nil {
		return "", aerr
	}
	if clean == "." || clean == TmpDir || clean == "project_files" || strings.HasPrefix(clean, "project_files/") {
		return "", errdefs.Errorf(errdefs.Invalid, "%s: the workspace root, /tmp and project_files/ are not writable; upload to another path, e.g. outputs/", p)
	}
	return clean, nil
}

// PutFile writes body to a path of the session's workspace, creating the
// directories on the way; at most sessions.max_transfer bytes. metadata
// replaces the file's (see sandbox.CheckMetadata). It answers the path
// written (cleaned) and its size.
func (m *Sessions) PutFile(ctx context.Context, id, p string, mode uint32, metadata map[string]string, body io.Reader) (name string, size int64, aerr error) {
	if name, aerr = writablePath(p); aerr != nil {
		return "", 0, aerr
	}
	if mode > 0o777 {
		return "", 0, errdefs.Errorf(errdefs.Invalid, "mode %o: only permission bits (at most 0777)", mode)
	}
	if err := sandbox.CheckMetadata(metadata); err != nil {
		return "", 0, errdefs.Errorf(errdefs.Invalid, "%v", err)
	}
	aerr = m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) (err error) {
		size, err = sandbox.WorkspaceOf(sb).Put(ctx, name, mode, m.cfg.MaxTransfer, metadata, body)
		return err
	})
	return name, size, aerr
}

// ListFiles lists a directory of the workspace (or describes one file):
// the path listed (cleaned) and what is in it.
func (m *Sessions) ListFiles(ctx context.Context, id, p string, recursive bool) (name string, entries []Entry, aerr error) {
	if name, aerr = FilePath(p); aerr != nil {
		return "", nil, aerr
	}
	aerr = m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		if entries, aerr = sandbox.WorkspaceOf(sb).List(ctx, name, recursive); aerr != nil {
			return aerr
		}
		if entries[0].Type == "dir" {
			entries = entries[1:] // a directory's content, not itself
		}
		return nil
	})
	return name, entries, aerr
}

// Stat describes one path of the workspace.
func (m *Sessions) Stat(ctx context.Context, id, p string) (*Entry, error) {
	name, aerr := FilePath(p)
	if aerr != nil {
		return nil, aerr
	}
	var out *Entry
	aerr = m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		entries, aerr := sandbox.WorkspaceOf(sb).List(ctx, name, false)
		if aerr == nil {
			out = &entries[0]
		}
		return aerr
	})
	return out, aerr
}

// MakeDir makes a directory of the workspace and its parents; conflict
// when the path is there already.
func (m *Sessions) MakeDir(ctx context.Context, id, p string) (*Entry, error) {
	name, aerr := writablePath(p)
	if aerr != nil {
		return nil, aerr
	}
	return m.entryOp(ctx, id, func(w sandbox.Workspace) (*Entry, error) { return w.Mkdir(ctx, name) })
}

// Move renames a path of the workspace to another, replacing what that
// holds as rename(2) does.
func (m *Sessions) Move(ctx context.Context, id, from, to string) (*Entry, error) {
	src, aerr := writablePath(from)
	if aerr != nil {
		return nil, aerr
	}
	dst, aerr := writablePath(to)
	if aerr != nil {
		return nil, aerr
	}
	return m.entryOp(ctx, id, func(w sandbox.Workspace) (*Entry, error) { return w.Move(ctx, src, dst) })
}

// entryOp runs a workspace operation whose answer is one entry.
func (m *Sessions) entryOp(ctx context.Context, id string, op func(sandbox.Workspace) (*Entry, error)) (*Entry, error) {
	var out *Entry
	aerr := m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) (err error) {
		out, err = op(sandbox.WorkspaceOf(sb))
		return err
	})
	return out, aerr
}

// Download sends a file's bytes, or a directory as a tar archive. start is
// called once the kind is known and returns where the bytes go; nothing is
// written to it when the download is refused (a FIFO, a link, too large).
func (m *Sessions) Download(ctx context.Context, id, p string, start func(dir bool, name string) io.Writer) error {
	name, aerr := FilePath(p)
	if aerr != nil {
		return aerr
	}
	return m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		ws := sandbox.WorkspaceOf(sb)
		entries, aerr := ws.List(ctx, name, false)
		if aerr != nil {
			return aerr
		}
		switch entries[0].Type {
		case "dir", "file":
		case "symlink":
			return errdefs.Errorf(errdefs.Conflict, "%s is a symbolic link to %s: links are never followed; download its directory to get the link itself", name, entries[0].Target)
		default:
			return errdefs.Errorf(errdefs.Conflict, "%s is a %s, not a regular file: refused, not read", name, entries[0].Type)
		}
		dir := entries[0].Type == "dir"
		w := start(dir, path.Base(name))
		var werr error
		err := ws.Read(ctx, name, dir, m.cfg.MaxTransfer, func(b []byte) {
			if werr == nil {
				_, werr = w.Write(b)
			}
		})
		switch {
		case err != nil:
			return err
		case werr != nil:
			return errdefs.Errorf(errdefs.Invalid, "client went away: %v", werr)
		}
		return nil
	})
}

// Watch streams what changes under a directory of the workspace (below it
// too, recursive) to emit, a batch at a time, the first empty once the
// watch is set, until ctx ends (nil) or the directory goes; beside the
// session's other operations.
func (m *Sessions) Watch(ctx context.Context, id, p string, recursive bool, emit func([]FileEvent)) error {
	name, aerr := Path(p)
	if aerr != nil {
		return aerr
	}
	// emit may be slow (a client that reads slowly): the sandbox's reader
	// never waits for it; what does not fit the queue is counted and said.
	queue := make(chan []FileEvent, watchQueue)
	var dropped atomic.Int64
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		for evs := range queue {
			if n := dropped.Swap(0); n > 0 {
				evs = append(evs, FileEvent{Type: sandbox.EventOverflow, Count: int(n)})
			}
			emit(evs)
		}
	}()
	defer func() { close(queue); <-delivered }()
	return m.Alongside(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		return sandbox.WorkspaceOf(sb).Watch(ctx, name, recursive, func(evs []FileEvent) {
			select {
			case queue <- slices.Clone(evs):
			default:
				dropped.Add(int64(len(evs)))
			}
		})
	})
}

// watchQueue is how many batches of a watch wait for a slow client.
const watchQueue = 256

// DeleteFile removes a file or a directory tree from the workspace.
func (m *Sessions) DeleteFile(ctx context.Context, id, p string) error {
	name, aerr := writablePath(p)
	if aerr != nil {
		return aerr
	}
	return m.Use(ctx, id, func(_ *Session, sb *runtime.Sandbox) error {
		return sandbox.WorkspaceOf(sb).Remove(ctx, name)
	})
}
