package sandboxinit

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/fresh"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
)

// peer drives a supervisor served in this process, over pipes, on a test's
// own directories. Its endAll kills the process groups of the executions
// it started (kill(-1) is for PID 1 of a container only).
type peer struct {
	t    *testing.T
	s    *server
	in   *io.PipeWriter
	out  chan supervisor.Message // read as they come, so the supervisor never blocks on us
	dirs paths
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	dirs := paths{workspace: t.TempDir(), tmp: t.TempDir(), scratch: []string{t.TempDir(), filepath.Join(t.TempDir(), "absent")}}
	hostR, initW := io.Pipe()
	initR, hostW := io.Pipe()
	p := &peer{t: t, in: hostW, dirs: dirs}
	p.s = newServer(initW, dirs, container{
		killAll: func(int) int {
			p.s.mu.Lock()
			defer p.s.mu.Unlock()
			for pid := range p.s.byPID {
				_ = unix.Kill(-pid, unix.SIGKILL)
			}
			for _, pid := range p.s.spawner.Holders() {
				_ = unix.Kill(pid, unix.SIGKILL) // and the session's namespace with it
			}
			return 0
		},
		clearIPC: func() {}, // the test process's namespace is the host's
	})
	_ = os.Chmod(dirs.tmp, 0o777|os.ModeSticky) // as a container's /tmp is
	p.s.begin()
	// One reaper at a time: it waits for any child of the test process.
	stopReaping := make(chan struct{})
	reaped := make(chan struct{})
	go func() { p.s.reap(stopReaping); close(reaped) }()
	served := make(chan struct{})
	go func() { _ = p.s.serve(initR); close(served) }()
	p.out = make(chan supervisor.Message, 4096)
	go func() {
		sc := bufio.NewScanner(hostR)
		sc.Buffer(nil, supervisor.MaxLine)
		for sc.Scan() {
			var m supervisor.Message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m.Op = "malformed: " + err.Error()
			}
			select {
			case p.out <- m:
			default: // a failed test left messages unread
			}
		}
	}()
	t.Cleanup(func() {
		p.s.endAll()
		hostW.Close()
		<-served
		initW.Close()
		close(stopReaping)
		<-reaped
		p.s.spawner.Close() // its thread ends with it
	})
	return p
}

func (p *peer) send(m supervisor.Message) {
	p.t.Helper()
	line, _ := json.Marshal(m)
	p.sendLine(string(line))
}

