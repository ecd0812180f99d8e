// Package workspace is the sandbox's files as the host sees them: it
// answers the protocol's file requests on the workspace and /tmp (puts,
// gets, archives in and out, listings, renames, removals, watches), writes
// an execution's files and notes what it changed under its outputs, and
// empties the places a reset empties.
//
// Every path goes through os.Root opened on the workspace: links are
// resolved here, inside the container, and a link (or a link swapped in
// mid-operation) that leads out of the workspace fails with "path
// escapes". Files are opened O_NONBLOCK and checked with fstat on the
// open descriptor, so a FIFO is never read and never blocks us.
package workspace

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Names the workspace keeps through a reset.
const (
	outputsDir  = supervisor.OutputsDir
	projectDir  = "project_files"
	maxEntries  = 100000   // listing and archive bound
	maxListing  = 16 << 20 // bytes of names, link targets and metadata in one listing: it travels as one line
	tarOverhead = 1024     // the two zero blocks that end an archive
)

// upload is a put in progress: the in chunks that follow land in f.
type upload struct {
	w       io.Writer
	max     int64
	written int64
	err     error
	// end completes the upload (err: it failed, leave nothing half
	// written) and says how it went.
	end func(err error) *supervisor.FileResult
}

// Server answers the file requests on one sandbox's workspace and /tmp.
type Server struct {
	workspace, tmp string
	// send writes a message to the host: chunks, acks, answers.
	send func(supervisor.Message)

	mu      sync.Mutex
	uploads map[uint64]*upload // puts waiting for their in chunks
	watches map[uint64]*watch  // watches in progress, by request id
}

// New serves file requests on the workspace and tmp directories, which
// stand for /workspace and /tmp, answering with send.
func New(workspace, tmp string, send func(supervisor.Message)) *Server {
	return &Server{workspace: workspace, tmp: tmp, send: send, uploads: map[uint64]*upload{}, watches: map[uint64]*watch{}}
}

func (s *Server) openWorkspace() (*os.Root, error) { return os.OpenRoot(s.workspace) }

// location is where a file request's name lies: the directory it is
// opened under and the name relative to it.
type location struct {
	dir, name string
	tmp       bool // under /tmp: names go back to the host with supervisor.TmpDir
}

func (s *Server) locate(name string) location {
	if name == supervisor.TmpDir || strings.HasPrefix(name, supervisor.TmpDir+"/") {
		rel := strings.TrimPrefix(strings.TrimPrefix(name, supervisor.TmpDir), "/")
		if rel == "" {
			rel = "."
		}
		return location{dir: s.tmp, name: rel, tmp: true}
	}
	return location{dir: s.workspace, name: name}
}

func (p location) open() (*os.Root, error) { return os.OpenRoot(p.dir) }

// named gives entries the names the host asked by.
func (p location) named(entries []supervisor.Entry) []supervisor.Entry {
	if p.tmp {
		for i := range entries {
			entries[i].Path = path.Join(supervisor.TmpDir, entries[i].Path)
		}
	}
	return entries
}

// Serve starts the file operation m asks for (put, untar, get, tar, list,
// mkdir, move, remove, watch), answered by an OpDone now or when it
// ends. Transfers run in their own goroutine so the protocol loop keeps
// serving executions and acks.
func (s *Server) Serve(m supervisor.Message) {
	req := supervisor.FileRequest{Path: "."}
	if m.File != nil {
		req = *m.File
	}
	switch m.Op {
	case supervisor.OpPut:
		if res := s.startUpload(m.ID, req); res != nil {
			s.done(m.ID, res)
		}
	case supervisor.OpUntar:
		s.startUntar(m.ID, req)
	case supervisor.OpGet:
		go func() { s.done(m.ID, s.get(m.ID, req)) }()
	case supervisor.OpTar:
		go func() { s.done(m.ID, s.tar(m.ID, req)) }()
	case supervisor.OpList:
		s.done(m.ID, s.list(req))
	case supervisor.OpMkdir:
		s.done(m.ID, s.mkdir(req))
	case supervisor.OpMove:
		s.done(m.ID, s.move(req))
	case supervisor.OpRemove:
		s.done(m.ID, s.remove(req))
	case supervisor.OpWatch:
		s.startWatch(m.ID, req)
	}
}

