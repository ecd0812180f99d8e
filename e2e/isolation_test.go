package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// hostProcFile reads, on the host, file name of the container's PID 1's
// /proc entry.
func hostProcFile(t *testing.T, container, name string) string {
	t.Helper()
	pid, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", container).Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hostUID reads, on the host, the uid the container's PID 1 runs as.
func hostUID(t *testing.T, container string) string {
	t.Helper()
	for _, line := range strings.Split(hostProcFile(t, container, "status"), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			return strings.Fields(rest)[0] // real uid
		}
	}
	t.Fatal("no Uid line")
	return ""
}

// Each sandbox runs as a host uid of its own, so one that fills its process
// count leaves every other one able to fork. (Under runsc a sandbox's
// processes are gVisor's, not the host's: it counts them itself.)
func TestSandboxesHaveUIDsOfTheirOwn(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	c := d.Client()
	const bombs = 4
	ids := make([]string, bombs)
	uids := map[string]string{}
	for i := range ids {
		ids[i] = newSession(t, c, api.SessionRequest{Limits: &api.Limits{Pids: 32}})
		containers := testutil.Containers(t, "io.sandboxd.session="+ids[i])
		if len(containers) != 1 {
			t.Fatalf("session %s has containers %v", ids[i], containers)
		}
		uid := hostUID(t, containers[0])
		inside := strings.TrimSpace(sh(t, c, ids[i], "id -u; stat -c %u /workspace").Stdout)
		if inside != uid+"\n"+uid {
			t.Fatalf("host uid %s, inside and the workspace's %q", uid, inside)
		}
		if other, dup := uids[uid]; dup {
			t.Fatalf("sessions %s and %s both run as uid %s", other, ids[i], uid)
		}
		uids[uid] = ids[i]
	}
	// Every bomb session fills its pids limit with processes that stay.
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c",
				"i=0; while [ $i -lt 200 ]; do setsid sleep 1000 >/dev/null 2>&1 & i=$((i+1)); done; true"}})
			if err != nil {
				t.Errorf("bomb in %s: %v", id, err)
				return
			}
			if !strings.Contains(res.Stderr, "fork") && !strings.Contains(res.Stderr, "Resource temporarily unavailable") {
				t.Errorf("bomb in %s never hit its limit: %+v", id, res)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		// The bomb's own shell has exited: one slot is free, not two.
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", "sleep 0 & wait; echo forked"}})
		if err != nil || res.Stdout == "forked\n" {
			t.Fatalf("session %s is not full: %+v %v", id, res, err)
		}
	}
	// The others still fork: a one-shot run and a new session.
	res := run(t, c, api.RunRequest{Language: "python", Code: "import subprocess\nprint(sum(subprocess.run(['true']).returncode == 0 for _ in range(20)))\n"})
	if res.ExitCode != 0 || res.Stdout != "20\n" {
		t.Fatalf("a run beside full sandboxes: %+v", res)
	}
	fresh := newSession(t, c, api.SessionRequest{})
	if res := sh(t, c, fresh, "for i in 1 2 3 4 5 6 7 8; do sleep 0 & done; wait; echo forked"); res.Stdout != "forked\n" {
		t.Fatalf("a session beside full sandboxes: %+v", res)
	}
}

// No signal a program can send reaches the supervisor, under runc and
// gVisor. A one-shot run sends every signal to every process it can name
// but itself, PID 1 included, then SIGKILL to all it may signal at once:
// its own result comes back, recorded, and the next run lands in the same
// container, recycled (runc shields PID 1; under gVisor, which does not,
// a one-shot run's processes are in a PID namespace of their own, where
// the supervisor has no number). A session's program does the same to
// PID 1 and to every process: under gVisor its PID 1 is the holder of the
// namespace the session's processes share, and SIGKILL to it ends them
// (that exec among them), never the session, whose next exec runs in a
// new namespace. Before that, the namespace holds a session's background
// process from one exec to the next.
func TestSupervisorSurvivesEverySignal(t *testing.T) {
	ociRuntimes(t, testSupervisorSurvivesEverySignal)
}

