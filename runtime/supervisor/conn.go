package supervisor

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// ErrDead means the supervisor stopped answering or broke the protocol; the
// container must be destroyed.
var ErrDead = errors.New("sandbox supervisor is gone")

// ErrPastDeadline is the ErrDead of an execution whose end the supervisor
// did not report within killGrace of its deadline: the deadline passed,
// and the program is ended with its container.
var ErrPastDeadline = fmt.Errorf("%w: no answer past the deadline", ErrDead)

// killGrace is how long past a deadline the host waits for the exit report
// before it declares the supervisor dead.
const killGrace = 2 * time.Second

// Conn is the host's end of a supervisor's stdio. Safe for concurrent use:
// several executions may run at once over one Conn.
type Conn struct {
	w   io.Writer
	wmu sync.Mutex

	mu     sync.Mutex
	nextID uint64
	calls  map[uint64]*call
	hello  map[string]chan int
	logs   func(line string) // see TakeLogs
	err    error
	done   chan struct{}
	// The time the supervisor spent frozen (Froze, Thawed), which no
	// deadline of a call counts: a frozen supervisor cannot answer.
	frozenAt    time.Time
	frozenTotal time.Duration
}

// Froze says the supervisor is frozen from now: calls under way wait for
// it, past their deadlines.
func (c *Conn) Froze() {
	c.mu.Lock()
	if c.frozenAt.IsZero() {
		c.frozenAt = time.Now()
	}
	c.mu.Unlock()
}

// Thawed says the supervisor runs again.
func (c *Conn) Thawed() {
	c.mu.Lock()
	if !c.frozenAt.IsZero() {
		c.frozenTotal += time.Since(c.frozenAt)
		c.frozenAt = time.Time{}
	}
	c.mu.Unlock()
}

// frozen is the time the supervisor spent frozen so far, and whether it
// is now.
func (c *Conn) frozen() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozenAt.IsZero() {
		return c.frozenTotal, false
	}
	return c.frozenTotal + time.Since(c.frozenAt), true
}

// owed waits out the time the supervisor was frozen since a wait began
// (had counted already): it returns how much longer to wait, and the new
// total counted; 0 when the wait is over.
func (c *Conn) owed(had time.Duration) (time.Duration, time.Duration) {
	total, now := c.frozen()
	switch {
	case now:
		return killGrace, total // frozen still: look again later
	case total > had:
		return total - had, total
	}
	return 0, total
}

// TakeLogs asks the supervisor, at the next Hello, for its diagnostics
// as OpLog messages, each line given to fn (on the reading goroutine:
// fn must not block). Without it they go to the supervisor's stderr.
func (c *Conn) TakeLogs(fn func(line string)) {
	c.mu.Lock()
	c.logs = fn
	c.mu.Unlock()
}

type call struct {
	op       string   // OpExec or a workspace operation
	limit    int64    // exec: bytes per stream; get, tar: bytes in all
	sent     [2]int64 // bytes delivered per stream, enforced here too
	out      func(stream string, data []byte)
	acks     chan struct{}
	end      chan Message // the exit or done message
	finished bool
}

// NewConn starts reading r (the supervisor's stdout) in a goroutine that
// ends when r does. w is the supervisor's stdin.
func NewConn(r io.Reader, w io.Writer) *Conn {
	c := &Conn{w: w, calls: map[uint64]*call{}, hello: map[string]chan int{}, done: make(chan struct{})}
	// Ids start at a random point: after sandboxd restarts and attaches
	// again, late messages for the old connection's calls match nothing.
	var b [4]byte
	_, _ = rand.Read(b[:])
	c.nextID = uint64(b[0])<<40 | uint64(b[1])<<32 | uint64(b[2])<<24 | uint64(b[3])<<16
	go c.readLoop(r)
	return c
}

// TokenSum is the SHA-256 of token, in hex: what a listening supervisor
// is given (EnvTokenSum) to check the token it is shown.
func TokenSum(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken is a fresh token for a supervisor's channel (EnvToken).
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Done is closed when the supervisor is gone; Err says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it lives.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Conn) send(m Message) error {
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%w: %v", ErrDead, err)
	}
	return nil
}

