// Package state is sandboxd's persistent store, a bbolt file in state_dir.
// It owns the schema and every read and write of it; it knows nothing of
// containers or HTTP.
//
// Bucket tree:
//
//	meta/
//	  version   -> "1"            schema version
//	  instance  -> "3f9c..."      this daemon's id, the io.sandboxd.instance label
//	executions/
//	  <id>      -> executionEntry (JSON)   ids sort by start time
//	sessions/
//	  <id>      -> sessionEntry (JSON)     live and lost sessions
//	projects/
//	  <id>      -> projectEntry (JSON)     file names -> SHA-256 of content
//	snapshots/
//	  <id>      -> snapshotEntry (JSON)    a saved workspace's record (its archive beside the database)
//	versions/
//	  <image id> -> versionEntry (JSON)    a runtime's version as its image reports it
//	approvals/
//	  <id>      -> approvalEntry (JSON)    a request held for a person's decision, ids sort by time
//	e2b/
//	  <id>      -> e2bEntry (JSON)         a session made through the E2B-compatible API: its owner and token
//
// Project content lives beside the database, one file per SHA-256 (see
// internal/projects); the store keeps only the names.
//
// Values are versioned entry structs holding the store's own records
// (records.go), not the wire's types: a field renamed on the wire changes
// no stored byte. The file is pinned by testdata/schema1.db, a file
// sandboxd wrote on 2026-11-24: a record field renamed or retyped fails
// TestTodaysFileStillReads until SchemaVersion moves and a migration
// reads the old file. The file lock doubles as the "one daemon
// per state dir" guard.
package state

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sandboxd/sandboxd/internal/redact"
)

// SchemaVersion is the layout this code reads and writes.
const SchemaVersion = 1

// FileName is the database's name inside state_dir.
const FileName = "sandboxd.db"

// MaxExecutions bounds the history; the oldest records go first.
const MaxExecutions = 50000

// Bounds of one history record, so that MaxExecutions bounds the bytes too
// (a few KiB each at most).
const (
	maxRecordFindings = 10
	maxRecordEgress   = 10
	maxRecordText     = 256 // bytes of a finding's message or snippet
	maxRecordError    = 1024
)

// bounded is e cut to the bounds of a history record.
func bounded(e Execution) Execution {
	if n := len(e.Findings); n > maxRecordFindings {
		e.FindingsOmitted += n - maxRecordFindings
		e.Findings = e.Findings[:maxRecordFindings]
	}
	fs := make([]Finding, len(e.Findings))
	for i, f := range e.Findings {
		f.Message, f.Snippet = cut(f.Message, maxRecordText), cut(f.Snippet, maxRecordText)
		f.Rule, f.Policy, f.File = cut(f.Rule, maxRecordText), cut(f.Policy, maxRecordText), cut(f.File, maxRecordText)
		fs[i] = f
	}
	e.Findings = fs
	e.Error = cut(e.Error, maxRecordError)
	// Denied connections are what the history is read for: they stay.
	egress := slices.Clone(e.Egress)
	slices.SortStableFunc(egress, func(a, b Egress) int {
		if a.Allowed == b.Allowed {
			return 0
		}
		if !a.Allowed {
			return -1
		}
		return 1
	})
	if n := len(egress); n > maxRecordEgress {
		e.EgressOmitted += n - maxRecordEgress
		egress = egress[:maxRecordEgress]
	}
	for i := range egress {
		egress[i].Host, egress[i].Error = cut(egress[i].Host, maxRecordText), cut(egress[i].Error, maxRecordText)
	}
	e.Egress = egress
	return e
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

var (
	bucketMeta       = []byte("meta")
	bucketExecutions = []byte("executions")
	bucketSessions   = []byte("sessions")
	bucketProjects   = []byte("projects")
	bucketSnapshots  = []byte("snapshots")
	bucketVersions   = []byte("versions")
	bucketApprovals  = []byte("approvals")
	bucketE2B        = []byte("e2b")
	keyVersion       = []byte("version")
	keyInstance      = []byte("instance")
)

// ErrLocked means another process holds the state file.
var ErrLocked = errors.New("state dir in use")

// Store is the open database.
type Store struct {
	db       *bolt.DB
	instance string

	mu sync.Mutex
	// unwritten are the executions waiting for their batch's commit
	// (historyBatchDelay), or refused by a commit that failed (a full
	// disk): Executions lists them meanwhile.
	unwritten map[string]Execution
	// refused are those a commit failed for: every later commit takes
	// them again, at most maxRefused.
	refused map[string]refusedRecord
	// redactor takes every secret value out of what is written.
	redactor *redact.Replacer
}

// Redact has every record written from now on pass r: no secret value
// reaches the file, whatever a record was made from. Call it before the
// store is shared.
func (s *Store) Redact(r *redact.Replacer) { s.redactor = r }

type refusedRecord struct{ key, val []byte }

// maxRefused bounds the records kept for a later commit while the state
// disk refuses them; one beyond is lost (and logged by the caller).
const maxRefused = 1000

type executionEntry struct {
	V         int       `json:"v"`
	Execution Execution `json:"execution"`
}

// Open opens (or creates) the store in dir. It fails at once, with a message
// saying what to do, when another sandboxd uses the same dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state_dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is locked by another sandboxd; stop it, or give this one another --state-dir", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if db, err = compactIfSparse(db, path, compactAbove); err != nil {
		return nil, err
	}
	db.MaxBatchDelay = historyBatchDelay
	s := &Store{db: db, unwritten: map[string]Execution{}, refused: map[string]refusedRecord{}}
	if err := s.init(dir); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Private makes the state dir if it is missing, and refuses one that
