package sandboxinit

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/environ"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/workspace"
)

// Contexts: a kernel is a long-lived interpreter, the language plugin's
// context command, that runs the cells it is sent in one namespace. It
// reads a cell as a JSON line on its descriptor 3, writes its output to 1
// and 2 as any program does, then the cell's mark on both (a token of the
// cell's own after supervisor.ContextMark), then a JSON reply line on its
// descriptor 4. A cell is an execution like any
// other: the same deadline, output cap and kill; a kernel that ends during
// one (or between two) is started afresh, and the result says its state
// is gone.

// maxReply bounds a kernel's reply line (its display data included).
const maxReply = 32 << 20

// kernel is one context's interpreter.
type kernel struct {
	name     string
	language string // Cell.Language
	pid      int
	started  time.Time
	requests *os.File       // its descriptor 3
	replies  chan cellReply // read from its descriptor 4; closed when that ends
	exited   chan unix.WaitStatus
	marks    chan string   // the stream a cell's mark was seen on
	pumped   chan struct{} // closed once its stdout and stderr ended
	dropped  bool          // ended on purpose (reset, an end request): nothing lost to report; s.mu

	mu    sync.Mutex
	cur   *execution // the cell running now, whose output this is
	mark  []byte     // the mark that ends its output
	cells int
}

type cellReply struct {
	Name     string               `json:"name"`   // the cell's, as it was sent
	Status   string               `json:"status"` // ok, error, exit
	ExitCode int                  `json:"exit_code"`
	Display  []supervisor.Display `json:"display"`
}

// kernelKillWait is how long a kernel killed at its cell's deadline may
// take to be reaped before everything is ended instead.
const kernelKillWait = 3 * time.Second

// startCell sends a cell to its context's kernel, starting the kernel
// first when it is not running, and follows it to its reply.
func (s *server) startCell(id uint64, req supervisor.ExecRequest, outputs workspace.Outputs, fail func(int, error)) {
	e := newExecution(s, id, req)
	e.outputs = outputs
	k, fresh, err := s.kernelFor(req)
	if err != nil {
		fail(126, err)
		return
	}
	k.mu.Lock()
	busy := k.cur != nil
	if !busy {
		k.cur = e
		k.cells++
		e.kernel = k.pid
	}
	cell := k.cells
	k.mu.Unlock()
	if busy {
		fail(126, fmt.Errorf("context %s is running another cell", k.name))
		return
	}
	s.mu.Lock()
	s.execs[id] = e
	e.oomBefore = procs.OOMKills()
	e.started = time.Now()
	s.mu.Unlock()
	go e.followCell(k, cell, fresh)
}

