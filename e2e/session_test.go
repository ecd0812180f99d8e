package e2e

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func newSession(t *testing.T, c *client.Client, req api.SessionRequest) string {
	t.Helper()
	if req.Language == "" {
		req.Language = "python"
	}
	s, err := c.CreateSession(ctx(t), req)
	if err != nil {
		t.Fatalf("creating a session: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(context.Background(), s.ID) })
	return s.ID
}

func sh(t *testing.T, c *client.Client, id, script string) *api.RunResult {
	t.Helper()
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return res
}

func apiCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return fmt.Sprint(err)
}

// processes counts the processes in a session whose command line holds
// pattern (the counting process itself aside).
// (The session's warm runtime, waiting for the next program, is not
// counted: its environment names its hook.)
func processes(t *testing.T, c *client.Client, id, pattern string) string {
	t.Helper()
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"python3", "-c", `import os, sys
n = 0
for p in os.listdir('/proc'):
    if p.isdigit() and int(p) not in (1, os.getpid()):
        try: cmd, env = open('/proc/%s/cmdline' % p, 'rb').read(), open('/proc/%s/environ' % p, 'rb').read()
        except OSError: continue
        n += sys.argv[1].encode() in cmd and b"/tmp/.sandboxd/warm" not in env
print(n)`, pattern}})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(res.Stdout)
}