// other users may enter: a session's egress socket (the way out with its
// secrets), its archives and its records are below it.
func Private(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state_dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("state_dir %s is open to other users (mode %04o): sessions' egress sockets, archives and records are in it; make it sandboxd's alone with `chmod 700 %s`", dir, perm, dir)
	}
	return nil
}

// historyBatchDelay is how long a history record waits for others to
// share its commit (and its fsyncs). Records are written in the
// background, after their run's answer.
const historyBatchDelay = 100 * time.Millisecond

// compactAbove: a state file is compacted at open when its free pages (left
// by the history's dropped records; bbolt reuses them but never gives them
// back) pass this many bytes and half the file.
const compactAbove = 64 << 20

// compactIfSparse copies a state file that is mostly free pages into a new
// one and puts it in its place. The old file stays open, and locked, until
// the new one has replaced it, so no other sandboxd can open the old one
// meanwhile, and nothing is written to the old one after the copy.
func compactIfSparse(db *bolt.DB, path string, above int64) (*bolt.DB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return db, nil
	}
	stats := db.Stats()
	free := int64(stats.FreePageN+stats.PendingPageN) * int64(db.Info().PageSize)
	if free < above || free*2 < st.Size() {
		return db, nil
	}
	tmp := path + ".compact"
	_ = os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err == nil {
		err = bolt.Compact(dst, db, 16<<20)
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		// Serving matters more than a smaller file: go on with the old one.
		_ = os.Remove(tmp)
		return db, nil
	}
	db.Close()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("reopening %s after compacting it: %w", path, err)
	}
	return db, nil
}

func (s *Store) init(dir string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keyVersion); v != nil {
			n, err := strconv.Atoi(string(v))
			if err != nil || n > SchemaVersion {
				return fmt.Errorf("written by a newer sandboxd (schema %s, this one reads %d): upgrade sandboxd or use another --state-dir", v, SchemaVersion)
			}
		} else if err := meta.Put(keyVersion, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return err
		}
		if id := meta.Get(keyInstance); id != nil {
			s.instance = string(id)
		} else {
			s.instance = InstanceOf(dir)
			if err := meta.Put(keyInstance, []byte(s.instance)); err != nil {
				return err
			}
		}
		for _, b := range [][]byte{bucketExecutions, bucketSessions, bucketProjects, bucketSnapshots, bucketVersions, bucketApprovals, bucketE2B} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}

type sessionEntry struct {
	V       int     `json:"v"`
	Session Session `json:"session"`
}

type projectEntry struct {
	V       int     `json:"v"`
	Project Project `json:"project"`
}

// PutSession stores (or replaces) a session.
func (s *Store) PutSession(sess Session) error {
	return s.put(bucketSessions, sess.ID, sessionEntry{V: 1, Session: sess})
}

// DeleteSession forgets a session.
func (s *Store) DeleteSession(id string) error { return s.delete(bucketSessions, id) }

// Corrupt is a stored record that no longer decodes. Readers skip it and
// say which, so that one bad record never stops a start.
type Corrupt struct {
	Key string
	Err error
}

// Sessions returns every stored session that decodes, and the ones that
// do not.
func (s *Store) Sessions() ([]Session, []Corrupt, error) {
	return decodeAll(s, bucketSessions, func(e sessionEntry) Session { return e.Session })
}

// PutProject stores (or replaces) a project.
func (s *Store) PutProject(p Project) error {
	return s.put(bucketProjects, p.ID, projectEntry{V: 1, Project: p})
}

// DeleteProject forgets a project.
func (s *Store) DeleteProject(id string) error { return s.delete(bucketProjects, id) }

// Projects returns every project that decodes, and the ones that do not.
func (s *Store) Projects() ([]Project, []Corrupt, error) {
	return decodeAll(s, bucketProjects, func(e projectEntry) Project { return e.Project })
}

