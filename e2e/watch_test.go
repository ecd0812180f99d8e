package e2e

import (
	"bufio"
	"fmt"
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

// told reads lines, handing each to each, until want comes (true) or
// within passes.
func told(lines <-chan string, within time.Duration, want string, each func(string)) bool {
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return false
			}
			each(l)
			if l == want {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func testWatch(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime, Defaults: `timeout = "60s"`})
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

	// A flood: five thousand files as fast as the program makes them.
	// Nothing is lost without a word: each file is told, or an overflow
	// says how many were left out; and the watch goes on.
	run(`python3 -c "
for i in range(5000):
    open('flood%d' % i, 'w').close()"`)
	flood, overflowed := map[string]bool{}, 0
	count := func(l string) {
		var n int
		switch {
		case strings.HasPrefix(l, "create flood"):
			flood[l] = true
		case strings.HasPrefix(l, "overflow "):
			if _, err := fmt.Sscanf(l, "overflow %d", &n); err == nil {
				overflowed += n
			}
		}
	}
	// A change made as the flood drains may be among those left out:
	// the watch goes on when one made later is told.
	for i := 0; ; i++ {
		marker := fmt.Sprintf("after-the-flood-%d", i)
		run("touch " + marker)
		if told(lines, 2*time.Second, "create "+marker, func(l string) { seen = append(seen, l); count(l) }) {
			break
		}
		if i == 20 {
			t.Fatalf("no change told after the flood; seen %q", seen[max(len(seen)-20, 0):])
		}
	}
	if len(flood) < 5000 && overflowed == 0 {
		t.Fatalf("%d of 5000 files told, and no overflow said", len(flood))
	}
	t.Logf("a flood of 5000 files: %d told, %d events left out", len(flood), overflowed)

	// A link planted to lead out is no way to watch the host's files.
	run("ln -s /etc etc-link")
	out, err := exec.Command(ctl, "--socket", d.Socket, "watch", id, "etc-link").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "etc-link") {
		t.Fatalf("watching through a planted link: %v %s", err, out)
	}
}
