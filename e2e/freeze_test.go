package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// paused says whether session id's container is frozen: paused by the
// engine (gVisor), or in its freezer cgroup (runc), which the engine
// reports running.
func paused(t *testing.T, id string) bool {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=io.sandboxd.session="+id, "--format", "{{.ID}} {{.State}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	cid, state, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if state != "running" {
		return state == "paused"
	}
	for line := range strings.Lines(hostProcFile(t, cid, "cgroup")) {
		if _, dir, ok := strings.Cut(strings.TrimSpace(line), ":freezer:"); ok {
			state, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", dir, "freezer.state"))
			return err == nil && strings.TrimSpace(string(state)) == "FROZEN"
		}
		if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			state, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", dir, "cgroup.freeze"))
			if err == nil && strings.TrimSpace(string(state)) == "1" {
				return true
			}
		}
	}
	return false
}

// stateOf is a session's state.
func stateOf(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	s, err := c.Session(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

// A frozen session keeps its processes, its context's variables and its
// server, uses no CPU and does not count against sessions.max; the next
// call thaws it. Idle and quiet, a session freezes by itself; busy in the
// background, it does not. Frozen sessions survive a SIGKILL of sandboxd,
// and their TTL and deletion remove their containers, under both
// runtimes.
func TestFreeze(t *testing.T) { ociRuntimes(t, testFreeze) }

func testFreeze(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime, Extra: "sessions {\n  max = 2\n  freeze_after = \"3s\"\n}"})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	if _, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "x = 41", Context: "main"}); err != nil {
		t.Fatal(err)
	}
	sh(t, c, id, "python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null & "+
		"(while :; do date +%s%N >> ticks; sleep 0.2; done) >/dev/null 2>&1 </dev/null & echo $! > ticker.pid")
	server := api.Port{Address: "127.0.0.1", Port: 8765}
	waitFor(t, "the server listening", func() bool {
		ports, err := c.Ports(ctx(t), id)
		return err == nil && len(ports) > 0 && ports[0] == server
	})

	ticks := func() int {
		n, err := strconv.Atoi(strings.TrimSpace(sh(t, c, id, "wc -l < ticks").Stdout))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := ticks()
	out, errOut, code := d.Ctl("", "session", "freeze", id)
	if code != 0 || out != id+" frozen\n" {
		t.Fatalf("sandboxctl session freeze: %d %q %s", code, out, errOut)
	}
	s, err := c.Session(ctx(t), id)
	if err != nil || s.State != api.SessionFrozen || s.FrozenAt == nil || !paused(t, id) {
		t.Fatalf("a frozen session: %+v %v (paused %v)", s, err, paused(t, id))
	}
	// Under runc, frozen in its cgroup: the engine, not asked, says running.
	if state, _ := exec.Command("docker", "ps", "--filter", "label=io.sandboxd.session="+id, "--format", "{{.State}}").Output(); runtime == "runc" && strings.TrimSpace(string(state)) != "running" {
		t.Errorf("the engine says %q of a session frozen in its cgroup", state)
	}
	if m, err := c.Metrics(ctx(t), id); err != nil || m.Now != nil {
		t.Fatalf("a frozen session's metrics: %+v %v", m, err)
	}
	if stateOf(t, c, id) != api.SessionFrozen {
		t.Fatal("asking for its metrics thawed it")
	}
	st, err := c.Stats(ctx(t))
	if err != nil || st.SessionsFrozen != 1 || st.Sessions != 0 {
		t.Fatalf("status: %+v %v", st, err)
	}
	// Frozen sessions do not count against sessions.max = 2.
	other := newSession(t, c, api.SessionRequest{Language: "python", TTL: api.Duration(20 * time.Second)})
	third := newSession(t, c, api.SessionRequest{Language: "python"})

	time.Sleep(time.Second) // the ticker stands still meanwhile
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "print(x + 1)", Context: "main"})
	if err != nil || res.Stdout != "42\n" || res.Context == nil || res.Context.Lost != "" || !res.Resumed {
		t.Fatalf("the context after a thaw (which the result tells): %+v %v", res, err)
	}
	if stateOf(t, c, id) != api.SessionActive {
		t.Fatal("the call did not thaw the session")
	}
	if paused(t, id) {
		t.Fatal("the container is still frozen after the call that thawed it")
	}
	// Over a second frozen, a loop that ticks every 0.2 s ticked at most
	// around the freeze and the thaw; then it goes on.
	if n := ticks() - before; n > 3 {
		t.Errorf("the background loop ticked %d times while frozen", n)
	}
	after := ticks()
	waitFor(t, "the background loop to tick again", func() bool { return ticks() > after })
	if res := sh(t, c, id, "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8765/').status)\""); res.Stdout != "200\n" {
		t.Errorf("the server after a thaw: %+v", res)
	}
	// The thaw made room under sessions.max = 2 by freezing the least
	// recently used of the others.
	if n := stateOf(t, c, other) + " " + stateOf(t, c, third); n != "frozen active" {
		t.Errorf("the others after the thaw: %s; want the older frozen", n)
	}
	if _, err := c.FreezeSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := d.Ctl("", "session", "resume", id); code != 0 || out != id+" active (thawed)\n" {
		t.Fatalf("sandboxctl session resume: %d %q %s", code, out, errOut)
	}

	// Idle and quiet, it freezes by itself; busy, it does not.
	sh(t, c, id, "kill $(cat ticker.pid)")
	busy := newSession(t, c, api.SessionRequest{Language: "python"})
	// About a third of a CPU: at work, well past the 10% of a quiet one,
	// and leaving the cores to the engine and the other tests.
	sh(t, c, busy, "(timeout 60 python3 -c '"+`
import time
while True:
    t = time.time()
    while time.time() - t < 0.03: pass
    time.sleep(0.07)`+"' >/dev/null 2>&1 &)")
	waitForWithin(t, "the quiet session to freeze by itself", 30*time.Second, func() bool {
		if m, err := c.Metrics(ctx(t), id); err == nil && len(m.Series) > 0 {
			t.Logf("CPU %.2f%%", m.Series[len(m.Series)-1].CPUPercent)
		}
		return stateOf(t, c, id) == api.SessionFrozen
	})
	if s := stateOf(t, c, busy); s != api.SessionActive {
		t.Errorf("a session busy in the background: %s; want it running", s)
	}
	if err := c.DeleteSession(ctx(t), busy); err != nil {
		t.Fatal(err)
	}

	// SIGKILL: the frozen session comes back frozen, then thaws whole.
	d.Kill()
	d.Restart()
	if s := stateOf(t, c, id); s != api.SessionFrozen || !paused(t, id) {
		t.Fatalf("after a SIGKILL: %s (paused %v)", s, paused(t, id))
	}
	res, err = c.Exec(ctx(t), id, api.ExecRequest{Code: "print(x + 2)", Context: "main"})
	if err != nil || res.Stdout != "43\n" {
		t.Fatalf("the context after a restart and a thaw: %+v %v", res, err)
	}

	// TTL (other's minute) and deletion take frozen sessions' containers.
	if _, err := c.FreezeSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	waitForWithin(t, "the frozen sessions' containers gone", 40*time.Second, func() bool {
		return len(testutil.Containers(t, "io.sandboxd.session="+id))+len(testutil.Containers(t, "io.sandboxd.session="+other)) == 0
	})
}