// Feed hands an in, in-close or kill message to the put or watch it is
// for, and says whether there was one.
func (s *Server) Feed(m supervisor.Message) bool {
	s.mu.Lock()
	up, w := s.uploads[m.ID], s.watches[m.ID]
	s.mu.Unlock()
	if w != nil && m.Op == supervisor.OpKill {
		w.close()
		return true
	}
	if up == nil {
		return false
	}
	switch m.Op {
	case supervisor.OpIn:
		s.uploadChunk(m.ID, up, m.Data)
	case supervisor.OpKill:
		up.err = errors.New("cancelled")
		s.finishUpload(m.ID, up)
	case supervisor.OpInClose:
		s.finishUpload(m.ID, up)
	}
	return true
}

func (s *Server) done(id uint64, res *supervisor.FileResult) {
	s.send(supervisor.Message{Op: supervisor.OpDone, ID: id, Done: res})
}

// Failure is the answer to a file operation that failed with err, with
// the kind of error the host tells its callers.
func Failure(err error) *supervisor.FileResult {
	kind := supervisor.ErrInvalid
	switch {
	case errors.Is(err, fs.ErrNotExist):
		kind = supervisor.ErrNotFound
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		kind = supervisor.ErrNoSpace
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		kind = supervisor.ErrReadOnly
	}
	return &supervisor.FileResult{Error: strings.TrimPrefix(err.Error(), "openat "), ErrorKind: kind}
}

// Refuse is the answer to a file operation refused for kind.
func Refuse(kind, format string, args ...any) *supervisor.FileResult {
	return &supervisor.FileResult{ErrorKind: kind, Error: fmt.Sprintf(format, args...)}
}

// writable refuses the workspace and /tmp themselves, and the read-only
// project files.
func writable(p location) *supervisor.FileResult {
	name := path.Clean(p.name)
	if name == "." || !p.tmp && (name == projectDir || strings.HasPrefix(name, projectDir+"/")) {
		return Refuse(supervisor.ErrReadOnly, "%s: the workspace root, /tmp and %s/ cannot be written or removed", name, projectDir)
	}
	return nil
}

func (s *Server) startUpload(id uint64, req supervisor.FileRequest) *supervisor.FileResult {
	at := s.locate(req.Path)
	if res := writable(at); res != nil {
		return res
	}
	root, err := at.open()
	if err != nil {
		return Failure(err)
	}
	defer root.Close()
	req.Path = at.name
	if dir := path.Dir(req.Path); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return Failure(err)
		}
	}
	mode := os.FileMode(req.Mode & 0o777)
	if mode == 0 {
		mode = 0o644
	}
	f, err := root.OpenFile(req.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, mode)
	if err != nil {
		return Failure(err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return Refuse(supervisor.ErrNotRegular, "%s is not a regular file", req.Path)
	}
	_ = f.Chmod(mode) // an existing file takes the new mode too
	if err := setMetadata(f, req.Metadata); err != nil {
		f.Close()
		return Refuse(supervisor.ErrInvalid, "%s: %v", req.Path, err)
	}
	name := req.Path
	s.mu.Lock()
	s.uploads[id] = &upload{w: f, max: req.Max, end: func(err error) *supervisor.FileResult {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			// Leave nothing half written.
			if root, rerr := at.open(); rerr == nil {
				_ = root.Remove(name)
				root.Close()
			}
			return Failure(err)
		}
		return nil
	}}
	s.mu.Unlock()
	return nil
}

// uploadChunk writes one in chunk; after a failure the rest are acked and
// dropped, and the failure is reported at the end.
func (s *Server) uploadChunk(id uint64, up *upload, data []byte) {
	if up.err == nil {
		if up.max > 0 && up.written+int64(len(data)) > up.max {
			up.err = fmt.Errorf("over the %d-byte upload limit", up.max)
		} else {
			n, err := up.w.Write(data)
			up.written += int64(n)
			up.err = err
		}
	}
	s.send(supervisor.Message{Op: supervisor.OpInAck, ID: id})
}

func (s *Server) finishUpload(id uint64, up *upload) {
	s.mu.Lock()
	delete(s.uploads, id)
	s.mu.Unlock()
	if res := up.end(up.err); res != nil {
		if up.err != nil && strings.Contains(up.err.Error(), "upload limit") {
			res.ErrorKind = supervisor.ErrTooLarge
		}
		s.done(id, res)
		return
	}
	s.done(id, &supervisor.FileResult{Size: up.written})
}

