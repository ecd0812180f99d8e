// Package projects owns projects: persistent file sets that sessions
// mount read-only at /workspace/project_files. Content is stored once per
// SHA-256 under state_dir/blobs; each project is a directory of hard links
// to its blobs under state_dir/projects/<id>, which is what sessions mount.
// These are host files only sandboxd writes, from uploads; sandboxes see
// them read-only. It knows nothing of containers.
package projects

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
)

var projectName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Projects is the project store. Safe for concurrent use.
type Projects struct {
	dir         string // state_dir
	store       *state.Store
	maxTransfer int64 // bytes per upload
	quota       config.Projects
	// Users lists the active sessions that mount a project; set by the
	// sessions, which know them.
	Users func(id string) []string

	mu sync.Mutex // project files and blobs
}

// New returns the projects kept under stateDir and in store, within
// quota; an upload may be at most maxTransfer bytes.
func New(stateDir string, store *state.Store, maxTransfer int64, quota config.Projects) *Projects {
	ps := &Projects{dir: stateDir, store: store, maxTransfer: maxTransfer, quota: quota, Users: func(string) []string { return nil }}
	// No upload is in progress yet: what an earlier process left half
	// received (it crashed or was killed mid-upload) goes, and so do blobs
	// no project refers to.
	if uploads, err := filepath.Glob(filepath.Join(ps.blobDir(), "upload-*")); err == nil {
		for _, u := range uploads {
			_ = os.Remove(u)
		}
	}
	ps.collectBlobsLocked()
	return ps
}

func (ps *Projects) blobDir() string { return filepath.Join(ps.dir, "blobs") }

// Dir is the directory of a project's files, which sessions mount.
func (ps *Projects) Dir(id string) string       { return filepath.Join(ps.dir, "projects", id) }
func (ps *Projects) blobPath(sum string) string { return filepath.Join(ps.blobDir(), sum) }
func projectFilePath(dir, name string) string   { return filepath.Join(dir, filepath.FromSlash(name)) }
func noProject(ref string) error {
	return errdefs.Errorf(errdefs.NotFound, "no project %q (sandboxctl project ls)", ref)
}

// Create makes an empty project, named name (unique).
func (ps *Projects) Create(name string) (*state.Project, error) {
	if !projectName.MatchString(name) {
		return nil, errdefs.Errorf(errdefs.Invalid, "project name %q: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, aerr := ps.findProjectLocked(name); aerr == nil {
		return nil, errdefs.Errorf(errdefs.Conflict, "a project named %q exists already", name)
	}
	if list, _, err := ps.store.Projects(); err == nil && len(list) >= ps.quota.Max {
		return nil, errdefs.Errorf(errdefs.TooLarge, "%d projects exist, the most sandboxd.hcl allows (projects.max); delete one first", len(list))
	}
	p := state.Project{ID: "p" + state.RandomID(6), Name: name, CreatedAt: time.Now().UTC(), Files: []state.ProjectFile{}}
	if err := os.MkdirAll(ps.Dir(p.ID), 0o755); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "creating the project directory: %v", err)
	}
	if err := ps.store.PutProject(p); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "storing the project: %v", err)
	}
	return &p, nil
}

// List lists every project with the sessions that mount it.
func (ps *Projects) List() ([]state.Project, error) {
	ps.mu.Lock()
	list, _, err := ps.store.Projects() // undecodable ones are reported at start
	ps.mu.Unlock()
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "reading projects: %v", err)
	}
	for i := range list {
		list[i].Sessions = ps.Users(list[i].ID)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

// Get returns one project by id or name.
func (ps *Projects) Get(ref string) (*state.Project, error) {
	p, aerr := ps.Find(ref)
	if aerr != nil {
		return nil, aerr
	}
	p.Sessions = ps.Users(p.ID)
	return p, nil
}

func (ps *Projects) Find(ref string) (*state.Project, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.findProjectLocked(ref)
}

func (ps *Projects) findProjectLocked(ref string) (*state.Project, error) {
	list, _, err := ps.store.Projects() // undecodable ones are reported at start
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "reading projects: %v", err)
	}
	for _, p := range list {
		if p.ID == ref || p.Name == ref {
			return &p, nil
		}
	}
	return nil, noProject(ref)
}