func readAll(t *testing.T, c *client.Client, id, p string) (string, string, error) {
	t.Helper()
	body, ct, err := c.GetFile(ctx(t), id, p)
	if err != nil {
		return "", "", err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return string(b), ct, err
}

// TestSessions covers sessions, their files and sandboxctl's session
// commands on one daemon.
func TestSessions(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Extra: `
sessions {
  max = 12
}`})
	c := d.Client()

	t.Run("sandboxctl session, exec and cp", func(t *testing.T) {
		out, errOut, code := d.Ctl("", "session", "create", "--lang", "python", "--ttl", "10m")
		id := strings.TrimSpace(out)
		if code != 0 || strings.Count(out, "\n") != 1 || id == "" {
			t.Fatalf("create: code %d, stdout %q, stderr %q", code, out, errOut)
		}
		defer d.Ctl("", "session", "rm", id)
		if got := testutil.Containers(t, "io.sandboxd.session="+id); len(got) != 1 {
			t.Fatalf("containers labelled with the session: %v", got)
		}
		local := writeFile(t, "in.txt", "from the host\n")
		if _, e, code := d.Ctl("", "cp", local, id+":inputs/in.txt"); code != 0 {
			t.Fatalf("cp up: %d %s", code, e)
		}
		out, errOut, code = d.Ctl("", "exec", id, "--", "sh", "-c", "cat inputs/in.txt; echo oops >&2; mkdir -p outputs/sub; echo r > outputs/sub/r.txt; exit 3")
		if code != 3 || out != "from the host\n" || errOut != "oops\n" {
			t.Fatalf("exec: code %d, stdout %q, stderr %q", code, out, errOut)
		}
		out, _, _ = d.Ctl("", "exec", id, "--", "python3", "-c", "print(open('inputs/in.txt').read().upper(), end='')")
		if out != "FROM THE HOST\n" {
			t.Fatalf("files do not persist across execs: %q", out)
		}
		dst := filepath.Join(t.TempDir(), "results")
		if _, e, code := d.Ctl("", "cp", id+":outputs", dst); code != 0 {
			t.Fatalf("cp down: %d %s", code, e)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "sub", "r.txt")); err != nil || string(b) != "r\n" {
			t.Fatalf("a directory comes down as a directory: %q %v", b, err)
		}
		out, _, code = d.Ctl("", "session", "ls")
		if code != 0 || !strings.Contains(out, id) {
			t.Fatalf("session ls: %q", out)
		}
		if _, _, code := d.Ctl("", "session", "rm", id); code != 0 {
			t.Fatal("session rm failed")
		}
		if got := testutil.Containers(t, "io.sandboxd.session="+id); len(got) != 0 {
			t.Fatalf("the container outlived its session: %v", got)
		}
		_, errOut, code = d.Ctl("", "exec", id, "--", "true")
		if code != 125 || !strings.Contains(errOut, "no session") {
			t.Fatalf("exec in a removed session: code %d, %q", code, errOut)
		}
	})

	t.Run("exec with code, cwd, env, stdin and streaming", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{Env: map[string]string{"GREETING": "hi"}})
		sh(t, c, id, "mkdir -p work && echo data > work/f")
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "import os, sys\nprint(os.environ['GREETING'], os.environ['X'], os.getcwd(), sys.stdin.read(), open('f').read().strip())",
			Cwd: "work", Env: map[string]string{"X": "y"}, Stdin: "in"})
		if err != nil || res.Stdout != "hi y /workspace/work in data\n" || res.Session != id {
			t.Fatalf("%v %+v", err, res)
		}
		var lines []string
		res, err = c.ExecStream(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.3; done"}},
			func(ev api.Event) { lines = append(lines, ev.Data) })
		if err != nil || len(lines) != 3 || res.Stdout != "1\n2\n3\n" {
			t.Fatalf("stream: %v %q %+v", err, lines, res)
		}
	})

	t.Run("listing reports types, sizes and modes without following links", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		// A directory's size is what stat says (tmpfs: 40 when empty).
		dirSize := strings.TrimSpace(sh(t, c, id, "printf 12345 > outputs/five; chmod 600 outputs/five; ln -s /etc/shadow outputs/leak; ln -s / outputs/d; mkfifo outputs/fifo; mkdir outputs/dir; stat -c %s outputs/dir").Stdout)
		l, err := c.ListFiles(ctx(t), id, "outputs", false)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]api.FileEntry{}
		for _, e := range l.Entries {
			got[e.Path] = e
		}
		want := map[string]string{"outputs/five": "file 5 0600 ", "outputs/leak": "symlink 0 0777 /etc/shadow",
			"outputs/d": "symlink 0 0777 /", "outputs/fifo": "fifo 0 0644 ", "outputs/dir": "dir " + dirSize + " 0755 "}
		for p, w := range want {
			e := got[p]
			if s := fmt.Sprintf("%s %d %s %s", e.Type, e.Size, e.Mode, e.Target); s != w {
				t.Errorf("%s: %q, want %q", p, s, w)
			}
			if e.ModTime.IsZero() {
				t.Errorf("%s: no modification time", p)
			}
		}
	})

	t.Run("planted links, FIFOs and sparse files are refused, not read", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		sh(t, c, id, "echo ok > outputs/ok; ln -s /etc/shadow outputs/leak; ln -s / outputs/d; ln -s ../.. outputs/up; mkfifo outputs/fifo; truncate -s 1T outputs/sparse")
		for p, code := range map[string]string{
			"outputs/leak": api.CodeConflict, "outputs/d": api.CodeConflict, "outputs/d/etc/passwd": api.CodeInvalidRequest,
			"outputs/up/etc/passwd": api.CodeInvalidRequest, "outputs/fifo": api.CodeConflict, "outputs/sparse": api.CodeTooLarge,
		} {
			start := time.Now()
			data, _, err := readAll(t, c, id, p)
			if apiCode(err) != code || data != "" {
				t.Errorf("%s: %q %v, want %s", p, data, err, code)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("%s took %s", p, time.Since(start))
			}
		}
		// The directory with a 1 TiB file is refused whole...
		if _, _, err := readAll(t, c, id, "outputs"); apiCode(err) != api.CodeTooLarge {
			t.Fatalf("archive with a sparse 1 TiB file: %v", err)
		}
		// ...and without it, links come as links and the FIFO is left out.
		sh(t, c, id, "rm outputs/sparse")
		data, ct, err := readAll(t, c, id, "outputs")
		if err != nil || ct != api.ContentTypeTar {
			t.Fatalf("%v %s", err, ct)
		}
		tr := tar.NewReader(strings.NewReader(data))
		entries := map[string]string{}
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			body, _ := io.ReadAll(tr)
			entries[h.Name] = fmt.Sprintf("%c %s %s", h.Typeflag, h.Linkname, body)
		}
		want := map[string]string{"outputs/": "5  ", "outputs/ok": "0  ok\n", "outputs/leak": "2 /etc/shadow ", "outputs/d": "2 / ", "outputs/up": "2 ../.. "}
		if fmt.Sprint(entries) != fmt.Sprint(want) {
			t.Fatalf("archive entries %v, want %v", entries, want)
		}
		// The daemon answers the next request at once.
		if res := sh(t, c, id, "echo still here"); res.Stdout != "still here\n" {
			t.Fatal(res.Stdout)
		}
	})

	t.Run("a link swapped in during downloads never leads out", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		// A background swapper flips outputs/x between a file and links out
		// of the workspace as fast as it can, for the whole test.
		sh(t, c, id, `cat > swap.py <<'EOF'
import os
os.chdir('outputs')
while True:
    for target in ('/etc/passwd', '/', '../../etc/passwd'):
        with open('x.tmp', 'w') as f: f.write('safe')
        os.rename('x.tmp', 'x')
        try: os.remove('l')
        except OSError: pass
        os.symlink(target, 'l')
        os.rename('l', 'x')
EOF
setsid python3 swap.py >/dev/null 2>&1 < /dev/null &`)
		safe, refused := 0, 0
		for i := 0; i < 300; i++ {
			data, _, err := readAll(t, c, id, "outputs/x")
			switch {
			case err == nil && data == "safe":
				safe++
			case err != nil && strings.Contains(data+err.Error(), "root:"):
				t.Fatalf("leaked: %v", err)
			case err != nil:
				refused++
			default:
				t.Fatalf("download %d returned %q", i, data)
			}
			if a, _, err := readAll(t, c, id, "outputs"); err == nil && strings.Contains(a, "root:x:0:0") {
				t.Fatal("an archive carried /etc/passwd")
			}
		}
		t.Logf("300 downloads during the swap: %d the file, %d refused, none leaked", safe, refused)
		if processes(t, c, id, "swap.py") != "1" {
			t.Fatal("the swapper stopped: the race was not exercised")
		}
	})

	t.Run("path rules", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		for _, p := range []string{"project_files/x", "", "."} {
			if _, err := c.PutFile(ctx(t), id, p, strings.NewReader("x"), 0); apiCode(err) != api.CodeInvalidRequest {
				t.Errorf("upload to %q: %v", p, err)
			}
		}
		for _, body := range []string{`{"argv":["true"],"cwd":"../.."}`, `{"code":"1","files":[{"path":"../x.py","content":"1"}]}`,
			`{"argv":["true"],"cwd":"/etc"}`} {
			if status, out := rawPost(t, d.Socket, "/v1/sessions/"+id+"/exec", body, ""); status != 400 || !strings.Contains(out, "workspace") {
				t.Errorf("%s: %d %s", body, status, out)
			}
		}
		// The client cleans /etc/passwd to etc/passwd: relative to the workspace.
		if _, err := c.PutFile(ctx(t), id, "/etc/passwd", strings.NewReader("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		if res := sh(t, c, id, "cat etc/passwd; stat -c %a etc/passwd; head -c 5 /etc/passwd"); res.Stdout != "mine600\nroot:" {
			t.Fatalf("%q", res.Stdout)
		}
		status, body := rawPost(t, d.Socket, "/v1/sessions/"+id+"/exec", `{"argv":["true"],"code":"1"}`, "")
		if status != 400 || !strings.Contains(body, "not both") {
			t.Fatalf("%d %s", status, body)
		}
		if _, _, err := readAll(t, c, id, "nothing/here"); apiCode(err) != api.CodeNotFound {
			t.Fatalf("missing file: %v", err)
		}
		if err := c.DeleteFile(ctx(t), id, "etc"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readAll(t, c, id, "etc/passwd"); apiCode(err) != api.CodeNotFound {
			t.Fatalf("deleted file: %v", err)
		}
	})

	t.Run("binary files round trip", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		blob := make([]byte, 3<<20)
		for i := range blob {
			blob[i] = byte(i * 7)
		}
		if _, err := c.PutFile(ctx(t), id, "bin/blob", strings.NewReader(string(blob)), 0); err != nil {
			t.Fatal(err)
		}
		res := sh(t, c, id, "sha256sum bin/blob | cut -c1-16; cp bin/blob outputs/copy")
		data, _, err := readAll(t, c, id, "outputs/copy")
		if err != nil || data != string(blob) {
			t.Fatalf("round trip: %v, %d bytes back (in-sandbox sum %s)", err, len(data), res.Stdout)
		}
	})

	t.Run("a full workspace is ENOSPC inside", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		res := sh(t, c, id, "dd if=/dev/zero of=fill bs=1M count=400 2>&1 | grep -o 'No space left on device'; df -k /workspace | tail -1")
		if res.OOMKilled || !strings.Contains(res.Stdout, "No space left on device") || !strings.Contains(res.Stdout, "100%") {
			t.Fatalf("%+v", res)
		}
		if _, err := c.PutFile(ctx(t), id, "more", strings.NewReader(strings.Repeat("x", 1<<20)), 0); apiCode(err) != api.CodeNoSpace {
			t.Fatalf("upload into a full workspace: %v", err)
		}
		sh(t, c, id, "rm fill")
		if res := sh(t, c, id, "echo fine > f && cat f"); res.Stdout != "fine\n" {
			t.Fatal(res.Stdout)
		}
	})

	t.Run("a deadline ends the exec and what it started, not the session's servers", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		sh(t, c, id, "setsid sleep 1001 >/dev/null 2>&1 &") // a server an earlier exec left
		start := time.Now()
		// A child in a session of its own and a grandchild in a group of
		// its own, both still in the exec's tree at its deadline.
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Timeout: api.Duration(time.Second),
			Code: "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.setpgid(0, 0)\n        os.execlp('sleep', 'sleep', '1002')\n    os.execlp('sleep', 'sleep', '1003')\ntime.sleep(1000)\n"})
		if err != nil || !res.TimedOut || time.Since(start) > 3*time.Second {
			t.Fatalf("%v %+v after %s", err, res, time.Since(start))
		}
		for pattern, want := range map[string]string{"1001": "1", "1002": "0", "1003": "0"} {
			if n := processes(t, c, id, pattern); n != want {
				t.Errorf("%s: %s running, want %s", pattern, n, want)
			}
		}
	})

	t.Run("a fork bomb that leaves its tree ends at the deadline; a reset clears what it left", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		start := time.Now()
		// Each child double-forks out of the exec's tree and forks on.
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Timeout: api.Duration(2 * time.Second),
			Code: "import os\nwhile True:\n    try:\n        if os.fork() == 0:\n            os.setsid()\n            if os.fork() != 0:\n                os._exit(0)\n    except OSError:\n        pass\n"})
		if err != nil || !res.TimedOut || time.Since(start) > 10*time.Second {
			t.Fatalf("%v %+v after %s", err, res, time.Since(start))
		}
		if _, err := c.ResetSession(ctx(t), id); err != nil {
			t.Fatalf("reset after a fork bomb: %v", err)
		}
		if res := sh(t, c, id, "echo fine"); res.Stdout != "fine\n" {
			t.Fatalf("after the reset: %+v", res)
		}
	})

	t.Run("background processes outlive their exec", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		sh(t, c, id, "setsid sh -c 'sleep 0.5; echo done > late' >/dev/null 2>&1 &")
		waitFor(t, "the background process to write after its exec ended", func() bool {
			return sh(t, c, id, "cat late 2>/dev/null").Stdout == "done\n"
		})
	})

	t.Run("reset empties the workspace and ends processes", func(t *testing.T) {
		id := newSession(t, c, api.SessionRequest{})
		sh(t, c, id, "echo x > a; echo y > outputs/b; echo z > /tmp/c; setsid sleep 1000 >/dev/null 2>&1 &")
		if _, err := c.ResetSession(ctx(t), id); err != nil {
			t.Fatal(err)
		}
		res := sh(t, c, id, "ls -A /workspace /workspace/outputs /tmp")
		if res.Stdout != "/tmp:\n.sandboxd\n\n/workspace:\noutputs\n\n/workspace/outputs:\n" {
			t.Fatalf("after reset: %q", res.Stdout)
		}
		if n := processes(t, c, id, "sleep"); n != "0" {
			t.Fatalf("%s sleeps survived the reset", n)
		}
	})

	t.Run("8 sessions in parallel keep to themselves", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				s, err := c.CreateSession(context.Background(), api.SessionRequest{Language: []string{"python", "node"}[i%2]})
				if err != nil {
					errs <- err
					return
				}
				defer c.DeleteSession(context.Background(), s.ID)
				for j := 0; j < 3; j++ {
					if _, err := c.PutFile(context.Background(), s.ID, "mine.txt", strings.NewReader(fmt.Sprint(i, j)), 0); err != nil {
						errs <- err
						return
					}
					res, err := c.Exec(context.Background(), s.ID, api.ExecRequest{Argv: []string{"sh", "-c", "cat mine.txt; echo; ls | wc -l"}})
					if err != nil || res.Stdout != fmt.Sprintf("%d %d\n2\n", i, j) {
						errs <- fmt.Errorf("session %d round %d: %v %+v", i, j, err, res)
						return
					}
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("bad session requests", func(t *testing.T) {
		for body, code := range map[string]string{
			`{"language":"cobol"}`:                              api.CodeUnknownLanguage,
			`{"language":"python","ttl":"1000h"}`:               api.CodeInvalidRequest,
			`{"language":"python","limits":{"memory":"64GiB"}}`: api.CodeInvalidRequest,
			`{"language":"python","project":"nope"}`:            api.CodeNotFound,
		} {
			status, out := rawPost(t, d.Socket, "/v1/sessions", body, "")
			if status/100 != 4 || !strings.Contains(out, `"code": "`+code+`"`) {
				t.Errorf("%s: %d %s", body, status, out)
			}
		}
	})
}

// TestSessionLimitsAndExpiry uses a daemon with a low ceiling and short
// lifetimes, and no freezing: a create past the ceiling would freeze the
// least recently used session (TestFreeze).
func TestSessionLimitsAndExpiry(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Extra: `
sessions {
  max          = 2
  max_frozen   = 0
  idle_timeout = "2s"
  on_idle      = "end"
}`})
	c := d.Client()
	a := newSession(t, c, api.SessionRequest{TTL: api.Duration(2 * time.Second), IdleTimeout: api.Duration(time.Minute)})
	b := newSession(t, c, api.SessionRequest{})
	if _, err := c.CreateSession(ctx(t), api.SessionRequest{Language: "python"}); apiCode(err) != api.CodeTooManySessions {
		t.Fatalf("third session: %v", err)
	}
	// a expires by its TTL though used; b by idleness.
	waitFor(t, "a to expire while in use", func() bool {
		_, err := c.Exec(ctx(t), a, api.ExecRequest{Argv: []string{"true"}})
		return apiCode(err) == api.CodeNotFound
	})
	waitFor(t, "both sessions expired, their containers gone", func() bool {
		_, errA := c.Session(ctx(t), a)
		_, errB := c.Session(ctx(t), b)
		return apiCode(errA) == api.CodeNotFound && apiCode(errB) == api.CodeNotFound &&
			len(testutil.Containers(t, "io.sandboxd.session="+a)) == 0 &&
			len(testutil.Containers(t, "io.sandboxd.session="+b)) == 0
	})
	if _, _, code := d.Ctl("", "exec", a, "--", "true"); code != 125 {
		t.Fatalf("exec in an expired session exited %d", code)
	}
	// The ceiling frees up.
	newSession(t, c, api.SessionRequest{})
}