// Hello checks that the supervisor answers and speaks our version. The
// leading newline ends any line torn by an earlier connection, and the
// nonce tells our answer from anything stale.
func (c *Conn) Hello(ctx context.Context) error {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	ch := make(chan int, 1)
	c.mu.Lock()
	c.hello[nonce] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.hello, nonce)
		c.mu.Unlock()
	}()
	c.wmu.Lock()
	_, err := c.w.Write([]byte("\n"))
	c.wmu.Unlock()
	if err == nil {
		c.mu.Lock()
		logs := c.logs != nil
		c.mu.Unlock()
		err = c.send(Message{Op: OpHello, Nonce: nonce, Logs: logs})
	}
	if err != nil {
		return err
	}
	select {
	case v := <-ch:
		if v != Version {
			return fmt.Errorf("%w: supervisor speaks protocol %d, sandboxd %d", ErrDead, v, Version)
		}
		return nil
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return fmt.Errorf("%w: no hello: %v", ErrDead, ctx.Err())
	}
}

// Exec runs one process. out receives output as it arrives (from the read
// goroutine: it must not block long). stdin, if not nil, is streamed in with
// flow control. When ctx ends first the process is killed; if the
// supervisor then stays silent, Exec returns ErrDead.
func (c *Conn) Exec(ctx context.Context, req ExecRequest, stdin io.Reader, out func(stream string, data []byte)) (ExecResult, error) {
	req.Stdin = stdin != nil
	m := Message{Op: OpExec, Exec: &req}
	end, err := c.call(ctx, m, req.OutputLimit, readerFeed(stdin), out, time.Duration(req.TimeoutMS)*time.Millisecond)
	if err != nil {
		return ExecResult{}, err
	}
	return *end.Result, nil
}

// TermInput is one thing done at a terminal: keys typed, or (Size set) the
// window resized.
type TermInput struct {
	Keys []byte
	Size *WinSize
}

// Terminal is Exec on a pseudo-terminal of req.TTY's size: in carries the
// keys and new window sizes (which reach the program as SIGWINCH) in the
// order they happened, out the screen's bytes. in's closing closes the
// terminal's input.
func (c *Conn) Terminal(ctx context.Context, req ExecRequest, in <-chan TermInput, out func(stream string, data []byte)) (ExecResult, error) {
	req.Stdin = true
	m := Message{Op: OpExec, Exec: &req}
	end, err := c.call(ctx, m, req.OutputLimit, terminalFeed(in), out, time.Duration(req.TimeoutMS)*time.Millisecond)
	if err != nil {
		return ExecResult{}, err
	}
	return *end.Result, nil
}

// Warm starts a warm process and waits until it is ready, at most
// req.TimeoutMS. A warm process that fails comes back as the result's
// Error; the error is for a dead or misbehaving supervisor.
func (c *Conn) Warm(ctx context.Context, req WarmRequest) (FileResult, error) {
	end, err := c.call(ctx, Message{Op: OpWarm, Warm: &req}, 0, nil, nil, time.Duration(req.TimeoutMS)*time.Millisecond)
	if err != nil {
		return FileResult{}, err
	}
	return *end.Done, nil
}

// fileOpTimeout bounds a workspace operation that is not streaming data;
// transfers get a second per megabyte on top.
const fileOpTimeout = 30 * time.Second

// File runs one workspace operation (OpPut, OpGet, OpTar, OpList,
// OpRemove, OpReset). For put, in is the file's content; for get and tar,
// data receives the bytes, at most req.Max in all. Failures inside the
// sandbox (no such file, no space) come back in the FileResult; the error
// is for a dead or misbehaving supervisor.
func (c *Conn) File(ctx context.Context, op string, req FileRequest, in io.Reader, data func([]byte)) (FileResult, error) {
	var out func(string, []byte)
	if data != nil {
		out = func(_ string, b []byte) { data(b) }
	}
	end, err := c.call(ctx, Message{Op: op, File: &req}, req.Max, readerFeed(in), out, fileOpTimeout+time.Duration(req.Max>>20)*time.Second)
	if err != nil {
		return FileResult{}, err
	}
	return *end.Done, nil
}

// watchLife bounds a watch's call: it lasts as long as its caller wants,
// and a watch of a quiet directory is silent meanwhile.
const watchLife = 30 * 24 * time.Hour