// kernelFor is the running kernel of the request's context, or a new one;
// fresh says why state was lost when one is started ("" for a context
// never started), nil when the kernel was running.
func (s *server) kernelFor(req supervisor.ExecRequest) (*kernel, *supervisor.CellResult, error) {
	name := req.Cell.Name
	s.mu.Lock()
	k, lost := s.contexts[name], s.lostContexts[name]
	delete(s.lostContexts, name)
	s.mu.Unlock()
	if k != nil {
		if k.language != req.Cell.Language {
			return nil, nil, fmt.Errorf("context %s runs %s: end it, or name another context for %s", name, cmp.Or(k.language, "another language"), cmp.Or(req.Cell.Language, "this language"))
		}
		return k, nil, nil
	}
	if len(req.Argv) == 0 {
		return nil, nil, errors.New("the language has no context command")
	}
	env := environ.Merge(os.Environ(), req.Env)
	dir := req.Dir
	if dir == "" {
		dir = s.workspace
	}
	argv0, err := environ.LookPath(req.Argv[0], dir, environ.Value(env, "PATH"))
	if err != nil {
		return nil, nil, err
	}
	var opened []*os.File
	pipe := func() (r, w *os.File) {
		if err == nil {
			if r, w, err = os.Pipe(); err == nil {
				opened = append(opened, r, w)
			}
		}
		return r, w
	}
	outR, outW := pipe()
	errR, errW := pipe()
	reqR, reqW := pipe()
	repR, repW := pipe()
	devnull, derr := os.Open(os.DevNull)
	if err == nil && derr != nil {
		err = derr
	}
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	if err != nil {
		closeAll(opened...)
		closeAll(devnull)
		return nil, nil, err
	}
	k = &kernel{name: name, language: req.Cell.Language, started: time.Now(), requests: reqW, replies: make(chan cellReply, 1),
		exited: make(chan unix.WaitStatus, 1), marks: make(chan string, 2), pumped: make(chan struct{})}
	s.mu.Lock()
	// Contexts are a session's, in its namespace.
	k.pid, _, err = s.spawner.Spawn(argv0, req.Argv, dir, env, []uintptr{devnull.Fd(), outW.Fd(), errW.Fd(), reqR.Fd(), repW.Fd()},
		&syscall.SysProcAttr{Setpgid: true}, supervisor.IsolateSession)
	if err == nil {
		s.contexts[name] = k
		s.kernelByPID[k.pid] = k
	}
	s.mu.Unlock()
	closeAll(devnull, outW, errW, reqR, repW) // the kernel's ends
	if err != nil {
		closeAll(outR, errR, reqW, repR)
		return nil, nil, err
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go k.pump(supervisor.Stdout, outR, &pumps)
	go k.pump(supervisor.Stderr, errR, &pumps)
	go func() { pumps.Wait(); close(k.pumped) }()
	go k.readReplies(repR)
	return k, &supervisor.CellResult{Started: true, Lost: lost}, nil
}

// pump forwards a kernel's output to the cell running now, and notes each
// mark that ends a cell's output.
func (k *kernel) pump(stream string, r *os.File, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.Close()
	buf := make([]byte, 32<<10)
	var pending []byte
	for {
		n, err := r.Read(buf)
		pending = append(pending, buf[:n]...)
		k.mu.Lock()
		mark := k.mark
		k.mu.Unlock()
		if i := bytes.Index(pending, mark); len(mark) > 0 && i >= 0 {
			k.emit(stream, pending[:i])
			pending = pending[i+len(mark):]
			select {
			case k.marks <- stream:
			default:
			}
		}
		// Hold back what may be the start of the mark.
		keep := 0
		for j := min(len(pending), len(mark)-1); j > 0; j-- {
			if bytes.HasSuffix(pending, mark[:j]) {
				keep = j
				break
			}
		}
		if err != nil {
			keep = 0
		}
		k.emit(stream, pending[:len(pending)-keep])
		pending = append([]byte(nil), pending[len(pending)-keep:]...)
		if err != nil {
			return
		}
	}
}

func (k *kernel) emit(stream string, data []byte) {
	if len(data) == 0 {
		return
	}
	k.mu.Lock()
	e := k.cur
	k.mu.Unlock()
	if e != nil { // output between cells (a background thread's) has no one to go to
		e.emit(stream, data)
	}
}

func (k *kernel) readReplies(r *os.File) {
	defer r.Close()
	defer close(k.replies)
	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 64<<10), maxReply)
	for in.Scan() {
		var rep cellReply
		if err := json.Unmarshal(in.Bytes(), &rep); err != nil {
			rep = cellReply{Status: "error", ExitCode: 1}
		}
		k.replies <- rep
	}
}

// kernelCell is a cell as the kernel reads it (see Language.ContextCommand).
type kernelCell struct {
	Code string            `json:"code"`
	Name string            `json:"name"`
	Mark string            `json:"mark"`
	Env  map[string]string `json:"env,omitempty"`
}

// followCell sends the cell and waits for its reply, the deadline, or the
// kernel's end, then reports the result.
func (e *execution) followCell(k *kernel, cell int, fresh *supervisor.CellResult) {
	deadline := time.NewTimer(e.timeout())
	defer deadline.Stop()
	res := &supervisor.ExecResult{Context: &supervisor.CellResult{}}
	if fresh != nil {
		res.Context = fresh
	}
	name := fmt.Sprintf("<%s cell %d>", k.name, cell)
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	mark := supervisor.ContextMark + hex.EncodeToString(token) + "\x1e\x00"
	k.mu.Lock()
	k.mark = []byte(mark)
	k.mu.Unlock()
	for len(k.marks) > 0 { // a mark of a cell that timed out
		<-k.marks
	}
	line, _ := json.Marshal(kernelCell{Code: e.req.Cell.Code, Name: name, Mark: mark, Env: e.req.Cell.Env})
	// A kernel that stopped reading must not hold up the deadline.
	go func() { _, _ = k.requests.Write(append(line, '\n')) }()

	cpu0 := procs.Process(k.pid)
	var ws unix.WaitStatus
	died := false
	replies := k.repliesTo(name)
	select {
	case rep, ok := <-replies:
		if ok {
			res.ExitCode, res.Display = rep.ExitCode, rep.Display
			// The marks follow the kernel's last output; a program that
			// closed its stdout writes none there.
			seen := map[string]bool{}
			for wait := time.After(200 * time.Millisecond); len(seen) < 2; {
				select {
				case stream := <-k.marks:
					seen[stream] = true
					continue
				case <-wait:
				}
				break
			}
			break
		}
		_ = unix.Kill(-k.pid, unix.SIGKILL) // it closed its reply descriptor: it cannot answer again
		ws, died = <-k.exited, true
	case ws = <-k.exited:
		died = true
	case <-deadline.C:
		// The context's kernel and what its cells started: the other
		// contexts and the session's servers live on.
		e.timedOut.Store(true)
		res.Survivors = procs.KillTree(k.pid)
		select {
		case ws = <-k.exited:
		case <-time.After(kernelKillWait):
			// It did not die of it (a pid gone wrong): end everything
			// rather than run past the deadline.
			res.Survivors = max(res.Survivors, e.s.endAll())
			ws = <-k.exited
		}
		died = true
	}
	res.DurationUS = time.Since(e.started).Microseconds()
	res.TimedOut = e.timedOut.Load()
	// A live kernel's use is what /proc says it grew by; a dead one's the
	// reaper counted.
	used := procs.Usage{}
	if !died {
		cpu1 := procs.Process(k.pid)
		used = procs.Usage{User: max(cpu1.User-cpu0.User, 0), Sys: max(cpu1.Sys-cpu0.Sys, 0), PeakRSS: cpu1.PeakRSS}
	}
	if died {
		select {
		case <-k.pumped:
		case <-time.After(100 * time.Millisecond): // a child of it holds its stdout
		}
		res.ExitCode = ws.ExitStatus()
		e.ended(res, ws)
		res.Context.Lost = kernelEnd(res) + ": the context's state is gone, and it starts afresh on its next use"
		if e.killed.Load() { // the client went away: its next cell is told instead
			e.s.mu.Lock()
			e.s.lostContexts[k.name] = "the interpreter was ended when the client of its last cell went away"
			e.s.mu.Unlock()
		}
	} else if after := procs.OOMKills(); e.oomBefore >= 0 && after > e.oomBefore {
		res.OOMKilled = true // a child of the kernel
	}
	k.mu.Lock()
	k.cur, k.mark = nil, nil
	k.mu.Unlock()
	e.outputResult(res)
	e.usageMu.Lock()
	res.UserUS, res.SysUS, res.MaxRSSBytes = e.userUS+used.User, e.sysUS+used.Sys, max(e.maxRSS, used.PeakRSS)
	e.usageMu.Unlock()
	e.s.finish(e, res)
}