type snapshotEntry struct {
	V        int      `json:"v"`
	Snapshot Snapshot `json:"snapshot"`
}

// PutSnapshot stores (or replaces) a snapshot's record.
func (s *Store) PutSnapshot(sn Snapshot) error {
	return s.put(bucketSnapshots, sn.ID, snapshotEntry{V: 1, Snapshot: sn})
}

// DeleteSnapshot forgets a snapshot.
func (s *Store) DeleteSnapshot(id string) error { return s.delete(bucketSnapshots, id) }

// Snapshots returns every snapshot that decodes, and the ones that do not.
func (s *Store) Snapshots() ([]Snapshot, []Corrupt, error) {
	return decodeAll(s, bucketSnapshots, func(e snapshotEntry) Snapshot { return e.Snapshot })
}

type approvalEntry struct {
	V        int      `json:"v"`
	Approval Approval `json:"approval"`
}

// PutApproval stores (or replaces) an approval.
func (s *Store) PutApproval(a Approval) error {
	return s.put(bucketApprovals, a.ID, approvalEntry{V: 1, Approval: a})
}

// DeleteApproval forgets an approval.
func (s *Store) DeleteApproval(id string) error { return s.delete(bucketApprovals, id) }

// Approvals returns every approval that decodes, oldest first, and the
// ones that do not.
func (s *Store) Approvals() ([]Approval, []Corrupt, error) {
	return decodeAll(s, bucketApprovals, func(e approvalEntry) Approval { return e.Approval })
}