// Watch streams the changes under a workspace directory (see OpWatch) to
// events, a batch at a time, until ctx ends or the directory goes (the
// result's ErrNotFound). events is called from the read goroutine.
func (c *Conn) Watch(ctx context.Context, req FileRequest, events func([]FileEvent)) (FileResult, error) {
	var bad error
	out := func(_ string, b []byte) {
		var evs []FileEvent
		if err := json.Unmarshal(b, &evs); err != nil {
			bad = err
			return
		}
		events(evs)
	}
	end, err := c.call(ctx, Message{Op: OpWatch, File: &req}, math.MaxInt64, nil, out, watchLife)
	if err != nil {
		return FileResult{}, err
	}
	if bad != nil {
		return FileResult{}, fmt.Errorf("%w: a watch's events do not decode: %v", ErrDead, bad)
	}
	return *end.Done, nil
}

// A feeder streams a call's input (nil: none) until done is closed.
type feeder func(c *Conn, id uint64, cl *call, done <-chan struct{})

// call sends m, runs feed beside it, delivers output and waits for the end
// message. ctx ending first kills the call; a supervisor silent past
// timeout plus a grace is dead.
func (c *Conn) call(ctx context.Context, m Message, limit int64, feed feeder, out func(string, []byte), timeout time.Duration) (Message, error) {
	cl := &call{op: m.Op, limit: limit, out: out, acks: make(chan struct{}, 1), end: make(chan Message, 1)}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return Message{}, c.err
	}
	c.nextID++
	id := c.nextID
	c.calls[id] = cl
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}()

	m.ID = id
	if err := c.send(m); err != nil {
		return Message{}, err
	}
	inDone := make(chan struct{})
	if feed != nil {
		go feed(c, id, cl, inDone)
	}
	defer close(inDone)

	counted, _ := c.frozen()
	end, how := c.await(cl, timeout+killGrace, &counted, ctx.Done())
	switch how {
	case answered:
		return end, nil
	case connEnded:
		return Message{}, c.Err()
	case timedOut:
		return Message{}, fmt.Errorf("%w (%s, %s)", ErrPastDeadline, m.Op, killGrace)
	}
	_ = c.send(Message{Op: OpKill, ID: id})
	switch end, how = c.await(cl, killGrace, &counted, nil); how {
	case answered:
		return end, nil
	case connEnded:
		return Message{}, c.Err()
	}
	return Message{}, fmt.Errorf("%w: no answer to %s %s after kill", ErrDead, m.Op, killGrace)
}

// How a wait for a call's end ended.
type waited int

const (
	answered  waited = iota // the end message came
	connEnded               // the connection ended
	timedOut                // the limit passed
	cancelled               // cancel was closed
)

// await waits for cl's end message, for at most limit plus the time the
// supervisor spends frozen meanwhile (counted is the frozen time already
// waited out), or until cancel is closed.
func (c *Conn) await(cl *call, limit time.Duration, counted *time.Duration, cancel <-chan struct{}) (Message, waited) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case end := <-cl.end:
			return end, answered
		case <-c.done:
			return Message{}, connEnded
		case <-cancel:
			return Message{}, cancelled
		case <-timer.C:
			var more time.Duration
			if more, *counted = c.owed(*counted); more == 0 {
				return Message{}, timedOut
			}
			timer.Reset(more) // it was frozen meanwhile
		}
	}
}

// readerFeed streams in (nil: no input) one chunk per ack, so the
// supervisor never buffers more than one chunk for a program that does
// not read.
func readerFeed(in io.Reader) feeder {
	if in == nil {
		return nil
	}
	return func(c *Conn, id uint64, cl *call, done <-chan struct{}) {
		buf := make([]byte, InChunk)
		for {
			n, err := in.Read(buf)
			if n > 0 && !c.sendIn(id, cl, buf[:n], done) {
				return
			}
			if err != nil {
				_ = c.send(Message{Op: OpInClose, ID: id})
				return
			}
		}
	}
}

