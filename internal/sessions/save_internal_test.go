package sessions

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
)

// A session deleted while its record is being written stays deleted: the
// write lands before the deletion or not at all, never after it, where a
// restart would bring the session back.
func TestSaveRacingDelete(t *testing.T) {
	store, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m := &Sessions{dir: t.TempDir(), store: store, live: map[string]*Session{}, lost: map[string]state.Session{}, log: hclog.NewNullLogger()}
	sessions := map[string]*Session{}
	for i := range 300 {
		id := fmt.Sprintf("s%03d", i)
		rec := state.Session{ID: id, State: state.SessionActive}
		if i%3 == 0 {
			rec.State = state.SessionLost // deleting a lost one
		}
		ss := newSession(nil, runtime.Limits{}, rec, nil)
		if rec.State == state.SessionLost {
			m.lost[id] = rec
		} else {
			m.live[id] = ss
		}
		sessions[id] = ss
		if _, err := m.save(ss); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for id, ss := range sessions {
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = m.save(ss) }()
		go func() { defer wg.Done(); _ = m.Delete(id) }()
	}
	wg.Wait()
	stored, _, err := store.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 0 {
		t.Fatalf("%d of %d deleted sessions are back in the store, among them %s", len(stored), len(sessions), stored[0].ID)
	}
}