func (p *peer) sendLine(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next reads the supervisor's next message, bounded in time.
func (p *peer) next() supervisor.Message {
	p.t.Helper()
	select {
	case m := <-p.out:
		return m
	case <-time.After(20 * time.Second):
		p.t.Fatal("no message from the supervisor in 20s")
		return supervisor.Message{}
	}
}

// exec runs req and collects its output until its exit message.
func (p *peer) exec(id uint64, req supervisor.ExecRequest, stdin ...string) (stdout, stderr string, res *supervisor.ExecResult) {
	p.t.Helper()
	if req.Dir == "" {
		req.Dir = p.dirs.workspace
	}
	req.Stdin = len(stdin) > 0
	p.send(supervisor.Message{Op: supervisor.OpExec, ID: id, Exec: &req})
	var out, errOut strings.Builder
	// Stdin goes a chunk per in_ack, as the host sends it.
	pending := stdin
	sendNext := func() {
		if len(pending) > 0 {
			p.send(supervisor.Message{Op: supervisor.OpIn, ID: id, Data: []byte(pending[0])})
			pending = pending[1:]
		} else if req.Stdin {
			p.send(supervisor.Message{Op: supervisor.OpInClose, ID: id})
			req.Stdin = false
		}
	}
	sendNext()
	for {
		m := p.next()
		switch {
		case m.ID != id:
		case m.Op == supervisor.OpInAck:
			sendNext()
		case m.Op == supervisor.OpOut && m.Stream == supervisor.Stdout:
			out.Write(m.Data)
		case m.Op == supervisor.OpOut && m.Stream == supervisor.Stderr:
			errOut.Write(m.Data)
		case m.Op == supervisor.OpExit:
			return out.String(), errOut.String(), m.Result
		default:
			p.t.Fatalf("unexpected message %+v", m)
		}
	}
}

// fileOp runs one workspace operation and returns its data and result.
func (p *peer) fileOp(id uint64, op string, req supervisor.FileRequest, chunks ...string) (string, *supervisor.FileResult) {
	p.t.Helper()
	p.send(supervisor.Message{Op: op, ID: id, File: &req})
	// A put's chunks go one per in_ack, as the host sends them.
	pending, closing := chunks, op == supervisor.OpPut || op == supervisor.OpUntar
	sendNext := func() {
		if len(pending) > 0 {
			p.send(supervisor.Message{Op: supervisor.OpIn, ID: id, Data: []byte(pending[0])})
			pending = pending[1:]
		} else if closing {
			p.send(supervisor.Message{Op: supervisor.OpInClose, ID: id})
			closing = false
		}
	}
	sendNext()
	var data strings.Builder
	for {
		m := p.next()
		switch {
		case m.ID != id:
		case m.Op == supervisor.OpInAck:
			sendNext()
		case m.Op == supervisor.OpOut:
			data.Write(m.Data)
		case m.Op == supervisor.OpDone:
			return data.String(), m.Done
		}
	}
}

func TestHelloAfterTornAndEmptyLines(t *testing.T) {
	p := newPeer(t)
	p.sendLine(`{"op":"exec","id":`) // torn by a reattach
	p.sendLine("")                   // the host's resync newline
	p.send(supervisor.Message{Op: supervisor.OpHello, Nonce: "n1"})
	if m := p.next(); m.Op != supervisor.OpHello || m.Nonce != "n1" || m.Version != supervisor.Version {
		t.Fatalf("hello answered with %+v", m)
	}
}

func TestExecWritesFilesStreamsAndReports(t *testing.T) {
	p := newPeer(t)
	out, errOut, res := p.exec(1, supervisor.ExecRequest{
		Argv:      []string{"sh", "-c", "cat prog/f.txt; cat; echo oops >&2; exit 3"},
		Env:       []string{"PATH=/usr/bin:/bin"},
		Files:     []supervisor.File{{Path: "/workspace/prog/f.txt", Data: []byte("file\n")}},
		TimeoutMS: 10000, OutputLimit: 1 << 20,
	}, "in", "put\n")
	if out != "file\ninput\n" || errOut != "oops\n" || res.ExitCode != 3 || res.TimedOut || res.StdoutBytes != 11 {
		t.Fatalf("stdout %q stderr %q result %+v", out, errOut, res)
	}
}

func TestExecFailuresAreResults(t *testing.T) {
	p := newPeer(t)
	if _, _, res := p.exec(1, supervisor.ExecRequest{Argv: []string{"no-such-program"}, Env: []string{"PATH=/bin"}, TimeoutMS: 1000}); res.ExitCode != 127 || res.StartError == "" {
		t.Fatalf("missing program: %+v", res)
	}
	if _, _, res := p.exec(2, supervisor.ExecRequest{TimeoutMS: 1000}); res.ExitCode != 126 {
		t.Fatalf("empty argv: %+v", res)
	}
	// A file that would leave the workspace is refused before anything runs.
	if err := os.Symlink("/etc", filepath.Join(p.dirs.workspace, "out")); err != nil {
		t.Fatal(err)
	}
	_, _, res := p.exec(3, supervisor.ExecRequest{Argv: []string{"true"}, Env: []string{"PATH=/bin"}, TimeoutMS: 1000,
		Files: []supervisor.File{{Path: "/workspace/out/planted", Data: []byte("x")}}})
	if res.ExitCode != 126 || !strings.Contains(res.StartError, "escapes") {
		t.Fatalf("file through a link: %+v", res)
	}
}

func TestDeadlineKillsAndTruncates(t *testing.T) {
	p := newPeer(t)
	_, _, res := p.exec(1, supervisor.ExecRequest{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero; sleep 30"},
		Env: []string{"PATH=/usr/bin:/bin"}, TimeoutMS: 200, OutputLimit: 1000})
	if !res.TimedOut || res.ExitCode != 128+int(syscall.SIGKILL) || !res.Truncated || res.StdoutBytes != 100000 {
		t.Fatalf("%+v", res)
	}
}

// A process left running with the output pipes open (a session's
// background server) does not hold up the result, nor lose what the
// program wrote before it ended; what a pipe holds unread is counted.
func TestBackgroundHolderOfTheOutput(t *testing.T) {
	p := newPeer(t)
	out, _, res := p.exec(1, supervisor.ExecRequest{Argv: []string{"sh", "-c", "sleep 30 & echo $!"},
		Env: []string{"PATH=/usr/bin:/bin"}, TimeoutMS: 20000, OutputLimit: 1000})
	if pid, err := strconv.Atoi(strings.TrimSpace(out)); err == nil {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	if !strings.HasSuffix(out, "\n") || res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("stdout %q result %+v", out, res)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.WriteString("unread"); err != nil || unread(r) != len("unread") {
		t.Fatalf("unread: %d, %v", unread(r), err)
	}
}

// A session's command (KeepOthers) ends alone at its deadline: with the
// child it put in a session of its own, but not what another left.
func TestDeadlineOfACommandThatKeepsOthers(t *testing.T) {
	p := newPeer(t)
	env := []string{"PATH=/usr/bin:/bin"}
	startedPID := func(out string) int {
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("no pid in %q", out)
		}
		t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
		return pid
	}
	out, _, _ := p.exec(1, supervisor.ExecRequest{Argv: []string{"sh", "-c", "setsid sleep 30 >/dev/null 2>&1 & echo $!"},
		Env: env, TimeoutMS: 5000, OutputLimit: 1000, KeepOthers: true})
	server := startedPID(out)
	out, _, res := p.exec(2, supervisor.ExecRequest{Argv: []string{"sh", "-c", "setsid sleep 30 >/dev/null 2>&1 & echo $!; sleep 30"},
		Env: env, TimeoutMS: 300, OutputLimit: 1000, KeepOthers: true})
	child := startedPID(out)
	if !res.TimedOut || res.Survivors != 0 {
		t.Fatalf("%+v", res)
	}
	alive := func(pid int) bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err == nil && procs.Live(stat)
	}
	for deadline := time.Now().Add(2 * time.Second); alive(child) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(child) || !alive(server) {
		t.Fatalf("the command's own child alive: %v; the other's server alive: %v", alive(child), alive(server))
	}
}

