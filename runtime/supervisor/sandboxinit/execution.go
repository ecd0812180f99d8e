package sandboxinit

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/warm"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/workspace"
)

// execution is one started process and everything it spawns.
type execution struct {
	s   *server
	id  uint64
	req supervisor.ExecRequest

	pid       int // the main process
	started   time.Time
	oomBefore int64
	outputs   workspace.Outputs    // the watched outputs before it started
	exited    chan unix.WaitStatus // the reaper delivers the main process's status

	stdinW      *os.File // our end of the program's stdin, nil if /dev/null
	stdinMu     sync.Mutex
	stdinCh     chan []byte
	stdinClosed bool
	childEnds   []*os.File // the program's ends, closed once it started
	outR, errR  *os.File
	pty         *os.File // a terminal execution's master

	timedOut atomic.Bool
	killed   atomic.Bool
	over     chan struct{} // closed once the main process was reaped
	kernel   int           // a cell's: its context's kernel, all that a kill ends

	warm       bool   // a warm process runs it
	warmMissed string // why one could not

	// Per stream (stdout, stderr): bytes produced and sent. Each is
	// written by the one goroutine that pumps its stream.
	produced [2]int64
	sent     [2]int64

	usageMu sync.Mutex
	userUS  int64
	sysUS   int64
	maxRSS  int64
}

func newExecution(s *server, id uint64, req supervisor.ExecRequest) *execution {
	return &execution{s: s, id: id, req: req, exited: make(chan unix.WaitStatus, 1), over: make(chan struct{})}
}

// openPipes returns the child's stdin, stdout and stderr.
func (e *execution) openPipes(withStdin bool) ([]uintptr, error) {
	var stdin *os.File
	if withStdin {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		stdin, e.stdinW = r, w
		e.stdinCh = make(chan []byte, 1)
		go e.writeStdin()
	} else {
		// An empty pipe, as a warm process's stdin is when the run sends
		// nothing: the program sees the same either way.
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		w.Close()
		stdin = r
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	e.outR, e.errR = outR, errR
	e.childEnds = []*os.File{stdin, outW, errW}
	return []uintptr{stdin.Fd(), outW.Fd(), errW.Fd()}, nil
}

func (e *execution) closeChildEnds() {
	for _, f := range e.childEnds {
		f.Close()
	}
	e.childEnds = nil
}

// abort releases what openPipes made when the process never started.
func (e *execution) abort() {
	e.closeStdin()
	e.outR.Close()
	e.errR.Close()
}

// feed queues one stdin chunk. The host sends the next only after our ack,
// so the queue never holds more than one chunk; a host that floods us
// anyway loses the excess rather than blocking the protocol.
// A chunk that arrives after the program ended (the host had it in flight)
// is dropped.
func (e *execution) feed(data []byte) {
	e.stdinMu.Lock()
	defer e.stdinMu.Unlock()
	if e.stdinCh == nil || e.stdinClosed {
		return
	}
	select {
	case e.stdinCh <- data:
	default:
	}
}

func (e *execution) closeStdin() {
	e.stdinMu.Lock()
	defer e.stdinMu.Unlock()
	if !e.stdinClosed && e.stdinCh != nil {
		close(e.stdinCh)
	}
	e.stdinClosed = true
}

// writeStdin copies queued chunks into the program's stdin and acks each
// one, even when the program has stopped reading (the data is dropped then).
func (e *execution) writeStdin() {
	broken := false
	for data := range e.stdinCh {
		if !broken {
			if _, err := e.stdinW.Write(data); err != nil {
				broken = true
			}
		}
		e.s.send(supervisor.Message{Op: supervisor.OpInAck, ID: e.id})
	}
	e.stdinW.Close()
}

// pump streams one output pipe to the host until it ends.
func (e *execution) pump(stream string, r *os.File, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		e.emit(stream, buf[:n])
		if err != nil {
			return
		}
	}
}

// emit sends output to the host up to the output limit; past it the bytes
// are counted and dropped, so the program never blocks on a pipe.
func (e *execution) emit(stream string, data []byte) {
	i := 0
	if stream == supervisor.Stderr {
		i = 1
	}
	e.produced[i] += int64(len(data))
	if room := e.req.OutputLimit - e.sent[i]; room > 0 && len(data) > 0 {
		chunk := data[:min(int64(len(data)), room)]
		e.sent[i] += int64(len(chunk))
		e.s.send(supervisor.Message{Op: supervisor.OpOut, ID: e.id, Stream: stream, Data: chunk})
	}
}

// outputResult fills in what the execution printed.
func (e *execution) outputResult(res *supervisor.ExecResult) {
	res.StdoutBytes, res.StderrBytes = e.produced[0], e.produced[1]
	res.Truncated = e.produced[0] > e.req.OutputLimit || e.produced[1] > e.req.OutputLimit
}