// openRegular opens a regular file for reading without following it out of
// the workspace and without blocking on a FIFO.
func openRegular(root *os.Root, name string) (*os.File, fs.FileInfo, *supervisor.FileResult) {
	if st, err := root.Lstat(name); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		target, _ := root.Readlink(name)
		return nil, nil, Refuse(supervisor.ErrInvalid, "%s is a symbolic link (to %s): download its directory to get the link itself", name, target)
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, Failure(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, Failure(err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		if st.IsDir() {
			return nil, nil, Refuse(supervisor.ErrInvalid, "%s is a directory", name)
		}
		return nil, nil, Refuse(supervisor.ErrNotRegular, "%s is a %s, not a regular file: refused, not read", name, fileType(st.Mode()))
	}
	return f, st, nil
}

func (s *Server) get(id uint64, req supervisor.FileRequest) *supervisor.FileResult {
	at := s.locate(req.Path)
	root, err := at.open()
	if err != nil {
		return Failure(err)
	}
	defer root.Close()
	f, st, res := openRegular(root, at.name)
	if res != nil {
		return res
	}
	defer f.Close()
	// The size is checked before a byte is read: a sparse 1 TiB file is
	// refused, not streamed.
	if st.Size() > req.Max {
		return Refuse(supervisor.ErrTooLarge, "%s is %d bytes, over the %d-byte download limit", req.Path, st.Size(), req.Max)
	}
	w := &chunkWriter{s: s, id: id}
	n, err := io.Copy(w, io.LimitReader(f, st.Size()))
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return Failure(err)
	}
	return &supervisor.FileResult{Size: n}
}

// chunkWriter turns a byte stream into out messages of at most OutChunk.
type chunkWriter struct {
	s   *Server
	id  uint64
	buf []byte
	n   int64
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for len(w.buf) >= supervisor.OutChunk {
		w.emit(w.buf[:supervisor.OutChunk])
		w.buf = w.buf[supervisor.OutChunk:]
	}
	return len(p), nil
}

func (w *chunkWriter) emit(b []byte) {
	w.s.send(supervisor.Message{Op: supervisor.OpOut, ID: w.id, Stream: supervisor.Data, Data: b})
	w.n += int64(len(b))
}

func (w *chunkWriter) flush() error {
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
	return nil
}