// E2BSandbox is a session made through the E2B-compatible API
// (internal/e2b): the API key it belongs to, the token its clients reach
// it with, and what E2B's clients see of it that a session has not.
type E2BSandbox struct {
	ID        string            `json:"id"` // the session's
	Template  string            `json:"template"`
	Key       string            `json:"key"` // the owning API key's fingerprint, never the key
	Token     string            `json:"token"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	StartedAt time.Time         `json:"started_at"`
	// Paused: its client paused it, and its agent answers nothing until
	// the client connects to it again, as on E2B.
	Paused    bool         `json:"paused,omitempty"`
	Lifecycle E2BLifecycle `json:"lifecycle,omitzero"`
}

// E2BLifecycle is what an E2B sandbox made to pause at its timeout
// (E2B's lifecycle.onTimeout "pause") does then. The zero value ends at
// its session's expiry, as any sandbox does.
type E2BLifecycle struct {
	// Pause: at EndsAt it pauses instead of ending; its session lives on
	// for max_ttl from then.
	Pause bool `json:"pause,omitempty"`
	// FilesOnly: the pause keeps its files, not its processes' memory.
	FilesOnly bool `json:"files_only,omitempty"`
	// AutoResume: a call to its agent while it is paused resumes it.
	AutoResume bool `json:"auto_resume,omitempty"`
	// Timeout is the life it gets again when traffic resumes it.
	Timeout time.Duration `json:"timeout,omitempty"`
	EndsAt  time.Time     `json:"ends_at,omitzero"`
}

type e2bEntry struct {
	V       int        `json:"v"`
	Sandbox E2BSandbox `json:"sandbox"`
}

// PutE2BSandbox stores (or replaces) an E2B sandbox's record.
func (s *Store) PutE2BSandbox(sb E2BSandbox) error {
	return s.put(bucketE2B, sb.ID, e2bEntry{V: 1, Sandbox: sb})
}

// DeleteE2BSandbox forgets an E2B sandbox's record.
func (s *Store) DeleteE2BSandbox(id string) error { return s.delete(bucketE2B, id) }

// E2BSandboxes returns every E2B sandbox record that decodes, and the
// ones that do not.
func (s *Store) E2BSandboxes() ([]E2BSandbox, []Corrupt, error) {
	return decodeAll(s, bucketE2B, func(e e2bEntry) E2BSandbox { return e.Sandbox })
}

type versionEntry struct {
	V       int    `json:"v"`
	Version string `json:"version"`
}

// PutVersion records what an image's version command printed.
func (s *Store) PutVersion(imageID, version string) error {
	return s.put(bucketVersions, imageID, versionEntry{V: 1, Version: version})
}

// Version is the version recorded for an image, if any.
func (s *Store) Version(imageID string) (version string, ok bool) {
	_ = s.db.View(func(tx *bolt.Tx) error {
		var e versionEntry
		if v := tx.Bucket(bucketVersions).Get([]byte(imageID)); v != nil && json.Unmarshal(v, &e) == nil {
			version, ok = e.Version, true
		}
		return nil
	})
	return version, ok
}

func (s *Store) put(bucket []byte, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = s.redactor.Bytes(data)
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), data) })
}

func (s *Store) delete(bucket []byte, key string) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Delete([]byte(key)) })
}

// decodeAll decodes every record of a bucket as E, skipping (and
// returning) those that do not decode.
func decodeAll[E, T any](s *Store, bucket []byte, unwrap func(E) T) ([]T, []Corrupt, error) {
	var out []T
	var bad []Corrupt
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			var e E
			if err := json.Unmarshal(v, &e); err != nil {
				bad = append(bad, Corrupt{Key: string(k), Err: err})
				return nil
			}
			out = append(out, unwrap(e))
			return nil
		})
	})
	return out, bad, err
}

// InstanceOf is the instance id of a state dir: derived from its path, not
// drawn at random, so that a state file lost or removed comes back with the
// id the containers carry in their io.sandboxd.instance label, and the
// next start finds and reconciles them instead of orphaning them. Two
// daemons never share a state dir (the file lock), so never an id.
func InstanceOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:8])
}

// RandomID returns n random bytes in hex: session and project ids.
func RandomID(n int) string { return randomHex(n) }

// Instance is this state dir's daemon id.
func (s *Store) Instance() string { return s.instance }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// NewID returns an execution id that sorts by time.
func NewID(t time.Time) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixNano()))
	_, _ = rand.Read(b[8:])
	return hex.EncodeToString(b[:])
}

// RecordExecution stores one execution. Concurrent callers are batched into
// one transaction (and one fsync). One whose commit fails stays listed,
// and the next commit writes it again.
func (s *Store) RecordExecution(e Execution) error {
	key, err := hex.DecodeString(e.ID)
	if err != nil || len(key) != 12 {
		return fmt.Errorf("execution id %q was not made by NewID", e.ID)
	}
	e = bounded(e)
	val, err := json.Marshal(executionEntry{V: 1, Execution: e})
	if err != nil {
		return err
	}
	val = s.redactor.Bytes(val)
	s.mu.Lock()
	s.unwritten[e.ID] = e
	s.mu.Unlock()
	var again map[string]refusedRecord
	err = s.db.Batch(func(tx *bolt.Tx) error {
		s.mu.Lock()
		again = maps.Clone(s.refused)
		s.mu.Unlock()
		b := tx.Bucket(bucketExecutions)
		if err := b.Put(key, val); err != nil {
			return err
		}
		for _, r := range again {
			if err := b.Put(r.key, r.val); err != nil {
				return err
			}
		}
		// Keep the history bounded, checking every thousandth insert (a
		// count walks the bucket): drop the oldest beyond the cap.
		if seq, err := b.NextSequence(); err != nil || seq%1000 != 0 {
			return err
		}
		for extra := b.Stats().KeyN - MaxExecutions; extra > 0; extra-- {
			k, _ := b.Cursor().First()
			if k == nil {
				break
			}
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if len(s.refused) < maxRefused {
			s.refused[e.ID] = refusedRecord{key: key, val: val}
		} else {
			delete(s.unwritten, e.ID)
		}
		return err
	}
	delete(s.unwritten, e.ID)
	for id := range again {
		delete(s.refused, id)
		delete(s.unwritten, id)
	}
	return nil
}

// Executions lists up to limit executions, newest first, optionally only
// those of one language, started before the execution id before (paging).
// Those still waiting for their commit are listed too.
func (s *Store) Executions(limit int, filter ExecutionFilter, before string) ([]Execution, error) {
	// Taken before the database is read: one committed meanwhile is in
	// both (and listed once), none is in neither.
	var waiting []Execution
	s.mu.Lock()
	for id, e := range s.unwritten {
		if (before == "" || id < before) && filter.Match(e) {
			waiting = append(waiting, e)
		}
	}
	s.mu.Unlock()
	out := []Execution{}
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketExecutions).Cursor()
		var k, v []byte
		if before != "" {
			key, err := hex.DecodeString(before)
			if err != nil {
				return fmt.Errorf("before %q is not an execution id", before)
			}
			k, v = c.Seek(key)
			if k == nil {
				k, v = c.Last()
			}
			for k != nil && bytes.Compare(k, key) >= 0 {
				k, v = c.Prev()
			}
		} else {
			k, v = c.Last()
		}
		for ; k != nil && len(out) < limit; k, v = c.Prev() {
			var e executionEntry
			if err := json.Unmarshal(v, &e); err != nil {
				continue // a damaged record is skipped, not fatal
			}
			if x := e.Execution; filter.Match(x) {
				out = append(out, x)
			}
		}
		return nil
	})
	if err != nil || len(waiting) == 0 {
		return out, err
	}
	// IDs sort by time: newest first is the largest first.
	out = append(out, waiting...)
	slices.SortFunc(out, func(a, b Execution) int { return strings.Compare(b.ID, a.ID) })
	out = slices.CompactFunc(out, func(a, b Execution) bool { return a.ID == b.ID })
	return out[:min(len(out), limit)], nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
