// Package snapshots owns saved workspaces: tar archives of a session's
// files, directories and links, as the supervisor makes them inside the
// sandbox (so no link there is ever followed), stored once per SHA-256
// under state_dir/snapshots and recorded in the state store. It knows
// nothing of containers: sessions take snapshots and start from them.
package snapshots

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/units"
)

var snapshotName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Snapshots is the snapshot store. Safe for concurrent use.
type Snapshots struct {
	dir   string
	store *state.Store
	quota config.Snapshots

	mu sync.Mutex
}

// New returns the snapshots kept under stateDir and in store, within
// quota. What a crashed process left half written goes, and so do
// archives no record names.
func New(stateDir string, store *state.Store, quota config.Snapshots) *Snapshots {
	s := &Snapshots{dir: filepath.Join(stateDir, "snapshots"), store: store, quota: quota}
	list, _, _ := store.Snapshots()
	used := map[string]bool{}
	for _, sn := range list {
		used[sn.SHA256+".tar"] = true
	}
	ents, _ := os.ReadDir(s.dir)
	for _, e := range ents {
		if !used[e.Name()] {
			_ = os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
	return s
}

func (s *Snapshots) path(sum string) string { return filepath.Join(s.dir, sum+".tar") }

// CheckName refuses a name that is malformed or taken.
func (s *Snapshots) CheckName(name string) error {
	if !snapshotName.MatchString(name) {
		return errdefs.Errorf(errdefs.Invalid, "snapshot name %q: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if _, aerr := s.Get(name); aerr == nil {
		return errdefs.Errorf(errdefs.Conflict, "a snapshot named %q exists already (sandboxctl snapshot rm %s)", name, name)
	}
	return nil
}

// Room is how many more archive bytes the quota allows, or an error when
// it allows no more snapshots.
func (s *Snapshots) Room() (int64, error) {
	list, aerr := s.List()
	if aerr != nil {
		return 0, aerr
	}
	if len(list) >= s.quota.Max {
		return 0, errdefs.Errorf(errdefs.TooLarge, "%d snapshots are kept, the most sandboxd.hcl allows (snapshots.max): delete one (sandboxctl snapshot rm)", len(list))
	}
	var used int64
	for _, sn := range list {
		used += sn.Size
	}
	if room := s.quota.MaxBytes - used; room > 0 {
		return room, nil
	}
	return 0, errdefs.Errorf(errdefs.TooLarge, "snapshots hold %s, all snapshots.max_bytes allows: delete one (sandboxctl snapshot rm)", units.ByteSize(used))
}

// Save stores what write writes (a tar archive of at most max bytes) as
// the snapshot meta describes, named name.
func (s *Snapshots) Save(meta state.Snapshot, write func(w io.Writer) (skipped int, aerr error)) (*state.Snapshot, error) {
	a, aerr := WriteArchive(s.dir, write)
	if aerr != nil {
		return nil, aerr
	}
	defer os.Remove(a.Temp) // once renamed, this finds nothing
	meta.SHA256, meta.Size, meta.Skipped = a.SHA256, a.Size, a.Skipped
	meta.ID, meta.CreatedAt = state.RandomID(8), time.Now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.path(meta.SHA256)); err != nil {
		if err := os.Rename(a.Temp, s.path(meta.SHA256)); err != nil {
			return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
		}
	}
	if err := s.store.PutSnapshot(meta); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "storing the snapshot: %v", err)
	}
	return &meta, nil
}

// Archive is an archive WriteArchive wrote, still under its temporary
// name: the caller renames it into place or removes it.
type Archive struct {
	Temp    string
	SHA256  string
	Size    int64
	Skipped int // what write left out
}

