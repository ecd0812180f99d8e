package supervisor

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrDead means the supervisor stopped answering or broke the protocol; the
// container must be destroyed.
var ErrDead = errors.New("sandbox supervisor is gone")

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
	err    error
	done   chan struct{}
}

type call struct {
	limit    int64
	sent     [2]int64 // bytes delivered per stream, enforced here too
	out      func(stream string, data []byte)
	acks     chan struct{}
	result   chan ExecResult
	finished bool
}

// NewConn starts reading r (the supervisor's stdout) in a goroutine that
// ends when r does. w is the supervisor's stdin.
func NewConn(r io.Reader, w io.Writer) *Conn {
	c := &Conn{w: w, calls: map[uint64]*call{}, hello: map[string]chan int{}, done: make(chan struct{})}
	go c.readLoop(r)
	return c
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
		err = c.send(Message{Op: OpHello, Nonce: nonce})
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
	cl := &call{limit: req.OutputLimit, out: out, acks: make(chan struct{}, 1), result: make(chan ExecResult, 1)}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return ExecResult{}, c.err
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

	if err := c.send(Message{Op: OpExec, ID: id, Exec: &req}); err != nil {
		return ExecResult{}, err
	}
	stdinDone := make(chan struct{})
	if stdin != nil {
		go c.feed(id, cl, stdin, stdinDone)
	}
	defer close(stdinDone)

	backstop := time.NewTimer(time.Duration(req.TimeoutMS)*time.Millisecond + killGrace)
	defer backstop.Stop()
	select {
	case res := <-cl.result:
		return res, nil
	case <-c.done:
		return ExecResult{}, c.Err()
	case <-backstop.C:
		return ExecResult{}, fmt.Errorf("%w: no exit report %s past the deadline", ErrDead, killGrace)
	case <-ctx.Done():
	}
	_ = c.send(Message{Op: OpKill, ID: id})
	select {
	case res := <-cl.result:
		return res, nil
	case <-c.done:
		return ExecResult{}, c.Err()
	case <-time.After(killGrace):
		return ExecResult{}, fmt.Errorf("%w: no exit report %s after kill", ErrDead, killGrace)
	}
}

// feed streams stdin one chunk per ack, so the supervisor never buffers more
// than one chunk for a program that does not read.
func (c *Conn) feed(id uint64, cl *call, stdin io.Reader, done <-chan struct{}) {
	buf := make([]byte, StdinChunk)
	for {
		n, err := stdin.Read(buf)
		if n > 0 {
			if c.send(Message{Op: OpStdin, ID: id, Data: buf[:n]}) != nil {
				return
			}
			select {
			case <-cl.acks:
			case <-done:
				return
			}
		}
		if err != nil {
			_ = c.send(Message{Op: OpStdinClose, ID: id})
			return
		}
	}
}

func (c *Conn) readLoop(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var err error
	for sc.Scan() {
		var m Message
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err = json.Unmarshal(sc.Bytes(), &m); err != nil {
			err = fmt.Errorf("%w: malformed message: %v", ErrDead, err)
			break
		}
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
	cl := c.calls[m.ID]
	c.mu.Unlock()
	if cl == nil || cl.finished {
		return nil
	}
	switch m.Op {
	case OpOut:
		i := 0
		if m.Stream == Stderr {
			i = 1
		} else if m.Stream != Stdout {
			return fmt.Errorf("%w: output on unknown stream %q", ErrDead, m.Stream)
		}
		data := m.Data
		if room := cl.limit - cl.sent[i]; int64(len(data)) > room {
			data = data[:max(room, 0)]
		}
		cl.sent[i] += int64(len(data))
		if len(data) > 0 && cl.out != nil {
			cl.out(m.Stream, data)
		}
	case OpStdinAck:
		select {
		case cl.acks <- struct{}{}:
		default:
		}
	case OpExit:
		if m.Result == nil {
			return fmt.Errorf("%w: exit without a result", ErrDead)
		}
		cl.finished = true
		cl.result <- *m.Result
	default:
		return fmt.Errorf("%w: unknown message %q", ErrDead, m.Op)
	}
	return nil
}
