package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// workspaceScript makes a workspace with what a hibernation must keep
// exactly: nested and empty directories, modes, a link out, a name that is
// not UTF-8, a sub-second mtime; and a FIFO, which it leaves out.
const workspaceScript = `set -e
mkdir -p a/b empty
printf data > a/b/f
chmod 640 a/b/f
ln -s /etc/passwd out
printf odd > "$(printf 'n\377me')"
mkfifo fifo
touch -d @1000000000.25 a/b/f
chmod 555 a`

// listingOf is a session's workspace, recursively, by path.
func listingOf(t *testing.T, c *client.Client, id string) map[string]api.FileEntry {
	t.Helper()
	list, err := c.ListFiles(ctx(t), id, ".", true)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]api.FileEntry{}
	for _, e := range list.Entries {
		out[e.Path] = e
	}
	return out
}

// heldByContainerd is those of ids (short or full) that the engine's
// containerd still holds: a container dockerd removed but whose task it
// could not delete keeps its shim running for good.
func heldByContainerd(t *testing.T, ids []string) []string {
	t.Helper()
	out, err := exec.Command("ctr", "--address", "/var/run/docker/containerd/containerd.sock", "-n", "moby", "containers", "ls", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("listing the engine's containerd containers: %v %s", err, out)
	}
	var held []string
	for _, full := range strings.Fields(string(out)) {
		for _, id := range ids {
			if strings.HasPrefix(full, id) {
				held = append(held, id)
			}
		}
	}
	return held
}

// A session paused by hand loses its container (under runsc, keeps it
// stopped, checkpointed), survives a restart of sandboxd, and wakes on the
// next call with its workspace exactly as it was (the FIFO aside, unless
// its memory was kept) and its context's state kept under runsc (through a
// second hibernation too, and the engine keeps nothing of the container
// once it is removed), reported lost under runc; one left idle hibernates
// by itself.
func TestHibernation(t *testing.T) {
	for _, v := range []struct{ name, rt, extra string }{
		{"runc", "runc", ""},
		{"runsc", "runsc", ""},
		{"runsc files alone", "runsc", "sessions {\n  keep_memory = false\n}"},
	} {
		t.Run(v.name, func(t *testing.T) {
			rt, memory := v.rt, v.rt == "runsc" && v.extra == ""
			testutil.RequireRuntime(t, rt)
			d := testutil.StartDaemon(t, testutil.Options{Runtime: rt, Extra: v.extra})
			c := d.Client()
			id := newSession(t, c, api.SessionRequest{})
			sh(t, c, id, workspaceScript)
			if _, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "x = 41", Context: "main"}); err != nil {
				t.Fatal(err)
			}
			before := listingOf(t, c, id)

			out, errOut, code := d.Ctl("", "session", "pause", id)
			if code != 0 || !strings.Contains(out, "hibernated") {
				t.Fatalf("session pause: %d %s %s", code, out, errOut)
			}
			kept := testutil.Containers(t, "io.sandboxd.session="+id)
			if running, _ := exec.Command("docker", "ps", "-q", "--filter", "label=io.sandboxd.session="+id).Output(); len(running) != 0 || len(kept) != map[bool]int{false: 0, true: 1}[memory] {
				t.Fatalf("a hibernated session's containers: %v, running: %s", kept, running)
			}
			if out, _, _ := d.Ctl("", "session", "ls"); !strings.Contains(out, "hibernated") {
				t.Fatalf("session ls:\n%s", out)
			}
			s, err := c.Session(ctx(t), id)
			if err != nil || s.Hibernation == nil || s.Hibernation.Skipped != 1 || s.Hibernation.Memory != memory {
				t.Fatalf("the hibernated record: %+v %v", s.Hibernation, err)
			}
			if _, err := os.Stat(s.Hibernation.Path); err != nil {
				t.Fatal(err)
			}

			d.Stop()
			d.Restart()

			res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"cat", "a/b/f"}})
			if err != nil || !res.Resumed || res.Stdout != "data" {
				t.Fatalf("the call that woke it: %+v %v", res, err)
			}
			if _, err := os.Stat(s.Hibernation.Path); !os.IsNotExist(err) {
				t.Errorf("the archive outlived the resume: %v", err)
			}
			after := listingOf(t, c, id)
			if !s.Hibernation.Memory {
				delete(before, "fifo")
			}
			for p, e := range before {
				if !reflect.DeepEqual(after[p], e) {
					t.Errorf("%q: %+v before, %+v after", p, e, after[p])
				}
			}
			if len(after) != len(before) {
				t.Errorf("%d entries before, %d after: %v", len(before), len(after), after)
			}
			res, err = c.Exec(ctx(t), id, api.ExecRequest{Code: "print(x + 1)", Context: "main"})
			switch {
			case err != nil || res.Context == nil:
				t.Fatalf("the context after a hibernation: %+v %v", res, err)
			case s.Hibernation.Memory && (res.Stdout != "42\n" || res.Context.Lost != ""):
				t.Fatalf("the context after a hibernation with its memory: %q, lost %q", res.Stdout, res.Context.Lost)
			case !s.Hibernation.Memory && res.Context.Lost != api.ContextsLostByHibernation:
				t.Fatalf("the context after a hibernation without its memory: lost %q", res.Context.Lost)
			}

			if memory {
				// Hibernated again, the container restored from the first
				// checkpoint keeps its memory a second time.
				if _, err := c.PauseSession(ctx(t), id); err != nil {
					t.Fatal(err)
				}
				res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "print(x + 2)", Context: "main"})
				if err != nil || !res.Resumed || res.Stdout != "43\n" || res.Context == nil || res.Context.Lost != "" {
					t.Fatalf("the context after a second hibernation: %+v %v", res, err)
				}

				// Its checkpointed container gone, the session resumes from
				// its archive, without its memory; the engine keeps nothing
				// of the removed container.
				if _, err := c.PauseSession(ctx(t), id); err != nil {
					t.Fatal(err)
				}
				removed := testutil.Containers(t, "io.sandboxd.session="+id)
				for _, cid := range removed {
					if out, err := exec.Command("docker", "rm", "-f", cid).CombinedOutput(); err != nil {
						t.Fatalf("docker rm: %v %s", err, out)
					}
				}
				if held := heldByContainerd(t, removed); len(held) != 0 {
					t.Errorf("containerd still holds the removed containers %v", held)
				}
				res, err = c.Exec(ctx(t), id, api.ExecRequest{Code: "print(open('a/b/f').read())", Context: "main"})
				if err != nil || !res.Resumed || res.Stdout != "data\n" || res.Context == nil || res.Context.Lost != api.ContextsLostByHibernation {
					t.Fatalf("resuming without the checkpointed container: %+v %v", res, err)
				}
			}

			// Idle: it hibernates by itself, and wakes for the next call.
			idle := newSession(t, c, api.SessionRequest{IdleTimeout: api.Duration(2 * time.Second)})
			sh(t, c, idle, "echo kept > k")
			waitFor(t, "the idle session to hibernate", func() bool {
				s, err := c.Session(ctx(t), idle)
				return err == nil && s.State == api.SessionHibernated
			})
			if out, _, code := d.Ctl("", "exec", idle, "--", "cat", "k"); code != 0 || out != "kept\n" {
				t.Fatalf("exec after idling: %d %q", code, out)
			}
		})
	}
}