// WriteArchive writes what write writes to a new file in dir (made if
// need be), on disk (fsynced) before it returns, digested as it goes.
func WriteArchive(dir string, write func(w io.Writer) (skipped int, aerr error)) (*Archive, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	tmp, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	defer tmp.Close()
	d := NewDigest()
	skipped, aerr := write(io.MultiWriter(tmp, d))
	if aerr == nil {
		if err := tmp.Sync(); err != nil {
			aerr = errdefs.Errorf(errdefs.NoSpace, "writing the archive: %v", err)
		}
	}
	if aerr != nil {
		os.Remove(tmp.Name())
		return nil, aerr
	}
	sum, size := d.Sum()
	return &Archive{Temp: tmp.Name(), SHA256: sum, Size: size, Skipped: skipped}, nil
}

// TempPrefix starts the names of archives being written: what a crash
// left so is removed at the next start.
const TempPrefix = "new-"

// Digest is an archive's SHA-256 and size, as it is written or read.
type Digest struct {
	h hash.Hash
	n int64
}

// NewDigest returns a digest of nothing yet.
func NewDigest() *Digest { return &Digest{h: sha256.New()} }

func (d *Digest) Write(b []byte) (int, error) { d.n += int64(len(b)); return d.h.Write(b) }

// Sum is the hex SHA-256 and the size of what was written.
func (d *Digest) Sum() (string, int64) { return hex.EncodeToString(d.h.Sum(nil)), d.n }

// List is every snapshot, oldest first.
func (s *Snapshots) List() ([]state.Snapshot, error) {
	list, _, err := s.store.Snapshots()
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].CreatedAt.Before(list[j].CreatedAt) })
	return list, nil
}

// Get finds a snapshot by id or name.
func (s *Snapshots) Get(ref string) (*state.Snapshot, error) {
	list, aerr := s.List()
	if aerr != nil {
		return nil, aerr
	}
	for _, sn := range list {
		if sn.ID == ref || sn.Name == ref {
			return &sn, nil
		}
	}
	return nil, errdefs.Errorf(errdefs.NotFound, "no snapshot %q (sandboxctl snapshot ls)", ref)
}

// Open opens a snapshot's archive, once it is checked to be what was
// saved (its size and SHA-256): a changed or damaged one is
// snapshot_damaged, and no byte of it reaches a container.
func (s *Snapshots) Open(ref string) (*os.File, *state.Snapshot, error) {
	sn, aerr := s.Get(ref)
	if aerr != nil {
		return nil, nil, aerr
	}
	f, err := OpenVerified(s.path(sn.SHA256), sn.SHA256, sn.Size)
	if err != nil {
		return nil, nil, errdefs.Errorf(errdefs.SnapshotDamaged, "snapshot %s: %v; delete it (sandboxctl snapshot rm %s) and take another", sn.Name, err, sn.Name)
	}
	return f, sn, nil
}

// OpenVerified opens the archive at path, once it has read it whole and
// found the size and SHA-256 it was written with; the file is at its
// start. The error says what differs.
func OpenVerified(path, sum string, size int64) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("its archive %s cannot be read: %w", path, err)
	}
	d := NewDigest()
	if _, err := io.Copy(d, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("reading its archive %s: %w", path, err)
	}
	if got, n := d.Sum(); got != sum || n != size {
		f.Close()
		return nil, fmt.Errorf("its archive %s was changed or damaged (%d bytes, sha256 %s; saved as %d bytes, %s)", path, n, got, size, sum)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Delete forgets a snapshot, and its archive unless another names it.
func (s *Snapshots) Delete(ref string) error {
	sn, aerr := s.Get(ref)
	if aerr != nil {
		return aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.DeleteSnapshot(sn.ID); err != nil {
		return errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	list, _, _ := s.store.Snapshots()
	for _, other := range list {
		if other.SHA256 == sn.SHA256 {
			return nil
		}
	}
	if err := os.Remove(s.path(sn.SHA256)); err != nil && !os.IsNotExist(err) {
		return errdefs.Errorf(errdefs.Internal, "%v", err)
	}
	return nil
}

// AutoName makes a snapshot name for a fork of session id.
func AutoName(id string) string {
	return fmt.Sprintf("fork-%s-%s", id, strings.ToLower(state.RandomID(3)))
}
