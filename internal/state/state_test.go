package state

import (
	"errors"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
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
		if err := s.RecordExecution(api.Execution{ID: id, Language: lang, ExitCode: i}); err != nil {
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
	all, _ := s.Executions(10, "", "")
	if len(all) != 5 || all[0].ID != ids[4] || all[4].ID != ids[0] {
		t.Fatalf("order: %+v", all)
	}
	node, _ := s.Executions(10, "node", "")
	if len(node) != 2 || node[0].ExitCode != 3 {
		t.Fatalf("filter: %+v", node)
	}
	page, _ := s.Executions(2, "", ids[3])
	if len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[1] {
		t.Fatalf("paging: %+v", page)
	}
	if err := s.RecordExecution(api.Execution{ID: "not-hex"}); err == nil {
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