// TestSessionsSurviveRestarts restarts the daemon under live sessions.
func TestSessionsSurviveRestarts(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	gone := newSession(t, c, api.SessionRequest{})
	sh(t, c, id, "echo kept > state.txt")

	d.Stop() // SIGTERM
	d.Restart()
	if res := sh(t, c, id, "cat state.txt"); res.Stdout != "kept\n" {
		t.Fatalf("after SIGTERM: %+v", res)
	}
	d.Kill() // SIGKILL
	// While the daemon is down, one session's container disappears.
	ids := testutil.Containers(t, "io.sandboxd.session="+gone)
	if len(ids) != 1 {
		t.Fatalf("containers of %s: %v", gone, ids)
	}
	if out, err := exec.Command("docker", "rm", "-f", ids[0]).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	d.Restart()
	if res := sh(t, c, id, "cat state.txt; echo more >> state.txt; cat state.txt"); res.Stdout != "kept\nkept\nmore\n" {
		t.Fatalf("after SIGKILL: %+v", res)
	}
	s, err := c.Session(ctx(t), gone)
	if err != nil || s.State != api.SessionLost || !strings.Contains(s.Error, "gone") {
		t.Fatalf("the session whose container vanished: %v %+v", err, s)
	}
	if _, err := c.Exec(ctx(t), gone, api.ExecRequest{Argv: []string{"true"}}); apiCode(err) != api.CodeSessionLost {
		t.Fatalf("exec in a lost session: %v", err)
	}
	if err := c.DeleteSession(ctx(t), gone); err != nil {
		t.Fatal(err)
	}
}