// repliesTo passes on the kernel's reply to the cell name, skipping any
// other line (a program can write to the reply descriptor too).
func (k *kernel) repliesTo(name string) <-chan cellReply {
	out := make(chan cellReply, 1)
	go func() {
		defer close(out)
		for rep := range k.replies {
			if rep.Name == name {
				out <- rep
				return
			}
		}
	}()
	return out
}

// kernelEnd says how a kernel ended.
func kernelEnd(res *supervisor.ExecResult) string {
	switch {
	case res.TimedOut:
		return "the interpreter was killed at the deadline"
	case res.OOMKilled:
		return "the interpreter was killed for memory"
	case res.Signal != "":
		return "the interpreter was ended by " + res.Signal
	}
	return fmt.Sprintf("the interpreter exited with status %d", res.ExitCode)
}

// kernelEnded is the reaper's news of a kernel's end.
func (s *server) kernelEnded(k *kernel, ws unix.WaitStatus) {
	delete(s.kernelByPID, k.pid)
	if s.contexts[k.name] == k {
		delete(s.contexts, k.name)
	}
	k.mu.Lock()
	between := k.cur == nil
	k.mu.Unlock()
	if between && !k.dropped {
		why := fmt.Sprintf("the interpreter exited with status %d", ws.ExitStatus())
		if ws.Signaled() {
			why = "the interpreter was ended by " + unix.SignalName(ws.Signal())
		}
		s.lostContexts[k.name] = why + " after the last execution: the context's state is gone"
	}
	k.exited <- ws
}

// dropKernels marks the kernels as ended on purpose (name "": all of
// them), so that no loss is reported, and returns them.
func (s *server) dropKernels(name string) []*kernel {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*kernel
	for n, k := range s.contexts {
		if name == "" || n == name {
			k.dropped = true
			delete(s.contexts, n)
			out = append(out, k)
		}
	}
	if name == "" {
		clear(s.lostContexts)
	} else {
		delete(s.lostContexts, name)
	}
	return out
}

// contextOp lists the kernels or ends one.
func (s *server) contextOp(m supervisor.Message) {
	switch m.Op {
	case supervisor.OpContexts:
		s.mu.Lock()
		list := make([]supervisor.Context, 0, len(s.contexts))
		for _, k := range s.contexts {
			k.mu.Lock()
			c := supervisor.Context{Name: k.name, Language: k.language, PID: k.pid, StartedAt: k.started.UnixNano(), Executions: k.cells}
			k.mu.Unlock()
			c.RSSBytes = procs.Process(k.pid).RSS
			list = append(list, c)
		}
		s.mu.Unlock()
		s.done(m.ID, &supervisor.FileResult{Contexts: list})
	case supervisor.OpContextEnd:
		name := ""
		if m.File != nil {
			name = m.File.Path
		}
		ks := s.dropKernels(name)
		if name == "" || len(ks) == 0 {
			s.done(m.ID, workspace.Refuse(supervisor.ErrNotFound, "no context %q is running", name))
			return
		}
		_ = unix.Kill(-ks[0].pid, unix.SIGKILL)
		s.done(m.ID, &supervisor.FileResult{})
	}
}