// A frozen session is thawed by what reaches it from outside, and works
// as before: its preview serves, its ports are listed, and what it reaches
// out to through the egress proxy answers, under both runtimes.
func TestFrozenSessionsThawWhole(t *testing.T) { ociRuntimes(t, testFrozenSessionsThawWhole) }

func testFrozenSessionsThawWhole(t *testing.T, runtime string) {
	o := startOutside(t)
	d := egressDaemon(t, runtime, o, `http { listen = "127.0.0.1:0" }`)
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	serveSite(t, c, id, 8765, "served")
	p, err := c.Preview(ctx(t), id, 8765, 0)
	if err != nil {
		t.Fatal(err)
	}
	link, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	// A browser resolves *.localhost to loopback: here, the listener.
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+link.Port())
	}
	jar, _ := cookiejar.New(nil) // the link's token becomes a cookie
	browser := &http.Client{Jar: jar, Transport: &http.Transport{DialContext: dial}, Timeout: 30 * time.Second}
	freeze := func() {
		t.Helper()
		// The call before may still be letting go of the session (a
		// freeze refuses one with an operation open: a conflict).
		var err error
		waitFor(t, "the session frozen", func() bool {
			_, err = c.FreezeSession(ctx(t), id)
			return apiCode(err) != api.CodeConflict
		})
		if err != nil || stateOf(t, c, id) != api.SessionFrozen {
			t.Fatalf("freeze: %v", err)
		}
	}

	freeze()
	resp, err := browser.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "served\n" || stateOf(t, c, id) != api.SessionActive {
		t.Fatalf("the preview of a frozen session: %d %q, now %s", resp.StatusCode, body, stateOf(t, c, id))
	}

	freeze()
	if ports, err := c.Ports(ctx(t), id); err != nil || !slices.Contains(ports, api.Port{Address: "127.0.0.1", Port: 8765}) {
		t.Fatalf("a frozen session's ports: %v %v", ports, err)
	}

	freeze()
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: fetch, Args: []string{"http://" + o.web + "/"}, Env: toOutside})
	if err != nil || !res.Resumed || !strings.Contains(res.Stdout, "-> 200 hello from the outside") {
		t.Fatalf("egress after a thaw: %+v %v", res, err)
	}
}