// sandboxd SIGKILLed while it archives a workspace: at the next start the
// session is whole, active or hibernated, and its files are all there.
func TestHibernationSurvivesKill(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Defaults: "timeout = \"60s\"\ndisk = \"512MiB\"\nmemory = \"1GiB\""})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	sum := sh(t, c, id, "head -c 200M /dev/urandom > big && sha256sum big").Stdout
	go func() { _, _ = c.PauseSession(ctx(t), id) }()
	dir := filepath.Join(d.StateDir, "sessions")
	waitFor(t, "the archive to be under way", func() bool {
		ents, _ := os.ReadDir(dir)
		return len(ents) > 0
	})
	d.Kill()
	d.Restart()
	s, err := c.Session(ctx(t), id)
	if err != nil || s.State == api.SessionLost {
		t.Fatalf("after a kill mid-hibernate: %+v %v", s, err)
	}
	t.Logf("the session came back %s", s.State)
	if got := sh(t, c, id, "sha256sum big").Stdout; got != sum {
		t.Fatalf("the workspace after a kill mid-hibernate: %q, was %q", got, sum)
	}
	// What the killed daemon left that the session does not use goes in
	// the background.
	waitFor(t, "the session's one container", func() bool {
		return len(testutil.Containers(t, "io.sandboxd.session="+id)) == 1
	})
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in %s: %v", dir, ents)
	}
}

// Workspaces built to defeat an archive (a 1 TiB file of more data runs
// than an archive keeps apart, so it would go in whole; too many
// entries): each pause is refused whole (too_large) and the session
// stays active with its files; a damaged
// archive makes the session lost, naming the file; many sessions called at
// once, more than sessions.max, are all served.
func TestHibernationHostile(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Extra: "sessions {\n  max = 3\n}", Defaults: "timeout = \"30s\""})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	for name, script := range map[string]string{
		"a 1 TiB file of 5,000 data runs": "python3 -c 'f = open(\"sparse\", \"wb\")\nfor i in range(5000): f.seek(i << 27); f.write(b\"x\")\nf.truncate(1 << 40)'",
		"100,001 files":                   "mkdir m && cd m && python3 -c 'import os\nfor i in range(100001): os.close(os.open(str(i), os.O_CREAT))'",
	} {
		sh(t, c, id, script)
		if _, err := c.PauseSession(ctx(t), id); apiCode(err) != api.CodeTooLarge {
			t.Errorf("%s: pause: %v", name, err)
		}
		if res := sh(t, c, id, "rm -rf sparse m && echo still"); res.Stdout != "still\n" {
			t.Fatalf("%s: after a refused pause: %+v", name, res)
		}
	}

	damaged := newSession(t, c, api.SessionRequest{})
	s, err := c.PauseSession(ctx(t), damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Hibernation.Path, []byte("not the archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx(t), damaged, api.ExecRequest{Argv: []string{"true"}}); apiCode(err) != api.CodeSessionLost || !strings.Contains(err.Error(), s.Hibernation.Path) {
		t.Fatalf("resuming from a damaged archive: %v", err)
	}
	if err := c.DeleteSession(ctx(t), damaged); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Hibernation.Path); !os.IsNotExist(err) {
		t.Errorf("a deleted session's archive stays: %v", err)
	}

	// The storm: 8 hibernated sessions called at once, 3 may be active.
	var ids []string
	for range 8 {
		sid := newSession(t, c, api.SessionRequest{})
		sh(t, c, sid, "echo "+sid+" > marker")
		if _, err := c.PauseSession(ctx(t), sid); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sid)
	}
	errs := make(chan error, len(ids))
	for _, sid := range ids {
		go func() {
			res, err := c.Exec(ctx(t), sid, api.ExecRequest{Argv: []string{"cat", "marker"}})
			if err == nil && res.Stdout != sid+"\n" {
				err = fmt.Errorf("read %q", res.Stdout)
			}
			if err != nil {
				err = fmt.Errorf("%s: %v", sid, err)
			}
			errs <- err
		}()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	st, err := c.Stats(ctx(t))
	if err != nil || st.Sessions > 3 || st.SessionsLost != 0 {
		t.Errorf("after the storm: %+v %v", st, err)
	}
}