// AddFile stores body under name. The name is sanitized; a name
// taken already gets a numbered variant unless overwrite is set. The
// content is stored once however many files and projects hold it.
func (ps *Projects) AddFile(ref, name string, body io.Reader, overwrite bool) (*state.ProjectFile, error) {
	clean, err := sanitizeName(name)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Invalid, "file name %q: %v", name, err)
	}
	// Receive the content first, outside the lock: uploads may be large.
	tmp, sum, size, aerr := ps.receiveBlob(body)
	if aerr != nil {
		return nil, aerr
	}
	defer os.Remove(tmp)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, aerr := ps.findProjectLocked(ref)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := ps.withinBytesLocked(p, clean, size, overwrite); aerr != nil {
		return nil, aerr
	}
	if _, err := os.Stat(ps.blobPath(sum)); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(tmp, ps.blobPath(sum)); err != nil {
			return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
		}
	}
	if !overwrite {
		clean = uniqueName(clean, p.Files)
	}
	files := p.Files[:0:0]
	for _, f := range p.Files {
		if f.Name != clean {
			files = append(files, f)
		}
	}
	pf := state.ProjectFile{Name: clean, Size: size, SHA256: sum, AddedAt: time.Now().UTC()}
	p.Files = append(files, pf)
	sort.Slice(p.Files, func(i, j int) bool { return p.Files[i].Name < p.Files[j].Name })
	dst := projectFilePath(ps.Dir(p.ID), clean)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	// Replace atomically: sessions that mount the project see the old or
	// the new file, never a missing one.
	link := dst + ".sandboxd-new"
	_ = os.Remove(link)
	if err := os.Link(ps.blobPath(sum), link); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "linking the file into the project: %v", err)
	}
	if err := os.Rename(link, dst); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	p.Size = 0
	for _, f := range p.Files {
		p.Size += f.Size
	}
	if err := ps.store.PutProject(*p); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "storing the project: %v", err)
	}
	ps.collectBlobsLocked()
	return &pf, nil
}

// withinBytesLocked refuses a file that would take the project files past
// projects.max_bytes (counted as uploaded, before deduplication).
func (ps *Projects) withinBytesLocked(p *state.Project, name string, size int64, overwrite bool) error {
	list, _, err := ps.store.Projects()
	if err != nil {
		return errdefs.Errorf(errdefs.Internal, "reading projects: %v", err)
	}
	total := size
	for _, q := range list {
		total += q.Size
	}
	for _, f := range p.Files {
		if overwrite && f.Name == name {
			total -= f.Size // replaced
		}
	}
	if total > ps.quota.MaxBytes {
		return errdefs.Errorf(errdefs.TooLarge, "project files would take %s, over the %s sandboxd.hcl allows (projects.max_bytes); delete some first",
			units.ByteSize(total), units.ByteSize(ps.quota.MaxBytes))
	}
	return nil
}

// receiveBlob writes an upload to a temporary file of the blob store,
// read-only and synced, and returns it with its SHA-256 and size. The
// caller moves it into place (or drops it: the content is there already).
func (ps *Projects) receiveBlob(body io.Reader) (string, string, int64, error) {
	fail := func(kind errdefs.Kind, format string, args ...any) (string, string, int64, error) {
		return "", "", 0, errdefs.Errorf(kind, format, args...)
	}
	if err := os.MkdirAll(ps.blobDir(), 0o755); err != nil {
		return fail(errdefs.Internal, "%v", err)
	}
	tmp, err := os.CreateTemp(ps.blobDir(), "upload-*")
	if err != nil {
		return fail(errdefs.Internal, "%v", err)
	}
	defer tmp.Close()
	max := ps.maxTransfer
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(body, max+1))
	if err == nil && n > max {
		err = fmt.Errorf("over the %s upload limit (sessions.max_transfer)", units.ByteSize(max))
	}
	if err == nil {
		err = tmp.Chmod(0o444)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		os.Remove(tmp.Name())
		if n > max {
			return fail(errdefs.TooLarge, "the file is %v", err)
		}
		return fail(errdefs.Invalid, "receiving the upload: %v", err)
	}
	return tmp.Name(), hex.EncodeToString(h.Sum(nil)), n, nil
}

