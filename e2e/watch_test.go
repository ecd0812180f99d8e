package e2e

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestWatch follows a session's workspace as a person does with
// `sandboxctl watch`, while programs change it, flood it with changes,
// and plant a link for the watch to follow out.
func TestWatch(t *testing.T) { ociRuntimes(t, testWatch) }

func testWatch(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	ctl := filepath.Join(d.Bin, "sandboxctl")
	run := func(script string) {
		t.Helper()
		if r, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", script}}); err != nil || r.ExitCode != 0 {
			t.Fatalf("%s: %v %+v", script, err, r)
		}
	}

	watch := exec.Command(ctl, "--socket", d.Socket, "watch", "-r", id)
	stdout, _ := watch.StdoutPipe()
	stderr, _ := watch.StderrPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Process.Kill(); _ = watch.Wait() })
	if line, _ := bufio.NewReader(stderr).ReadString('\n'); !strings.Contains(line, "watching the workspace") {
		t.Fatalf("sandboxctl watch said %q", line)
	}
	lines := make(chan string, 100000)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	want := func(match func(string) bool, what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("sandboxctl watch ended before %s; seen %q", what, seen)
				}
				seen = append(seen, l)
				if match(l) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s in 30s; seen %q", what, seen[max(len(seen)-20, 0):])
			}
		}
	}
	is := func(want string) func(string) bool { return func(l string) bool { return l == want } }

	run("mkdir src")
	want(is("create src"), "create src")
	run("echo 1 > src/a.py && mv src/a.py src/b.py && chmod 600 src/b.py && rm src/b.py")
	for _, w := range []string{"create src/a.py", "write src/a.py", "rename src/a.py", "rename src/b.py", "chmod src/b.py", "remove src/b.py"} {
		want(is(w), w)
	}

	// A flood: twenty thousand files at once. The watch says what it
	// left out, and goes on.
	run(`python3 -c "
for i in range(20000):
    open('flood%d' % i, 'w').close()
open('after-the-flood', 'w').close()"`)
	want(func(l string) bool { return strings.HasPrefix(l, "overflow ") }, "overflow")
	run("touch after-the-flood-2")
	want(is("create after-the-flood-2"), "the events after a flood")

	// A link planted to lead out is no way to watch the host's files.
	run("ln -s /etc etc-link")
	out, err := exec.Command(ctl, "--socket", d.Socket, "watch", id, "etc-link").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "etc-link") {
		t.Fatalf("watching through a planted link: %v %s", err, out)
	}
}
