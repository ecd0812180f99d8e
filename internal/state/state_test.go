package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

func TestExecutionsNewestFirstAndSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	instance := s.Instance()
	base := time.Now()
	var ids []string
	for i := 0; i < 5; i++ {
		id := NewID(base.Add(time.Duration(i) * time.Millisecond))
		ids = append(ids, id)
		lang := "python"
		if i%2 == 1 {
			lang = "node"
		}
		if err := s.RecordExecution(Execution{ID: id, Language: lang, ExitCode: i}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Instance() != instance {
		t.Fatalf("instance changed across reopen: %s -> %s", instance, s.Instance())
	}
	all, _ := s.Executions(10, ExecutionFilter{}, "")
	if len(all) != 5 || all[0].ID != ids[4] || all[4].ID != ids[0] {
		t.Fatalf("order: %+v", all)
	}
	node, _ := s.Executions(10, ExecutionFilter{Language: "node"}, "")
	if len(node) != 2 || node[0].ExitCode != 3 {
		t.Fatalf("filter: %+v", node)
	}
	page, _ := s.Executions(2, ExecutionFilter{}, ids[3])
	if len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[1] {
		t.Fatalf("paging: %+v", page)
	}
	if err := s.RecordExecution(Execution{ID: "not-hex"}); err == nil {
		t.Fatal("a bad id was accepted")
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(dir)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("want ErrLocked, got %v", err)
	}
}

// A denied request with hundreds of long findings is stored in a few KiB.
func TestHistoryRecordsAreBounded(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := strings.Repeat("é", 4000)
	e := Execution{ID: NewID(time.Now()), Error: long}
	for i := 0; i < 200; i++ {
		e.Findings = append(e.Findings, Finding{Rule: "r", Message: long, Snippet: long})
	}
	if err := s.RecordExecution(e); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Executions(1, ExecutionFilter{}, "")
	size, _ := json.Marshal(got[0])
	if len(got[0].Findings) != maxRecordFindings || got[0].FindingsOmitted != 190 || len(size) > 8<<10 {
		t.Fatalf("%d findings, %d omitted, %d bytes", len(got[0].Findings), got[0].FindingsOmitted, len(size))
	}
	if m := got[0].Findings[0].Message; !utf8.ValidString(m) || !strings.HasSuffix(m, "…") {
		t.Fatalf("a cut message: %q", m)
	}
}

// One undecodable record is skipped and reported, never fatal; a state file
// lost and made again keeps the instance id the containers carry.
func TestCorruptRecordsAreSkippedAndTheInstanceSurvivesTheFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	instance := s.Instance()
	if err := s.PutSession(Session{ID: "good"}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSessions).Put([]byte("bad"), []byte("{torn")) }); err != nil {
		t.Fatal(err)
	}
	got, corrupt, err := s.Sessions()
	if err != nil || len(got) != 1 || got[0].ID != "good" || len(corrupt) != 1 || corrupt[0].Key != "bad" {
		t.Fatalf("sessions %+v corrupt %+v err %v", got, corrupt, err)
	}
	s.Close()
	if err := os.Remove(filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Instance() != instance {
		t.Fatalf("instance %s after the state file was lost, was %s", s.Instance(), instance)
	}
}

// A state file left mostly free by dropped records is compacted at open,
// with every record kept.
func TestSparseStateFileIsCompacted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, 64<<10)
	err = db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists(bucketExecutions)
		for i := 0; i < 200; i++ { // ~13 MiB
			if err := b.Put([]byte(fmt.Sprint(i)), blob); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketExecutions)
			for i := 1; i < 200; i++ { // the history drops all but one
				if err := b.Delete([]byte(fmt.Sprint(i))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	if db, err = compactIfSparse(db, path, 1<<20); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	after, _ := os.Stat(path)
	if after.Size()*4 > before.Size() {
		t.Fatalf("%d bytes before, %d after", before.Size(), after.Size())
	}
	_ = db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketExecutions).Get([]byte("0")); len(v) != len(blob) {
			t.Fatalf("the kept record: %d bytes", len(v))
		}
		return nil
	})
}

// A record waits for others to share its commit; the history lists it
// meanwhile, once, and after the commit, once.
func TestExecutionsListTheUncommitted(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := Execution{ID: NewID(time.Now().Add(-time.Minute)), Language: "python"}
	if err := s.RecordExecution(old); err != nil {
		t.Fatal(err)
	}
	e := Execution{ID: NewID(time.Now()), Language: "python"}
	done := make(chan error)
	go func() { done <- s.RecordExecution(e) }()
	for {
		s.mu.Lock()
		_, waiting := s.unwritten[e.ID]
		s.mu.Unlock()
		if waiting {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ids := func(before string) string {
		list, err := s.Executions(10, ExecutionFilter{Language: "python"}, before)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range list {
			out = append(out, x.ID)
		}
		return strings.Join(out, ",")
	}
	want := e.ID + "," + old.ID
	if got := ids(""); got != want {
		t.Errorf("before the commit: %s, want %s", got, want)
	}
	if got := ids(e.ID); got != old.ID {
		t.Errorf("a page before it: %s", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := ids(""); got != want {
		t.Errorf("after the commit: %s, want %s", got, want)
	}
}

// A state dir other users may enter is refused, with what to do.
func TestOpenRefusesAnOpenStateDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Private(dir); err == nil || !strings.Contains(err.Error(), "chmod 700 "+dir) {
		t.Fatalf("an open state dir: %v", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Private(dir); err != nil {
		t.Fatal(err)
	}
	if err := Private(filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
}