// A hostile workspace pauses as what it holds: a 1 GiB file of holes in a
// 256 MiB workspace (and 10,000 names of one file) hibernates in a small
// archive and resumes as it was, sparse and linked, its files-alone
// archive holding the data, not the holes. Under runc and runsc (files
// alone: what is tested is the archive).
func TestHibernationKeepsHolesAndLinks(t *testing.T) {
	ociRuntimes(t, testHibernationKeepsHolesAndLinks)
}

func testHibernationKeepsHolesAndLinks(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime, Extra: "sessions {\n  keep_memory = false\n}"})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	sh(t, c, id, `truncate -s 1G sparse && printf end | dd of=sparse bs=1 seek=1073741821 conv=notrunc 2>/dev/null &&
echo shared > one && mkdir links && python3 -c "import os; [os.link('one', 'links/%d' % i) for i in range(1, 10001)]"`)
	if _, err := c.PauseSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	s, err := c.Session(ctx(t), id)
	if err != nil || s.Hibernation == nil || s.Hibernation.Bytes > 32<<20 {
		t.Fatalf("the archive of a 1 GiB sparse file and 10,000 links: %+v %v", s.Hibernation, err)
	}
	res := sh(t, c, id, `python3 -c "
import os
st = os.stat('sparse')
f = open('sparse', 'rb')
f.seek(-3, 2)
print(st.st_size, st.st_blocks, f.read().decode(), os.stat('one').st_nlink, open('links/9999').read())"`)
	f := strings.Fields(res.Stdout)
	// gVisor counts every byte as allocated: the archive's size says the
	// holes were kept there.
	blocksKept := runtime == "runsc" || len(f) > 1 && len(f[1]) <= 5
	if len(f) != 5 || f[0] != "1073741824" || !blocksKept || f[2] != "end" || f[3] != "10001" || f[4] != "shared" {
		t.Fatalf("after the resume (archive %d bytes): %q %s", s.Hibernation.Bytes, res.Stdout, res.Stderr)
	}
}

// A session paused while a program of its own grows a file and fills
// another's holes pauses and resumes: each file comes back as long as it
// was when the archive was sized, with bytes the program wrote (never
// shifted, never another file's), and the session answers.
func TestHibernationOfFilesThatChange(t *testing.T) {
	ociRuntimes(t, testHibernationOfFilesThatChange)
}

func testHibernationOfFilesThatChange(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime, Extra: "sessions {\n  keep_memory = false\n}"})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	// Bounded: 1,500 writes of 64 KiB (about 94 MiB) or 60 s, whichever
	// comes first; the pause ends it sooner.
	sh(t, c, id, `truncate -s 8M holes && setsid python3 -c "
import os, time
g = os.open('grow', os.O_WRONLY | os.O_CREAT | os.O_APPEND)
h = os.open('holes', os.O_WRONLY)
end = time.time() + 60
for i in range(1500):
    os.write(g, b'x' * 65536)
    os.pwrite(h, b'y' * 4096, (i * 7919 % 2048) * 4096)
    if time.time() > end:
        break
" >/dev/null 2>&1 </dev/null &
for i in $(seq 200); do [ -s grow ] && break; sleep 0.05; done`)
	if _, err := c.PauseSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	res := sh(t, c, id, `python3 -c "
g = open('grow', 'rb').read()
h = open('holes', 'rb').read()
print(len(g), set(g) <= {ord('x')}, len(h), set(h) <= {0, ord('y')})"`)
	f := strings.Fields(res.Stdout)
	if len(f) != 4 || f[0] == "0" || f[1] != "True" || f[2] != "8388608" || f[3] != "True" {
		t.Fatalf("after the resume: %q %s", res.Stdout, res.Stderr)
	}
}