// terminalFeed streams a terminal's keys, as readerFeed does, and its
// window sizes in between, in order: keys typed after a resize are read
// at the new size.
func terminalFeed(in <-chan TermInput) feeder {
	return func(c *Conn, id uint64, cl *call, done <-chan struct{}) {
		for {
			var ev TermInput
			var ok bool
			select {
			case ev, ok = <-in:
			case <-done:
				return
			}
			switch {
			case !ok:
				_ = c.send(Message{Op: OpInClose, ID: id})
				return
			case ev.Size != nil:
				if c.send(Message{Op: OpResize, ID: id, Size: ev.Size}) != nil {
					return
				}
			default:
				for keys := ev.Keys; len(keys) > 0; {
					n := min(len(keys), InChunk)
					if !c.sendIn(id, cl, keys[:n], done) {
						return
					}
					keys = keys[n:]
				}
			}
		}
	}
}

// sendIn sends one chunk of input and waits for its ack; false when the
// call or the connection is over.
func (c *Conn) sendIn(id uint64, cl *call, data []byte, done <-chan struct{}) bool {
	if c.send(Message{Op: OpIn, ID: id, Data: data}) != nil {
		return false
	}
	select {
	case <-cl.acks:
		return true
	case <-done:
		return false
	}
}

func (c *Conn) readLoop(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var err error
	// Until the supervisor answers a hello, what comes may be the rest of
	// a line it was writing to a sandboxd that died: skipped, not fatal.
	synced := false
	for sc.Scan() {
		var m Message
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err = json.Unmarshal(sc.Bytes(), &m); err != nil {
			if !synced {
				err = nil
				continue
			}
			err = fmt.Errorf("%w: malformed message: %v", ErrDead, err)
			break
		}
		synced = synced || m.Op == OpHello
		if err = c.dispatch(m); err != nil {
			break
		}
	}
	if err == nil {
		err = sc.Err()
	}
	if err == nil {
		err = io.EOF
	}
	c.mu.Lock()
	if !errors.Is(err, ErrDead) {
		err = fmt.Errorf("%w: %v", ErrDead, err)
	}
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

// dispatch routes one message. Messages for unknown ids are dropped (a call
// that gave up); a message that breaks the rules kills the connection.
// Only the read goroutine touches a call's counters, so the lock is held
// just for the lookup and never while output is delivered.
func (c *Conn) dispatch(m Message) error {
	c.mu.Lock()
	if m.Op == OpHello {
		if ch, ok := c.hello[m.Nonce]; ok {
			select {
			case ch <- m.Version:
			default:
			}
		}
		c.mu.Unlock()
		return nil
	}
	if m.Op == OpLog {
		logs := c.logs
		c.mu.Unlock()
		if logs != nil {
			logs(string(m.Data))
		}
		return nil
	}
	cl := c.calls[m.ID]
	c.mu.Unlock()
	if cl == nil || cl.finished {
		return nil
	}
	switch m.Op {
	case OpOut:
		i := 0
		switch {
		case cl.op == OpExec && m.Stream == Stderr:
			i = 1
		case cl.op == OpExec && m.Stream == Stdout:
		case (cl.op == OpGet || cl.op == OpTar) && m.Stream == Data:
		case cl.op == OpWatch && m.Stream == Events:
		default:
			return fmt.Errorf("%w: output on stream %q for %s", ErrDead, m.Stream, cl.op)
		}
		data := m.Data
		if room := cl.limit - cl.sent[i]; int64(len(data)) > room {
			if cl.op != OpExec {
				return fmt.Errorf("%w: %s sent more than the %d bytes asked for", ErrDead, cl.op, cl.limit)
			}
			data = data[:max(room, 0)]
		}
		cl.sent[i] += int64(len(data))
		if len(data) > 0 && cl.out != nil {
			cl.out(m.Stream, data)
		}
	case OpInAck:
		select {
		case cl.acks <- struct{}{}:
		default:
		}
	case OpExit, OpDone:
		if (m.Op == OpExit) != (cl.op == OpExec) || (m.Op == OpExit && m.Result == nil) || (m.Op == OpDone && m.Done == nil) {
			return fmt.Errorf("%w: %s without its result for %s", ErrDead, m.Op, cl.op)
		}
		cl.finished = true
		cl.end <- m
	default:
		return fmt.Errorf("%w: unknown message %q", ErrDead, m.Op)
	}
	return nil
}