// TestProjects covers project storage and project sessions.
func TestProjects(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	c := d.Client()
	out, errOut, code := d.Ctl("", "project", "create", "data")
	pid := strings.TrimSpace(out)
	if code != 0 || pid == "" {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
	csv := writeFile(t, "table.csv", "a,b\n1,2\n")
	out, errOut, code = d.Ctl("", "project", "upload", "data", csv, csv)
	if code != 0 || out != "table.csv\ntable-1.csv\n" {
		t.Fatalf("duplicate names: %d %q %q", code, out, errOut)
	}
	for name, want := range map[string]string{"../../etc/evil\x01.txt": "etc/evil.txt", "same bytes.csv": "same bytes.csv"} {
		f, err := c.AddProjectFile(ctx(t), "data", name, strings.NewReader("a,b\n1,2\n"), false)
		if err != nil || f.Name != want {
			t.Errorf("%q stored as %+v (%v), want %q", name, f, err, want)
		}
	}
	blobs, _ := os.ReadDir(filepath.Join(d.StateDir, "blobs"))
	if len(blobs) != 1 {
		t.Fatalf("the same bytes under three names are stored %d times", len(blobs))
	}
	if _, err := c.CreateProject(ctx(t), "data"); apiCode(err) != api.CodeConflict {
		t.Fatalf("duplicate project name: %v", err)
	}

	d.Stop()
	d.Restart()
	p, err := c.Project(ctx(t), pid)
	if err != nil || len(p.Files) != 4 {
		t.Fatalf("after restart: %v %+v", err, p)
	}
	id := newSession(t, c, api.SessionRequest{Project: "data"})
	res := sh(t, c, id, "ls project_files; cat project_files/table-1.csv; echo x > project_files/new 2>&1 || echo refused; echo y > outputs/mine")
	if res.Stdout != "etc\nsame bytes.csv\ntable-1.csv\ntable.csv\na,b\n1,2\nrefused\n" {
		t.Fatalf("%+v", res)
	}
	if _, err := c.ResetSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if res := sh(t, c, id, "ls -A; ls project_files | wc -l"); res.Stdout != "outputs\nproject_files\n4\n" {
		t.Fatalf("reset must keep project_files: %q", res.Stdout)
	}
	if _, _, code := d.Ctl("", "project", "rm", "data"); code != 125 {
		t.Fatal("a project in use was deleted")
	}
	dst := filepath.Join(t.TempDir(), "back.csv")
	if _, e, code := d.Ctl("", "project", "download", "data", "table.csv", dst); code != 0 {
		t.Fatal(e)
	}
	if b, _ := os.ReadFile(dst); string(b) != "a,b\n1,2\n" {
		t.Fatalf("%q", b)
	}
	if err := c.DeleteSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if _, e, code := d.Ctl("", "project", "rm", "data"); code != 0 {
		t.Fatal(e)
	}
	blobs, _ = os.ReadDir(filepath.Join(d.StateDir, "blobs"))
	if len(blobs) != 0 {
		t.Fatalf("%d blobs left after the project went", len(blobs))
	}
}

// A server a session's program starts is listed among the session's
// ports while it listens, and gone once it ends, under both runtimes
// (gVisor answers from its own /proc/net/tcp).
func TestSessionPorts(t *testing.T) { ociRuntimes(t, testSessionPorts) }

func testSessionPorts(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	listening := func(want api.Port) bool {
		ports, err := c.Ports(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ports, want)
	}
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c",
		"python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null & echo $! > server.pid"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("starting a server: %v %+v", err, res)
	}
	server := api.Port{Address: "127.0.0.1", Port: 8765}
	waitFor(t, "the server's port listed", func() bool { return listening(server) })
	if out, _, code := d.Ctl("", "session", "ports", id); code != 0 || !strings.Contains(out, "127.0.0.1:8765\n") {
		t.Errorf("sandboxctl session ports: %d %q", code, out)
	}
	if res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", "kill $(cat server.pid)"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("ending the server: %v %+v", err, res)
	}
	waitFor(t, "the ended server's port gone", func() bool { return !listening(server) })
}