// tar archives a file or a tree. Links go in as links, never followed;
// FIFOs, sockets and devices are left out and counted. An archive
// sandboxd keeps (req.Snapshot: hibernation, snapshots) keeps holes as
// holes and a file's second name as a hard link (sparse.go), so it is no
// larger than what the workspace holds. The archive's size
// is worked out before anything is sent, so an archive over the limit is
// refused whole; each file contributes exactly the size it had then.
func (s *Server) tar(id uint64, req supervisor.FileRequest) *supervisor.FileResult {
	at := s.locate(req.Path)
	root, err := at.open()
	if err != nil {
		return Failure(err)
	}
	defer root.Close()
	entries, err := walk(root, at.name, true)
	if err != nil {
		return walkFailure(err)
	}
	if req.Snapshot {
		entries = slices.DeleteFunc(entries, func(e supervisor.Entry) bool {
			return e.Path == projectDir || strings.HasPrefix(e.Path, projectDir+"/")
		})
	}
	clean := path.Clean(req.Path)
	top := path.Base(clean)
	if clean == "." {
		top = "workspace"
	}
	archived := func(e supervisor.Entry) string {
		if e.Path == clean {
			return top
		}
		return path.Join(top, strings.TrimPrefix(e.Path, strings.TrimPrefix(clean+"/", "./")))
	}
	total := int64(tarOverhead)
	skipped := 0
	placement := map[string]placed{}
	firstNames := map[fileID]string{}
	for _, e := range entries {
		switch e.Type {
		case "file":
			var p placed
			if req.Snapshot { // what sandboxd keeps: a download stays plain for the tools that read it
				p = place(root, e, firstNames, archived(e))
			}
			placement[e.Path] = p
			switch {
			case p.linkTo != "":
				total += 512 + paxRoom(supervisor.Entry{Path: e.Path, Target: p.linkTo})
			case p.sparse:
				total += 512 + (sparseSize(p.data)+511)/512*512 + 512 + int64(len(p.data))*42
			default:
				total += 512 + (e.Size+511)/512*512
			}
		case "dir", "symlink":
			total += 512
		default:
			skipped++
		}
		total += paxRoom(e)
	}
	if total > req.Max {
		return Refuse(supervisor.ErrTooLarge, "%s makes an archive of about %d bytes, over the %d-byte download limit", req.Path, total, req.Max)
	}
	// Names start with the target's own name ("workspace" for the root),
	// as a directory copy would make them.
	w := &chunkWriter{s: s, id: id}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		name := archived(e)
		// PAX keeps mtimes to the nanosecond: a hibernated workspace comes
		// back exactly.
		hdr := &tar.Header{Name: name, Mode: int64(e.Mode), ModTime: time.Unix(0, e.ModTime), Format: tar.FormatPAX}
		switch e.Type {
		case "dir":
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		case "symlink":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Target
		case "file":
			hdr.Typeflag, hdr.Size = tar.TypeReg, e.Size
			switch p := placement[e.Path]; {
			case p.linkTo != "":
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, p.linkTo, 0
				if err := tw.WriteHeader(hdr); err != nil {
					return Failure(err)
				}
				continue
			case p.sparse:
				if err := writeSparse(tw, hdr, p.data, func(r segment) io.Reader { return readExactly(root, e.Path, r) }); err != nil {
					return Failure(err)
				}
				continue
			}
		default:
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return Failure(err)
		}
		if e.Type == "file" {
			if err := copyExactly(tw, root, e.Path, e.Size); err != nil {
				return Failure(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return Failure(err)
	}
	_ = w.flush()
	return &supervisor.FileResult{Size: w.n, Skipped: skipped}
}

// place says how a regular file goes into the archive: as a hard link to
// the first of its names met (firstNames, by device and inode), as a
// sparse file's data runs where it holds less than its size, or whole.
func place(root *os.Root, e supervisor.Entry, firstNames map[fileID]string, name string) placed {
	st, err := root.Lstat(e.Path)
	if err != nil {
		return placed{}
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return placed{}
	}
	if sys.Nlink > 1 {
		id := fileID{uint64(sys.Dev), sys.Ino}
		if first, ok := firstNames[id]; ok {
			return placed{linkTo: first}
		}
		firstNames[id] = name
	}
	holes := sys.Blocks*512 < e.Size // where the kernel says so (gVisor never does)
	if !holes && e.Size < scanFrom {
		return placed{}
	}
	f, _, res := openRegular(root, e.Path)
	if res != nil {
		return placed{}
	}
	defer f.Close()
	runs, err := dataRuns(f, e.Size)
	switch {
	case err == nil && !holes:
		return placed{} // dense, as the kernel says
	case errors.Is(err, syscall.EINVAL) && e.Size <= scanUpTo:
		// No SEEK_DATA here (gVisor): the zeros of a large file are read
		// to find its holes.
		if runs, err = zeroRuns(f, e.Size); err != nil || sparseSize(runs) == e.Size {
			return placed{}
		}
	case err != nil:
		return placed{}
	}
	if len(runs) > maxRuns {
		return placed{}
	}
	return placed{sparse: true, data: runs}
}

// readExactly is r's bytes of name as they are now, cut or padded with
// zeros to r's length, as copyExactly reads a whole file.
func readExactly(root *os.Root, name string, r segment) io.Reader {
	if f, _, res := openRegular(root, name); res == nil {
		return io.MultiReader(&closingReader{f: f, r: io.NewSectionReader(f, r.off, r.n)}, zeros{})
	}
	return zeros{}
}

// closingReader closes its file at its end.
type closingReader struct {
	f *os.File
	r io.Reader
}

func (c *closingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil {
		c.f.Close()
	}
	return n, err
}

// paxRoom bounds the PAX header an entry may need for a long name or link
// target: a header block and its records, rounded up to whole blocks.
func paxRoom(e supervisor.Entry) int64 {
	const recordOverhead = 64 // "NNNN path=" and the newline, with the archive's top name
	const mtimeRecord = 32    // "30 mtime=1732441234.123456789" and the newline
	records := int64(len(e.Path) + len(e.Target) + 2*recordOverhead + mtimeRecord)
	return 512 + (records+511)/512*512
}

// copyExactly writes size bytes of name: what the file holds now, cut or
// padded with zeros, since the code beside us may change it meanwhile. A
// file that turned into something else is written as zeros.
func copyExactly(w io.Writer, root *os.Root, name string, size int64) error {
	var r io.Reader = zeros{}
	if f, _, res := openRegular(root, name); res == nil {
		defer f.Close()
		r = io.MultiReader(io.LimitReader(f, size), zeros{})
	}
	_, err := io.CopyN(w, r, size)
	return err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func (s *Server) list(req supervisor.FileRequest) *supervisor.FileResult {
	at := s.locate(req.Path)
	root, err := at.open()
	if err != nil {
		return Failure(err)
	}
	defer root.Close()
	entries, err := walk(root, at.name, req.Recursive)
	if err != nil {
		return walkFailure(err)
	}
	return &supervisor.FileResult{Entries: at.named(entries)}
}

// errTooMany means a listing went past maxEntries or maxListing.
var errTooMany = errors.New("too many entries")

func walkFailure(err error) *supervisor.FileResult {
	if errors.Is(err, errTooMany) {
		return &supervisor.FileResult{ErrorKind: supervisor.ErrTooLarge, Error: err.Error()}
	}
	return Failure(err)
}

// walk returns name first and, for a directory, what is under it (all levels or
// one), without following any link, within maxEntries and maxListing.
func walk(root *os.Root, name string, recursive bool) ([]supervisor.Entry, error) {
	name = path.Clean(name)
	st, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	out := []supervisor.Entry{entry(root, name, st)}
	if !st.IsDir() {
		return out, nil
	}
	size := 0
	var visit func(dir string) error
	visit = func(dir string) error {
		d, err := root.Open(dir)
		if err != nil {
			return err
		}
		ents, err := d.ReadDir(maxEntries)
		d.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, de := range ents {
			if len(out) >= maxEntries || size > maxListing {
				return fmt.Errorf("%w: %s holds more than %d entries or %d bytes of names and metadata: list or download a part of it", errTooMany, name, maxEntries, maxListing)
			}
			p := path.Join(dir, de.Name())
			info, err := de.Info()
			if err != nil {
				continue // gone meanwhile
			}
			e := entry(root, p, info)
			size += len(e.Path) + len(e.Target)
			for k, v := range e.Metadata {
				size += len(k) + len(v)
			}
			out = append(out, e)
			if info.IsDir() && recursive {
				if err := visit(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, visit(name)
}

func entry(root *os.Root, name string, st fs.FileInfo) supervisor.Entry {
	e := supervisor.Entry{Path: name, Type: fileType(st.Mode()), Size: st.Size(), Mode: uint32(st.Mode().Perm()), ModTime: st.ModTime().UnixNano()}
	if e.Type == "symlink" {
		e.Target, _ = root.Readlink(name)
	}
	if e.Type != "file" && e.Type != "dir" { // a directory's is what stat says, as ls -l shows it
		e.Size = 0
	}
	if e.Type == "file" {
		e.Metadata = metadata(root, name)
	}
	return e
}

func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "device"
}

// openWritable opens the workspace for an operation that changes names,
// once they are all writable and in one place (the workspace or /tmp);
// it answers the names relative to it.
func (s *Server) openWritable(names ...string) (*os.Root, location, []string, *supervisor.FileResult) {
	at := s.locate(names[0])
	var rel []string
	for _, name := range names {
		p := s.locate(name)
		if p.dir != at.dir {
			return nil, at, nil, Refuse(supervisor.ErrInvalid, "%s and %s are not both in the workspace nor both in /tmp", names[0], name)
		}
		if res := writable(p); res != nil {
			return nil, at, nil, res
		}
		rel = append(rel, p.name)
	}
	root, err := at.open()
	if err != nil {
		return nil, at, nil, Failure(err)
	}
	return root, at, rel, nil
}

// mkdir makes a directory and its parents; the directory's entry is the
// answer, ErrExists when something is there already.
func (s *Server) mkdir(req supervisor.FileRequest) *supervisor.FileResult {
	root, at, rel, res := s.openWritable(req.Path)
	if res != nil {
		return res
	}
	defer root.Close()
	if _, err := root.Lstat(rel[0]); err == nil {
		return Refuse(supervisor.ErrExists, "%s exists already", req.Path)
	}
	if err := root.MkdirAll(rel[0], 0o755); err != nil {
		return Failure(err)
	}
	return described(root, at, rel[0])
}

// move renames a file, link or tree within the workspace, replacing what
// the new path holds as rename(2) does; the moved entry is the answer.
func (s *Server) move(req supervisor.FileRequest) *supervisor.FileResult {
	root, at, rel, res := s.openWritable(req.Path, req.To)
	if res != nil {
		return res
	}
	defer root.Close()
	req.Path, req.To = rel[0], rel[1]
	if dir := path.Dir(path.Clean(req.To)); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return Failure(err)
		}
	}
	if err := root.Rename(req.Path, req.To); err != nil {
		return Failure(err)
	}
	return described(root, at, req.To)
}

// described answers with name's entry.
func described(root *os.Root, at location, name string) *supervisor.FileResult {
	st, err := root.Lstat(name)
	if err != nil {
		return Failure(err)
	}
	return &supervisor.FileResult{Entries: at.named([]supervisor.Entry{entry(root, path.Clean(name), st)})}
}

func (s *Server) remove(req supervisor.FileRequest) *supervisor.FileResult {
	root, _, rel, res := s.openWritable(req.Path)
	if res != nil {
		return res
	}
	defer root.Close()
	if _, err := root.Lstat(rel[0]); err != nil {
		return Failure(err)
	}
	if err := removeTree(root, rel[0]); err != nil {
		return Failure(err)
	}
	return &supervisor.FileResult{}
}

// Empty empties dir, one of the places a reset empties: it gets back mode
// (0: leave it), loses the extended attributes a program set on it, and
// keeps nothing but the workspace's project_files. What the code left
// behind (a mode-0000 directory, a workspace it made unwritable) is its
// own, and opened up to be removed. A dir that is not there is left so
// where mode is 0 (an engine without /dev/mqueue).
func (s *Server) Empty(dir string, mode os.FileMode) error {
	if err := restoreMode(dir, mode); err != nil {
		return err
	}
	ClearXattrs(dir)
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) && mode == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	return s.emptyDir(root)
}

// Xattrs are the names of the extended attributes set on a place itself
// (its contents are removed with them).
func Xattrs(dir string) string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(dir, buf)
	if err != nil || n <= 0 {
		return ""
	}
	var names []string
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if !strings.HasPrefix(name, "security.") { // the engine's labels, not a program's
			names = append(names, name)
		}
	}
	return strings.Join(names, ",")
}

// ClearXattrs removes the extended attributes a program set on a place
// itself (those of its contents go with them), as their owner may.
func ClearXattrs(dir string) {
	for _, name := range strings.Split(Xattrs(dir), ",") {
		if name != "" {
			_ = unix.Lremovexattr(dir, name)
		}
	}
}

// restoreMode gives dir its mode back (0: leave it as it is). A place
// whose mode is already right is left alone: under a runtime where the
// supervisor does not own it (a pod's volume), it could not chmod it, and
// neither could the program.
func restoreMode(dir string, mode os.FileMode) error {
	if mode == 0 {
		return nil
	}
	info, err := os.Lstat(dir)
	if err == nil && info.Mode()&ModeBits == mode {
		return nil
	}
	return os.Chmod(dir, mode)
}

// ModeBits are the bits of a mode that chmod sets.
const ModeBits = os.ModePerm | os.ModeSticky | os.ModeSetgid | os.ModeSetuid

func (s *Server) emptyDir(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == projectDir && root.Name() == s.workspace {
			continue
		}
		if err := removeTree(root, n); err != nil {
			return err
		}
	}
	return nil
}