func testSupervisorSurvivesEverySignal(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime, Languages: reusePool})
	c := d.Client()
	if ignored := run(t, c, api.RunRequest{Language: "python", Code: ignoredRealtimeSignals}); ignored.Stdout != "[]\n" {
		t.Fatalf("a program must find no realtime signal ignored: %+v", ignored)
	}
	res := run(t, c, api.RunRequest{Language: "python", Code: everySignal})
	if res.ExitCode != 0 || res.Stdout != "sent\n" {
		t.Fatalf("one-shot: %+v", res)
	}
	if next := run(t, c, api.RunRequest{Language: "python", Code: "print('next')"}); next.Stdout != "next\n" || next.Container != res.Container {
		t.Fatalf("the run after it: %+v, in %s; the signals' run was in %s", next, next.Container, res.Container)
	}
	waitFor(t, "the run in history", func() bool {
		list, err := c.Executions(context.Background(), 20, api.ExecutionFilter{Language: "python"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			if e.ID == res.ID {
				return e.ExitCode == 0
			}
		}
		return false
	})

	id := newSession(t, c, api.SessionRequest{})
	background := sh(t, c, id, "sleep 600 >/dev/null 2>&1 & echo $!")
	if res := sh(t, c, id, "kill -0 "+strings.TrimSpace(background.Stdout)+" && echo there"); res.Stdout != "there\n" {
		t.Fatalf("a background process, the exec after: %+v (started: %+v)", res, background)
	}
	// The holder ignores the realtime signals, and the engine may have
	// ignored one: a program finds them at their default.
	if ignored, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"python3", "-c", ignoredRealtimeSignals}}); err != nil || ignored.Stdout != "[]\n" {
		t.Fatalf("a session's program must find no realtime signal ignored: %+v %v", ignored, err)
	}
	for sig := 1; sig <= 64; sig++ {
		res := sh(t, c, id, fmt.Sprintf("kill -%d 1; echo $?", sig))
		if res.Stdout == "0\n" || res.Stdout == "1\n" || runtime != "runc" && sig == 9 && res.Signal == "SIGKILL" {
			continue
		}
		t.Fatalf("kill -%d 1: %+v", sig, res)
	}
	all, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"python3", "-c", everySignal}})
	if err != nil || all.Stdout != "sent\n" && (runtime == "runc" || all.Signal != "SIGKILL") {
		t.Fatalf("every signal to every process: %+v %v", all, err)
	}
	if res := sh(t, c, id, "echo alive"); res.Stdout != "alive\n" {
		t.Fatalf("after every signal: %+v", res)
	}
	s, err := c.Session(ctx(t), id)
	if err != nil || s.State != api.SessionActive {
		t.Fatalf("session after every signal: %+v %v", s, err)
	}
}

// ignoredRealtimeSignals lists the realtime signals the program starts
// with ignored.
const ignoredRealtimeSignals = "import signal; print([s for s in range(32, 65) if signal.getsignal(s) == signal.SIG_IGN])"

// everySignal sends every signal to every process it can name but itself,
// PID 1 included, then SIGKILL to all it may signal at once.
const everySignal = `
import os, signal
targets = {1} | {int(p) for p in os.listdir('/proc') if p.isdigit()}
targets.discard(os.getpid())
for pid in sorted(targets):
    for sig in range(1, 65):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
print('sent', flush=True)
`

// A client that asks for a stream and stops reading loses its stream, never
// the sandbox: the session's next exec runs at once and the stalled one is
// recorded.
func TestStalledClientDoesNotWedgeASession(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Defaults: `timeout = "20s"`})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	conn, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"argv":["python3","-c","import sys\nfor i in range(20000): sys.stdout.write('x' * 50 + '\\n')\nprint('chatty done')"]}`
	fmt.Fprintf(conn, "POST /v1/sessions/%s/exec HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", id, len(body), body)
	// ... and never read a byte of the answer.
	waitFor(t, "the chatty exec recorded", func() bool {
		list, err := c.Executions(context.Background(), 10, api.ExecutionFilter{})
		return err == nil && len(list) > 0 && list[0].Session == id && list[0].StdoutBytes > 1_000_000
	})
	start := time.Now()
	if res := sh(t, c, id, "echo next"); res.Stdout != "next\n" {
		t.Fatalf("the next exec: %+v", res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the next exec waited %s behind a stalled client", took)
	}
}

// A reset gives a fresh sandbox, whatever the program left behind: shared
// memory, SysV IPC, POSIX message queues, directories it locked itself out
// of, a workspace it made unwritable.
func TestResetIsFresh(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	leave := `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
assert libc.shmget(1234, 4096, 0o1000 | 0o600) >= 0
assert libc.semget(1235, 1, 0o1000 | 0o600) >= 0
assert libc.msgget(1236, 0o1000 | 0o600) >= 0
rt = ctypes.CDLL('librt.so.1', use_errno=True)
assert rt.mq_open(b'/left', os.O_CREAT | os.O_RDWR, 0o600, None) >= 0, ctypes.get_errno()
open('/dev/shm/left', 'w').write('x')
os.makedirs('locked/deep')
open('locked/deep/f', 'w').write('x')
for p in ('locked/deep', 'locked', '/workspace'):
    os.chmod(p, 0)