// collectBlobsLocked removes blobs no project refers to; uploads in
// progress are left alone (New removes those a crash abandoned).
func (ps *Projects) collectBlobsLocked() {
	list, _, err := ps.store.Projects() // undecodable ones are reported at start
	if err != nil {
		return
	}
	used := map[string]bool{}
	for _, p := range list {
		for _, f := range p.Files {
			used[f.SHA256] = true
		}
	}
	ents, _ := os.ReadDir(ps.blobDir())
	for _, e := range ents {
		if !used[e.Name()] && !strings.HasPrefix(e.Name(), "upload-") {
			_ = os.Remove(filepath.Join(ps.blobDir(), e.Name()))
		}
	}
}

// OpenFile opens a project file for download.
func (ps *Projects) OpenFile(ref, name string) (*os.File, *state.ProjectFile, error) {
	p, aerr := ps.Find(ref)
	if aerr != nil {
		return nil, nil, aerr
	}
	for _, f := range p.Files {
		if f.Name == name {
			fh, err := os.Open(ps.blobPath(f.SHA256))
			if err != nil {
				return nil, nil, errdefs.Errorf(errdefs.Internal, "the content of %s is missing from the store: %v", name, err)
			}
			return fh, &f, nil
		}
	}
	return nil, nil, errdefs.Errorf(errdefs.NotFound, "project %s has no file %q", p.Name, name)
}

// DeleteFile removes one file from a project.
func (ps *Projects) DeleteFile(ref, name string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, aerr := ps.findProjectLocked(ref)
	if aerr != nil {
		return aerr
	}
	files := p.Files[:0:0]
	for _, f := range p.Files {
		if f.Name != name {
			files = append(files, f)
		} else {
			p.Size -= f.Size
		}
	}
	if len(files) == len(p.Files) {
		return errdefs.Errorf(errdefs.NotFound, "project %s has no file %q", p.Name, name)
	}
	p.Files = files
	if err := ps.store.PutProject(*p); err != nil {
		return errdefs.Errorf(errdefs.Internal, "storing the project: %v", err)
	}
	_ = os.Remove(projectFilePath(ps.Dir(p.ID), name))
	ps.collectBlobsLocked()
	return nil
}

// Delete removes a project no session uses.
func (ps *Projects) Delete(ref string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, aerr := ps.findProjectLocked(ref)
	if aerr != nil {
		return aerr
	}
	if users := ps.Users(p.ID); len(users) > 0 {
		return errdefs.Errorf(errdefs.Conflict, "project %s is mounted by sessions %s: delete them first", p.Name, strings.Join(users, ", "))
	}
	if err := ps.store.DeleteProject(p.ID); err != nil {
		return errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	_ = os.RemoveAll(ps.Dir(p.ID))
	ps.collectBlobsLocked()
	return nil
}

// sanitizeName makes an uploaded file name safe to store: a relative path
// of printable components; "..", "." and empty components are dropped;
// at most 255 bytes per component.
func sanitizeName(name string) (string, error) {
	name = strings.ReplaceAll(strings.TrimSpace(name), `\`, "/")
	var parts []string
	for _, part := range strings.Split(name, "/") {
		part = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == unicode.ReplacementChar {
				return -1
			}
			return r
		}, strings.TrimSpace(part))
		switch {
		case part == "" || part == "." || part == "..":
			continue // names stay inside the project
		case len(part) > 255:
			return "", errors.New("a name component is over 255 bytes")
		case strings.HasSuffix(part, ".sandboxd-new"):
			return "", errors.New("reserved suffix")
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "", errors.New("empty")
	}
	clean := path.Join(parts...)
	if len(clean) > 1024 {
		return "", errors.New("longer than 1024 bytes")
	}
	return clean, nil
}

// uniqueName returns name, or name-1.ext, name-2.ext, ... when taken.
func uniqueName(name string, files []state.ProjectFile) string {
	taken := map[string]bool{}
	for _, f := range files {
		taken[f.Name] = true
	}
	ext := path.Ext(name)
	base := strings.TrimSuffix(name, ext)
	for i := 1; taken[name]; i++ {
		name = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
	return name
}
