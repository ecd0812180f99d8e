package e2e

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestSnapshots: a workspace is saved and forked; forks diverge without
// touching each other or their source; a hostile workspace snapshots
// safely or is refused; snapshots survive a restart.
func TestSnapshots(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Defaults: `timeout = "30s"`, Extra: `
snapshots {
  max = 4
}`})
	c := d.Client()
	base := newSession(t, c, api.SessionRequest{})
	res := sh(t, c, base, "head -c 100M /dev/urandom > data.bin && mkdir -p src/pkg && echo 'print(1)' > src/pkg/m.py && chmod 750 src/pkg/m.py && ln -s pkg/m.py src/link && md5sum data.bin | cut -c1-32")
	sum := strings.TrimSpace(res.Stdout)
	if res.ExitCode != 0 || len(sum) != 32 {
		t.Fatalf("making the workspace: %+v", res)
	}

	fork, err := c.Fork(ctx(t), base, api.ForkRequest{Count: 4, Name: "base-100m"})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	if len(fork.Sessions) != 4 || fork.Snapshot.Size < 100<<20 || fork.Snapshot.Name != "base-100m" {
		t.Fatalf("fork: %+v", fork.Snapshot)
	}
	for i, s := range fork.Sessions {
		t.Cleanup(func() { _ = c.DeleteSession(ctx(t), s.ID) })
		res := sh(t, c, s.ID, "md5sum data.bin | cut -c1-32; stat -c '%a %N' src/pkg/m.py src/link; echo "+string(rune('a'+i))+" > mine.txt; truncate -s "+string(rune('1'+i))+" data.bin")
		want := sum + "\n750 'src/pkg/m.py'\n777 'src/link' -> 'pkg/m.py'\n"
		if res.ExitCode != 0 || res.Stdout != want {
			t.Errorf("fork %d: %q, want %q (%s)", i, res.Stdout, want, res.Stderr)
		}
	}
	// Each went its own way; the source did not move.
	for i, s := range append([]api.Session{{ID: base}}, fork.Sessions...) {
		res := sh(t, c, s.ID, "cat mine.txt 2>/dev/null; stat -c %s data.bin")
		want := "104857600\n"
		if i > 0 {
			want = string(rune('a'+i-1)) + "\n" + string(rune('1'+i-1)) + "\n"
		}
		if res.Stdout != want {
			t.Errorf("session %d after the forks: %q, want %q", i, res.Stdout, want)
		}
	}

	// A hostile workspace: a link out, a FIFO, a 1 TiB sparse file (which
	// the snapshot keeps as what it holds: nearly nothing).
	evil := newSession(t, c, api.SessionRequest{})
	sh(t, c, evil, "ln -s / root; ln -s /etc/shadow shadow; mkfifo pipe; truncate -s 1T sparse; echo ok > plain.txt")
	sn, err := c.Snapshot(ctx(t), evil, "evil")
	if err != nil || sn.Skipped != 1 || sn.Size > 1<<20 {
		t.Fatalf("snapshot with a link out, a FIFO and a 1 TiB sparse file: %v %+v", err, sn)
	}
	if _, err := c.Snapshot(ctx(t), evil, "evil"); apiCode(err) != api.CodeConflict {
		t.Errorf("a name taken: %v", err)
	}
	if _, err := c.Snapshot(ctx(t), evil, "../x"); apiCode(err) != api.CodeInvalidRequest {
		t.Errorf("a bad name: %v", err)
	}

	// Snapshots survive a restart; a session starts from one by name,
	// links restored as links, never followed.
	d.Stop()
	d.Restart()
	list, err := c.Snapshots(ctx(t))
	if err != nil || len(list) != 2 {
		t.Fatalf("after a restart: %v %+v", err, list)
	}
	s, err := c.CreateSession(ctx(t), api.SessionRequest{FromSnapshot: "evil"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(ctx(t), s.ID) })
	res = sh(t, c, s.ID, "ls; stat -c '%F %N' root shadow; stat -c %s sparse")
	if res.Stdout != "outputs\nplain.txt\nroot\nshadow\nsparse\nsymbolic link 'root' -> '/'\nsymbolic link 'shadow' -> '/etc/shadow'\n1099511627776\n" || s.Language != "python" {
		t.Errorf("restored: %q %q", res.Stdout, res.Stderr)
	}

	// The quota: four snapshots at most.
	for _, name := range []string{"three", "four"} {
		if _, err := c.Snapshot(ctx(t), s.ID, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Snapshot(ctx(t), s.ID, "five"); apiCode(err) != api.CodeTooLarge || !strings.Contains(err.Error(), "snapshots.max") {
		t.Errorf("over the quota: %v", err)
	}
	if err := c.DeleteSnapshot(ctx(t), "base-100m"); err != nil {
		t.Error(err)
	}
	if _, err := c.CreateSession(ctx(t), api.SessionRequest{FromSnapshot: "base-100m"}); apiCode(err) != api.CodeNotFound {
		t.Errorf("from a deleted snapshot: %v", err)
	}
}
