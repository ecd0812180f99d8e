package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// The pid the supervisor keeps for a context's interpreter is the
// interpreter's. Under gVisor the shim's SCM_CREDENTIALS carried the id of
// whichever Go thread sent them (found by an outside review), so a cell's
// deadline killed nothing: the cell ran on and the session was lost.
func TestContextPIDIsTheInterpreters(t *testing.T) { ociRuntimes(t, testContextPIDIsTheInterpreters) }

func testContextPIDIsTheInterpreters(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime})
	c := d.Client()
	for i := 0; i < 6; i++ {
		id := newSession(t, c, api.SessionRequest{})
		r, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "import os\nprint(os.readlink('/proc/self'))", Context: "a"})
		if err != nil {
			t.Fatal(err)
		}
		real, _ := strconv.Atoi(strings.TrimSpace(r.Stdout))
		list, err := c.Contexts(ctx(t), id)
		if err != nil || len(list.Contexts) != 1 {
			t.Fatalf("contexts: %+v %v", list, err)
		}
		if list.Contexts[0].PID != real {
			t.Errorf("session %d: the supervisor holds pid %d for the interpreter, which is %d", i, list.Contexts[0].PID, real)
			// What follows from it: the deadline does not stop the cell.
			r, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "import time\ntime.sleep(600)", Context: "a", Timeout: api.Duration(2 * time.Second)})
			t.Errorf("a cell past its 2s deadline: %+v %v (want timed_out, the session kept)", r, err)
			return
		}
		_ = c.DeleteSession(context.Background(), id)
	}
}
