package sessions

import (
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
)

// The longest frozen go first, and a session whose turn is taken (in use)
// is passed over.
func TestLongestFrozen(t *testing.T) {
	at := func(minutes int) *Session {
		frozen := time.Unix(0, 0).Add(time.Duration(minutes) * time.Minute)
		return newSession(nil, runtime.Limits{}, state.Session{State: state.SessionFrozen, FrozenAt: &frozen}, nil)
	}
	newest, oldest, middle, busy := at(3), at(1), at(2), at(0)
	<-busy.turn
	got := longestFrozen([]*Session{newest, busy, oldest, middle}, 2)
	if len(got) != 2 || got[0] != oldest || got[1] != middle {
		t.Fatalf("chose %v", got)
	}
	select {
	case <-newest.turn:
	default:
		t.Fatal("the one not chosen lost its turn")
	}
}