// Under memory pressure (memory_low above what the host has, here always)
// frozen sessions go to disk, the longest frozen first, and come back
// with their files.
func TestMemoryPressureHibernatesTheLongestFrozen(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Extra: "sessions {\n  memory_low = \"64TiB\"\n}"})
	c := d.Client()
	var ids []string
	for i := range 3 {
		id := newSession(t, c, api.SessionRequest{})
		sh(t, c, id, "echo "+strconv.Itoa(i)+" > mine")
		ids = append(ids, id)
	}
	for _, id := range ids {
		if _, err := c.FreezeSession(ctx(t), id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // frozen in order
	}
	at := map[string]time.Time{}
	waitForWithin(t, "the frozen sessions hibernated", time.Minute, func() bool {
		for _, id := range ids {
			if s, err := c.Session(ctx(t), id); err == nil && s.Hibernation != nil {
				at[id] = s.Hibernation.At
			}
		}
		return len(at) == len(ids)
	})
	if first, last := at[ids[0]], at[ids[2]]; first.After(last) {
		t.Errorf("the longest frozen hibernated at %s, after the last frozen at %s", first, last)
	}
	for i, id := range ids {
		if res := sh(t, c, id, "cat mine"); res.Stdout != strconv.Itoa(i)+"\n" {
			t.Errorf("session %d after its hibernation: %+v", i, res)
		}
	}
}

// Under memory pressure a pool does not grow ahead of a burst of sessions:
// it keeps min_idle, where without pressure it would keep as many idle
// containers as the burst asked for.
func TestMemoryPressureKeepsPoolsAtMinIdle(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Languages: `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}`, Extra: "sessions {\n  memory_low = \"64TiB\"\n}"})
	c := d.Client()
	waitFor(t, "the warm container", func() bool { p, err := c.Pools(ctx(t)); return err == nil && p["python"].Idle == 1 })
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { newSession(t, c, api.SessionRequest{}) })
	}
	wg.Wait()
	for range 6 { // the pool's checks come every second
		p, err := c.Pools(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if py := p["python"]; py.Target > 1 || py.Idle+py.Starting > 1 {
			t.Fatalf("under memory pressure, after 4 sessions at once: %+v; want min_idle (1)", py)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
