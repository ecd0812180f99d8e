package state

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sandboxd/sandboxd/internal/units"
)

// writeFixture regenerates testdata/schema1.db: only when the schema
// version changes, with a migration that reads the file of the version
// before (keep that one too).
var writeFixture = flag.Bool("write-fixture", false, "write testdata/schema1.db from fixture()")

const fixtureFile = "testdata/schema1.db"

// fixture is what testdata/schema1.db holds: one record of each kind with
// every field set, as sandboxd wrote them on 2026-11-24 (schema 1). A
// field added to the api types since is left unset here: the file has
// none of it.
func fixture() (Session, Execution, Project, Snapshot) {
	at := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	limits := Limits{Timeout: units.Duration(30 * time.Second), Memory: 512 << 20, CPUs: 1, Pids: 256, OutputLimit: 1 << 20}
	sess := Session{
		ID: "s-0123456789ab", Language: "python", State: SessionLost, Error: "its container is gone",
		Project: "p-1", CreatedAt: at, ExpiresAt: at.Add(time.Hour), LastUsedAt: at.Add(time.Minute),
		IdleTimeout: units.Duration(10 * time.Minute), Limits: limits, Network: Network{Allow: []string{"pypi.org"}},
		Env: map[string]string{"K": "v"}, ContainerID: "c0ffee", Executions: 3,
	}
	exec := Execution{
		ID: "0123456789abcdef01234567", Kind: "run", Language: "python", Session: sess.ID, StartedAt: at,
		Outcome: "nonzero", ExitCode: 3, Signal: "SIGKILL", TimedOut: true, OOMKilled: true, Truncated: true,
		StdoutBytes: 10, StderrBytes: 20, Limits: limits,
		Usage:   Usage{CPUUserMS: 1.5, CPUSysMS: 2.5, MaxRSSBytes: 4096},
		Timings: Timings{QueueMS: 0.5, RunMS: 9, TotalMS: 10},
		Error:   "an error", Decision: "denied",
		Findings: []Finding{{Policy: "patterns", Rule: "eval", Severity: "high", Message: "eval of input",
			File: "main.py", Line: 1, Column: 2, Snippet: "eval(input())"}},
		FindingsOmitted: 1,
		Egress:          []Egress{{Host: "pypi.org", Port: 443, Allowed: true, BytesSent: 1, BytesReceived: 2, Error: "reset"}},
		EgressOmitted:   2,
	}
	proj := Project{ID: "p-1", Name: "refdata", CreatedAt: at, Size: 42, Sessions: []string{sess.ID},
		Files: []ProjectFile{{Name: "a.csv", Size: 42, SHA256: "ab12", AddedAt: at}}}
	snap := Snapshot{ID: "n-1", Name: "before", Language: "python", Session: sess.ID, Size: 1024, SHA256: "cd34", Skipped: 1, CreatedAt: at}
	return sess, exec, proj, snap
}

// A state file written on 2026-11-24 reads back whole: a field renamed or
// retyped in the store's records fails here, and needs a migration.
func TestTodaysFileStillReads(t *testing.T) {
	sess, exec, proj, snap := fixture()
	if *writeFixture {
		writeFixtureFile(t, sess, exec, proj, snap)
	}
	dir := t.TempDir()
	copyFile(t, fixtureFile, filepath.Join(dir, FileName))
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions, corrupt, err := s.Sessions()
	if err != nil || len(corrupt) > 0 || len(sessions) != 1 || !reflect.DeepEqual(sessions[0], sess) {
		t.Errorf("sessions: %+v (corrupt %v, %v)\nwant %+v", sessions, corrupt, err, sess)
	}
	execs, err := s.Executions(10, ExecutionFilter{}, "")
	if err != nil || len(execs) != 1 || !reflect.DeepEqual(execs[0], exec) {
		t.Errorf("executions: %+v (%v)\nwant %+v", execs, err, exec)
	}
	projects, corrupt, err := s.Projects()
	if err != nil || len(corrupt) > 0 || len(projects) != 1 || !reflect.DeepEqual(projects[0], proj) {
		t.Errorf("projects: %+v (corrupt %v, %v)\nwant %+v", projects, corrupt, err, proj)
	}
	snapshots, corrupt, err := s.Snapshots()
	if err != nil || len(corrupt) > 0 || len(snapshots) != 1 || !reflect.DeepEqual(snapshots[0], snap) {
		t.Errorf("snapshots: %+v (corrupt %v, %v)\nwant %+v", snapshots, corrupt, err, snap)
	}
	if v, ok := s.Version("sha256:img"); !ok || v != "Python 3.11.2" {
		t.Errorf("version: %q %v", v, ok)
	}
	if s.Instance() != "fixture-instance" {
		t.Errorf("instance %q", s.Instance())
	}
}

func writeFixtureFile(t *testing.T, sess Session, exec Execution, proj Project, snap Snapshot) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.instance = "fixture-instance"
	err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyInstance, []byte(s.instance)) })
	for _, put := range []func() error{
		func() error { return s.PutSession(sess) },
		func() error { return s.RecordExecution(exec) },
		func() error { return s.PutProject(proj) },
		func() error { return s.PutSnapshot(snap) },
		func() error { return s.PutVersion("sha256:img", "Python 3.11.2") },
	} {
		if err == nil {
			err = put()
		}
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(fixtureFile), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(dir, FileName), fixtureFile)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