print('left')
`
	if res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: leave}); err != nil || res.Stdout != "left\n" {
		t.Fatalf("leaving things behind: %+v %v", res, err)
	}
	if _, err := c.ResetSession(ctx(t), id); err != nil {
		t.Fatalf("reset: %v", err)
	}
	check := "cd /workspace && ls -A . /dev/shm /dev/mqueue && tail -n +2 /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg | grep -c '^ *[0-9]' ; stat -c %a /workspace"
	res := sh(t, c, id, check)
	want := ".:\noutputs\n\n/dev/mqueue:\n\n/dev/shm:\n0\n755\n"
	if res.Stdout != want {
		t.Fatalf("after reset:\n%s\nwant:\n%s\nstderr: %s", res.Stdout, want, res.Stderr)
	}
	if s, err := c.Session(ctx(t), id); err != nil || s.State != api.SessionActive {
		t.Fatalf("session after reset: %+v %v", s, err)
	}
}

// A reset the sandbox cannot do gives the session a new container: here
// its container was killed from outside. The session keeps its id, its
// project files and its limits.
func TestResetRenewsASandboxThatCannotReset(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	c := d.Client()
	p, err := c.CreateProject(ctx(t), "renew")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddProjectFile(ctx(t), p.ID, "data.txt", strings.NewReader("kept\n"), false); err != nil {
		t.Fatal(err)
	}
	id := newSession(t, c, api.SessionRequest{Project: p.ID, Limits: &api.Limits{Memory: 300 << 20}})
	before := testutil.Containers(t, "io.sandboxd.session="+id)
	if len(before) != 1 {
		t.Fatalf("session containers: %v", before)
	}
	if res := sh(t, c, id, "echo left > note"); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	if out, err := exec.Command("docker", "kill", before[0]).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	s, err := c.ResetSession(ctx(t), id)
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	after := testutil.Containers(t, "io.sandboxd.session="+id)
	if s.State != api.SessionActive || len(after) != 1 || after[0] == before[0] || !strings.HasPrefix(s.ContainerID, after[0]) {
		t.Fatalf("after reset: %+v, containers %v (before %v)", s, after, before)
	}
	res := sh(t, c, id, "ls; cat project_files/data.txt; cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null")
	if res.Stdout != "outputs\nproject_files\nkept\n"+fmt.Sprint(300<<20)+"\n" {
		t.Fatalf("the new container: %+v", res)
	}
}

// sandboxd SIGKILLed with a corrupted session record, and then again with
// its state file removed: each start reports what it skipped and goes on,
// and no container is left orphaned.
func TestStartSurvivesCorruptAndLostState(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	c := d.Client()
	corrupt := newSession(t, c, api.SessionRequest{})
	kept := newSession(t, c, api.SessionRequest{})
	d.Kill()
	db, err := bolt.Open(filepath.Join(d.StateDir, state.FileName), 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("sessions")).Put([]byte(corrupt), []byte("{torn")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	d.Restart()
	if !strings.Contains(d.Logs(), "skipped a session record that does not decode") {
		t.Fatal("the corrupt record was not reported")
	}
	if res := sh(t, c, kept, "echo on"); res.Stdout != "on\n" {
		t.Fatalf("the intact session: %+v", res)
	}
	waitFor(t, "the corrupt session's container removed", func() bool {
		return len(testutil.Containers(t, "io.sandboxd.session="+corrupt)) == 0
	})

	d.Kill()
	if err := os.Remove(filepath.Join(d.StateDir, state.FileName)); err != nil {
		t.Fatal(err)
	}
	d.Restart()
	waitFor(t, "the unknown session's container removed", func() bool {
		return len(testutil.Containers(t, "io.sandboxd.session="+kept)) == 0
	})
	if res := run(t, c, api.RunRequest{Language: "python", Code: "print('fresh')"}); res.Stdout != "fresh\n" {
		t.Fatalf("a run after the state was lost: %+v", res)
	}
}