// What a session's sandbox uses is measured from inside it, under both
// runtimes: CPU while a program burns it, processes, the workspace's
// real bytes (a sparse file's holes count for nothing), memory; the series
// grows as the daemon samples; asking never wakes a hibernated session;
// `sandboxctl session top` and /metrics show the same figures.
func TestSessionMetrics(t *testing.T) { ociRuntimes(t, testSessionMetrics) }

func testSessionMetrics(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	res := sh(t, c, id, "truncate -s 100M sparse && head -c 8388608 /dev/urandom > dense && "+
		"for i in 1 2 3; do (sleep 60 &) ; done; (timeout 60 python3 -c 'while True: pass' >/dev/null 2>&1 & echo $! > busy.pid)")
	if res.Usage.WorkspaceBytes < 8<<20 || res.Usage.WorkspaceBytes > 12<<20 {
		t.Errorf("the exec's usage says the workspace holds %d bytes; want about 8 MiB (the sparse file's holes are free)", res.Usage.WorkspaceBytes)
	}
	// A busy loop: seconds of CPU, and a share of a core far above an
	// idle sandbox's (about none). How large a share depends on what else
	// runs on the host's two cores: 23% at times in CI, beside the other
	// runtime's subtest.
	var m *api.SessionMetrics
	measured := func() bool {
		return m.Now != nil && m.Now.CPUSeconds >= 2 && m.Now.CPUPercent > 5 && m.Now.Processes >= 4 && len(m.Series) >= 2
	}
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var err error
		if m, err = c.Metrics(ctx(t), id); err != nil {
			t.Fatal(err)
		}
		if measured() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the busy program's CPU and processes never measured: now %+v, %d samples", m.Now, len(m.Series))
		}
	}
	// Measured: the busy loop ends, so that what follows does not share
	// the host with two of them (both runtimes' subtests) for a minute: a
	// gVisor container's start then waited 58 s, and the engine's answers
	// about this session with it.
	if res := sh(t, c, id, "kill $(cat busy.pid)"); res.ExitCode != 0 {
		t.Fatalf("ending the busy loop: %+v", res)
	}
	now := m.Now
	if now.MemoryBytes <= 0 || now.MemoryBytes > 512<<20 || now.WorkspaceBytes < 8<<20 || now.WorkspaceBytes > 12<<20 || now.CPUSeconds <= 0 {
		t.Errorf("the session's usage now: %+v", now)
	}
	out, _, code := d.Ctl("", "session", "top", "--no-stream")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "MEM USAGE / LIMIT") || !strings.Contains(out, "512MiB") {
		t.Errorf("sandboxctl session top --no-stream: %d\n%s", code, out)
	}
	waitFor(t, "/metrics to show the session's memory and processes", func() bool {
		families := scrape(t, d.Socket)
		memory, _ := value(families, "sandboxd_session_memory_bytes", "language=python")
		procs, _ := value(families, "sandboxd_session_processes", "language=python")
		return memory > 0 && procs >= 4
	})
	if _, err := c.PauseSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Metrics(ctx(t), id); err != nil || m.Now != nil || len(m.Series) < 2 {
		t.Fatalf("a hibernated session's metrics: %+v %v", m, err)
	}
	if s, err := c.Session(ctx(t), id); err != nil || s.State != api.SessionHibernated {
		t.Fatalf("asking for its metrics woke the session: %+v %v", s, err)
	}
	out, _, code = d.Ctl("", "session", "top", "--no-stream", id)
	if f := strings.Fields(out[strings.Index(out, "\n")+1:]); code != 0 || len(f) < 3 || f[0] != id || f[2] != api.SessionHibernated {
		t.Errorf("sandboxctl session top of a hibernated session: %d\n%s", code, out)
	}
}