// A child whose first thread ended (pthread_exit: it shows as a zombie)
// while another runs is still found in the command's tree.
func TestDeadlineFindsAChildWithoutItsFirstThread(t *testing.T) {
	src := filepath.Join(t.TempDir(), "escape.c")
	if err := os.WriteFile(src, []byte(`#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *spin(void *a) { for (;;) sleep(1); return 0; }
int main(void) {
	pid_t c = fork();
	if (c == 0) {
		setsid();
		pthread_t t;
		pthread_create(&t, 0, spin, 0);
		pthread_exit(0);
	}
	printf("%d\n", c);
	fflush(stdout);
	for (;;) sleep(1);
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := strings.TrimSuffix(src, ".c")
	if out, err := exec.Command("gcc", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v %s", err, out)
	}
	p := newPeer(t)
	out, _, res := p.exec(1, supervisor.ExecRequest{Argv: []string{bin}, Env: []string{"PATH=/usr/bin:/bin"}, TimeoutMS: 300, OutputLimit: 1000, KeepOthers: true})
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("no pid in %q (%+v)", out, res)
	}
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
	threaded := func(pid string) bool { // its threads but its first run on
		tasks, err := os.ReadDir("/proc/" + pid + "/task")
		return err == nil && len(tasks) > 1
	}
	for deadline := time.Now().Add(2 * time.Second); threaded(strconv.Itoa(pid)) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if threaded(strconv.Itoa(pid)) {
		t.Fatalf("the child outlived its command's deadline (%+v)", res)
	}
}

func TestKillEndsAnExecution(t *testing.T) {
	p := newPeer(t)
	p.send(supervisor.Message{Op: supervisor.OpExec, ID: 7, Exec: &supervisor.ExecRequest{
		Argv: []string{"sleep", "30"}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: p.dirs.workspace, TimeoutMS: 30000}})
	p.send(supervisor.Message{Op: supervisor.OpKill, ID: 7})
	for {
		if m := p.next(); m.Op == supervisor.OpExit {
			if m.Result.ExitCode != 128+int(syscall.SIGKILL) {
				t.Fatalf("%+v", m.Result)
			}
			return
		}
	}
}

func TestResetEmptiesAllButProjectFiles(t *testing.T) {
	p := newPeer(t)
	for _, f := range []string{"project_files/keep", "x/y", "outputs/z", "locked/deep/f"} {
		full := filepath.Join(p.dirs.workspace, f)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p.dirs.tmp, "t"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dirs.scratch[0], "shm-segment"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// What the code leaves behind to make a reset fail.
	for _, d := range []string{"locked/deep", "locked", "."} {
		if err := os.Chmod(filepath.Join(p.dirs.workspace, d), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, res := p.fileOp(1, supervisor.OpReset, supervisor.FileRequest{}); res.Error != "" {
		t.Fatalf("reset: %+v", res)
	}
	for dir, want := range map[string]string{p.dirs.workspace: "outputs project_files", p.dirs.tmp: ".sandboxd", p.dirs.scratch[0]: ""} {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%s after reset: %q, want %q", dir, got, want)
		}
	}
}

// Recycling undoes what a run left, down to the workspace's mode and
// times, and says so when something stays.
func TestRecycleRestoresTheStartingState(t *testing.T) {
	p := newPeer(t)
	view := p.s.observe()
	for _, f := range []string{"x/y", "outputs/z", "locked/deep/f"} {
		full := filepath.Join(p.dirs.workspace, f)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("implant"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = unix.Mkfifo(filepath.Join(p.dirs.tmp, "fifo"), 0o600)
	_ = os.Symlink("/etc/passwd", filepath.Join(p.dirs.scratch[0], "link"))
	for _, d := range []string{"locked/deep", "locked"} {
		_ = os.Chmod(filepath.Join(p.dirs.workspace, d), 0)
	}
	_ = os.Chmod(p.dirs.workspace, 0o700)
	if len(fresh.Differences(view, p.s.observe())) == 0 {
		t.Fatal("the implants went unseen")
	}
	if _, res := p.fileOp(1, supervisor.OpRecycle, supervisor.FileRequest{}); res.Error != "" {
		t.Fatalf("recycle: %+v", res)
	}
	if d := fresh.Differences(view, p.s.observe()); len(d) > 0 {
		t.Fatalf("after recycling: %v", d)
	}

	// The warm runtimes start in the same round trip, each said ready or
	// failed.
	ready := supervisor.WarmRequest{Argv: []string{"sh", "-c", "echo ready >&4; read x <&3"}, Stands: []string{"sh", "main.sh"}, TimeoutMS: 10000}
	missing := supervisor.WarmRequest{Argv: []string{"no-such-runtime"}, Stands: []string{"no-such-runtime"}, TimeoutMS: 10000}
	_, res := p.fileOp(2, supervisor.OpRecycle, supervisor.FileRequest{Warm: []supervisor.WarmRequest{ready, missing}})
	if res.Error != "" || len(res.WarmErrors) != 2 || res.WarmErrors[0] != "" || !strings.Contains(res.WarmErrors[1], "no-such-runtime") {
		t.Fatalf("recycle with warm runtimes: %+v", res)
	}
	if !p.s.warms.Drop(ready.Stands) {
		t.Fatal("the warm runtime is not there")
	}

	// What cannot be undone is reported, never hidden.
	p.s.kernelObjects = func() []string { return []string{"ipc shm 0x1234 7"} }
	_, res = p.fileOp(3, supervisor.OpRecycle, supervisor.FileRequest{Warm: []supervisor.WarmRequest{ready}})
	if res.ErrorKind != supervisor.ErrNotFresh || len(res.WarmErrors) > 0 || !strings.Contains(res.Error, "left: ipc shm 0x1234 7") {
		t.Fatalf("recycle with an object left: %+v", res)
	}
}

// The supervisor takes whatever arrives on its stdin: malformed lines,
// unknown ops and ids, workspace operations on hostile paths. Execs are
// left out (the fuzzer would run commands on the test's host), and so are
// the operations that finish in the background.
func FuzzServe(f *testing.F) {
	f.Add(`{"op":"put","id":1,"file":{"path":"a/b","max":10}}` + "\n" + `{"op":"in","id":1,"data":"eA=="}` + "\n" + `{"op":"in_close","id":1}`)
	f.Add(`{"op":"list","id":2,"file":{"path":".","recursive":true}}` + "\n" + `{"op":"remove","id":3,"file":{"path":"../x"}}`)
	f.Add(`{"op":"kill","id":9}` + "\n" + `{"op":"in","id":9}` + "\n{torn\n\n" + `{"op":"hello","nonce":"n"}`)
	f.Fuzz(func(t *testing.T, lines string) {
		p := newPeer(t)
		for _, line := range strings.Split(lines, "\n") {
			var m supervisor.Message
			if json.Unmarshal([]byte(line), &m) == nil {
				switch m.Op {
				case supervisor.OpExec, supervisor.OpGet, supervisor.OpTar, supervisor.OpReset:
					continue
				}
			}
			p.sendLine(line)
		}
		p.send(supervisor.Message{Op: supervisor.OpHello, Nonce: "end"})
		for {
			if m := p.next(); m.Op == supervisor.OpHello && m.Nonce == "end" {
				return // still serving
			}
		}
	})
}

// A program runs niced from its first instruction: the fork itself comes
// from a niced thread.
func TestProgramsStartNiced(t *testing.T) {
	p := newPeer(t)
	out, _, res := p.exec(1, supervisor.ExecRequest{Argv: []string{"cat", "/proc/self/stat"}, Env: []string{"PATH=/usr/bin:/bin"}, TimeoutMS: 5000, OutputLimit: 1 << 20})
	fields := strings.Fields(out[strings.LastIndexByte(out, ')')+1:])
	if res.ExitCode != 0 || len(fields) < 17 || fields[16] != "10" {
		t.Fatalf("nice of the program: %q (%+v)", fields, res)
	}
}

// An isolated exec is the first process of a PID namespace of its own, as
// its own uid: it names no process outside, so no signal of its reaches
// the supervisor; its exit status, output and usage come back as any
// exec's. One not isolated sees the supervisor's namespace. (Here, on
// Linux, the probe finds PID 1 shielded and would isolate nothing: the
// test turns isolation on.)
func TestIsolatedProgramsCannotNameTheSupervisor(t *testing.T) {
	p := newPeer(t)
	if p.s.spawner.Effective(supervisor.IsolateProgram) != supervisor.IsolateNone {
		t.Fatal("the probe found a kernel that does not shield a namespace's first process")
	}
	p.s.spawner.IsolateAnyway()
	script := `echo $$; kill -0 ` + strconv.Itoa(os.Getpid()) + ` 2>/dev/null && echo reached || echo unreached; id -u; exit 3`
	out, _, res := p.exec(1, supervisor.ExecRequest{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		TimeoutMS: 5000, OutputLimit: 1 << 20, Isolate: supervisor.IsolateProgram})
	if want := "1\nunreached\n" + strconv.Itoa(os.Getuid()) + "\n"; out != want || res.ExitCode != 3 || res.UserUS+res.SysUS == 0 {
		t.Fatalf("isolated: %q, want %q (%+v)", out, want, res)
	}
	out, _, _ = p.exec(2, supervisor.ExecRequest{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		TimeoutMS: 5000, OutputLimit: 1 << 20})
	if pidOf(out) == 1 || !strings.Contains(out, "\nreached\n") {
		t.Fatalf("not isolated: %q", out)
	}
}

// A session's programs share a namespace the supervisor is not in: a
// background process of one exec is there for the next, neither can name
// the supervisor, and exit statuses, output and usage come back as any
// exec's. When the namespace's holder dies, what ran in it ends as
// killed, and the next exec gets a new namespace.
func TestSessionProgramsShareANamespaceOutOfReach(t *testing.T) {
	p := newPeer(t)
	p.s.spawner.IsolateAnyway() // the probe says no here
	env := []string{"PATH=/usr/bin:/bin"}
	session := func(id uint64, script string) (string, *supervisor.ExecResult) {
		t.Helper()
		out, errOut, res := p.exec(id, supervisor.ExecRequest{Argv: []string{"sh", "-c", script}, Env: env, TimeoutMS: 10000,
			OutputLimit: 1 << 20, Isolate: supervisor.IsolateSession})
		if res.StartError != "" || errOut != "" {
			t.Fatalf("exec %d: %+v, stderr %q", id, res, errOut)
		}
		return out, res
	}
	reach := `kill -0 ` + strconv.Itoa(os.Getpid()) + ` 2>/dev/null && echo reached || echo unreached`
	out, res := session(1, `sleep 60 >/dev/null 2>&1 & echo $!; `+reach+`; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3`)
	background := pidOf(out)
	if background <= 1 || !strings.HasSuffix(out, "\nunreached\n") || res.ExitCode != 3 || res.UserUS+res.SysUS == 0 {
		t.Fatalf("first exec: %q (%+v)", out, res)
	}
	out, res = session(2, `kill -0 `+strconv.Itoa(background)+` && echo there; kill -0 1 && echo holder; `+reach+`; pwd`)
	if want := "there\nholder\nunreached\n" + p.dirs.workspace + "\n"; out != want || res.ExitCode != 0 {
		t.Fatalf("second exec: %q, want %q (%+v)", out, want, res)
	}
	// A start that fails says why, as a cold start does.
	_, _, res = p.exec(3, supervisor.ExecRequest{Argv: []string{"/nonexistent"}, Env: env, TimeoutMS: 5000, Isolate: supervisor.IsolateSession})
	if res.ExitCode != 127 && res.StartError == "" {
		t.Fatalf("a missing program: %+v", res)
	}

	// The holder dies while an exec runs.
	first := p.s.spawner.HolderPID()
	p.send(supervisor.Message{Op: supervisor.OpExec, ID: 4, Exec: &supervisor.ExecRequest{Argv: []string{"sleep", "30"}, Env: env,
		Dir: p.dirs.workspace, TimeoutMS: 20000, Isolate: supervisor.IsolateSession}})
	time.Sleep(300 * time.Millisecond)
	_ = unix.Kill(first, unix.SIGKILL)
	for m := p.next(); ; m = p.next() {
		if m.ID == 4 && m.Op == supervisor.OpExit {
			if m.Result.Signal != "SIGKILL" || m.Result.TimedOut {
				t.Fatalf("an exec whose namespace ended: %+v", m.Result)
			}
			break
		}
	}
	out, _ = session(5, `kill -0 `+strconv.Itoa(background)+` 2>/dev/null && echo there || echo gone; echo $$`)
	if !strings.HasPrefix(out, "gone\n") || p.s.spawner.HolderPID() == first {
		t.Fatalf("after the holder died: %q", out)
	}
}

// pidOf is the number on out's first line.
func pidOf(out string) int {
	n, _ := strconv.Atoi(strings.SplitN(out, "\n", 2)[0])
	return n
}

// TestMain lets the test binary stand in for sandbox-init as the
// isolation helper (the server's self is the test binary here).
func TestMain(m *testing.M) {
	runHelper(os.Args)
	os.Exit(m.Run())
}

// The thread reserve is there at once: n threads, not the few the runtime
// would reuse if the goroutines took turns.
func TestReserveThreads(t *testing.T) {
	tasks := func() int {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	before := tasks()
	reserveThreads(supervisor.ReservedThreads)
	if got := tasks(); got < supervisor.ReservedThreads || got < before {
		t.Fatalf("%d threads after reserving %d (%d before)", got, supervisor.ReservedThreads, before)
	}
}