// removeTree removes name and what is under it. Directories the code made
// unreadable or unwritable are opened up first: they are the sandbox's own.
func removeTree(root *os.Root, name string) error {
	err := root.RemoveAll(name)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	openUp(root, name)
	return root.RemoveAll(name)
}

// openUp gives the owner full access to every directory at and under
// name, never following a link.
func openUp(root *os.Root, name string) {
	st, err := root.Lstat(name)
	if err != nil || !st.IsDir() {
		return
	}
	_ = root.Chmod(name, 0o700)
	d, err := root.Open(name)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		openUp(root, path.Join(name, n))
	}
}

// MakeOutputs creates the workspace's outputs/, where results are expected.
func (s *Server) MakeOutputs() {
	if root, err := s.openWorkspace(); err == nil {
		_ = root.Mkdir(outputsDir, 0o755)
		root.Close()
	}
}

// Write writes the request's files under the workspace; os.Root keeps
// every path, and every link met on the way, inside it.
func (s *Server) Write(files []supervisor.File) error {
	if len(files) == 0 {
		return nil
	}
	root, err := s.openWorkspace()
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range files {
		name := filepath.Clean(strings.TrimPrefix(f.Path, "/workspace/"))
		if dir := filepath.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		mode := os.FileMode(f.Mode & 0o777)
		if mode == 0 {
			mode = 0o644
		}
		w, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		_, err = w.Write(f.Data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