// follow waits for the main process, enforces the deadline, collects the
// output and reports the result.
func (e *execution) follow() {
	var pumps sync.WaitGroup
	pumps.Add(2)
	go e.pump(supervisor.Stdout, e.outR, &pumps)
	go e.pump(supervisor.Stderr, e.errR, &pumps)

	deadline := time.NewTimer(e.timeout())
	defer deadline.Stop()

	survivors := 0
	var ws unix.WaitStatus
	select {
	case ws = <-e.exited:
	case <-deadline.C:
		e.timedOut.Store(true)
		survivors = e.end()
		select {
		case ws = <-e.exited:
		case <-time.After(commandKillWait):
			survivors = max(survivors, e.s.endAll()) // see end
			ws = <-e.exited
		}
	}
	close(e.over)
	duration := time.Since(e.started)
	e.closeStdin()

	// What a one-shot run left, or what raced a deadline or kill: a
	// session's command had its tree ended while its main process lived.
	if e.req.KillOnExit || (e.timedOut.Load() || e.killed.Load()) && !e.endsAlone() {
		survivors = max(survivors, e.s.endAll())
	}
	e.awaitPumps(&pumps)

	res := &supervisor.ExecResult{
		ExitCode:   ws.ExitStatus(),
		TimedOut:   e.timedOut.Load(),
		DurationUS: duration.Microseconds(),
		Survivors:  survivors,
		Warm:       e.warm,
		WarmMissed: e.warmMissed,
	}
	e.outputResult(res)
	e.ended(res, ws)
	e.usageMu.Lock()
	res.UserUS, res.SysUS, res.MaxRSSBytes = e.userUS, e.sysUS, e.maxRSS
	e.usageMu.Unlock()
	e.s.finish(e, res)
}

// awaitPumps waits for the pumps to read the output pipes to their end.
// With everything dead that is at once. Processes left running on purpose
// (a session's background server) may hold the pipes open: once the pipes
// hold nothing unread, after a moment, stop waiting and close them. A
// loaded machine can keep a pump from running for that moment with the
// program's last output in its pipe, so that is read first, for up to a
// second more.
func (e *execution) awaitPumps(pumps *sync.WaitGroup) {
	pumped := make(chan struct{})
	go func() { pumps.Wait(); close(pumped) }()
	giveUp := time.Now().Add(time.Second)
	for wait := 100 * time.Millisecond; ; wait = 10 * time.Millisecond {
		select {
		case <-pumped:
			return
		case <-time.After(wait):
		}
		if unread(e.outR)+unread(e.errR) == 0 || time.Now().After(giveUp) {
			break
		}
	}
	e.outR.Close()
	e.errR.Close()
	<-pumped
}

// unread is how many bytes the pipe r holds that no one has read yet.
func unread(r *os.File) int {
	raw, err := r.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) // TIOCINQ is FIONREAD
	return n
}

// timeout is the execution's deadline from its start.
func (e *execution) timeout() time.Duration {
	if t := time.Duration(e.req.TimeoutMS) * time.Millisecond; t > 0 {
		return t
	}
	return 30 * time.Second
}

// ended fills in how a process that ended with ws ended: its signal, and
// whether the kernel killed something for memory meanwhile.
func (e *execution) ended(res *supervisor.ExecResult, ws unix.WaitStatus) {
	if ws.Signaled() {
		res.ExitCode = 128 + int(ws.Signal())
		res.Signal = unix.SignalName(ws.Signal())
	}
	if after := procs.OOMKills(); e.oomBefore >= 0 && after > e.oomBefore {
		res.OOMKilled = true
	}
}

// kill ends the execution now (the host gave up on it): everything it
// may have started, or a cell's kernel and what it started.
func (e *execution) kill() {
	e.killed.Store(true)
	if e.kernel > 0 {
		procs.KillTree(e.kernel)
		return
	}
	if e.endsAlone() {
		// Once the main process was reaped the command is over: its pid
		// may be another's now, and what it left is the session's.
		e.s.mu.Lock()
		running := e.s.byPID[e.pid] == e
		e.s.mu.Unlock()
		if !running {
			return
		}
	}
	if e.end(); e.endsAlone() {
		go func() {
			select {
			case <-e.over:
			case <-time.After(commandKillWait):
				e.s.endAll() // see end
			}
		}()
	}
}

// commandKillWait is how long a session's command whose tree was killed
// may take to be reaped before everything is ended instead.
const commandKillWait = time.Second

// end ends what the execution started, while its main process lives, and
// says how many processes survived: a session's command (KeepOthers) its
// process group and descendants (what it orphaned before lives on, as a
// session's background processes do), anything else every process but
// the supervisor's own. What survives the tree's kill, and a command
// that does not die of it (it waits on a process that cannot run, such
// as a stopped PID 1) within commandKillWait, have everything ended,
// rather than run past the deadline.
func (e *execution) end() int {
	if !e.endsAlone() {
		return e.s.endAll()
	}
	if n := procs.KillTree(e.pid); n > 0 {
		// What resists its tree's kill is ended with everything.
		return max(n, e.s.endAll())
	}
	return 0
}

// endsAlone says whether a deadline or kill ends this execution's own
// processes alone (see end).
func (e *execution) endsAlone() bool { return e.req.KeepOthers && !e.req.KillOnExit }

// account adds a reaped process's resource use.
func (e *execution) account(ru *unix.Rusage) {
	e.usageMu.Lock()
	defer e.usageMu.Unlock()
	e.userUS += ru.Utime.Sec*1e6 + int64(ru.Utime.Usec)
	e.sysUS += ru.Stime.Sec*1e6 + int64(ru.Stime.Usec)
	e.maxRSS = max(e.maxRSS, ru.Maxrss*1024)
}

// handOver makes the warm process e's: its pipes are e's, and the
// program's argv, environment and directory go down its go pipe.
func (e *execution) handOver(w *warm.Process, env []string, dir string) {
	e.outR, e.errR = w.Stdout, w.Stderr
	if e.req.Stdin {
		e.stdinW = w.Stdin
		e.stdinCh = make(chan []byte, 1)
		go e.writeStdin()
	} else {
		w.Stdin.Close() // an empty stdin, as a cold start has
	}
	w.Go(e.req.Argv, env, dir)
}
