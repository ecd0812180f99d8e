package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// fakeSupervisor answers on the other end of pipes with scripted replies.
type fakeSupervisor struct {
	in  *bufio.Scanner // what the host sent
	out io.WriteCloser // what we say
}

func newPair(t *testing.T) (*Conn, *fakeSupervisor) {
	hostR, supW := io.Pipe()
	supR, hostW := io.Pipe()
	t.Cleanup(func() { supW.Close(); hostW.Close() })
	sc := bufio.NewScanner(supR)
	sc.Buffer(make([]byte, 1<<20), MaxLine)
	return NewConn(hostR, hostW), &fakeSupervisor{in: sc, out: supW}
}

func (f *fakeSupervisor) next(t *testing.T) Message {
	t.Helper()
	for f.in.Scan() {
		if len(f.in.Bytes()) == 0 {
			continue
		}
		var m Message
		if err := json.Unmarshal(f.in.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatal("host closed")
	return Message{}
}

func (f *fakeSupervisor) say(m Message) {
	b, _ := json.Marshal(m)
	_, _ = f.out.Write(append(b, '\n'))
}

func TestHelloChecksNonceAndVersion(t *testing.T) {
	c, f := newPair(t)
	go func() {
		m := f.next(t)
		f.say(Message{Op: OpHello, Nonce: "stale", Version: Version}) // from an old connection: ignored
		f.say(Message{Op: OpHello, Nonce: m.Nonce, Version: Version})
	}()
	if err := c.Hello(context.Background()); err != nil {
		t.Fatal(err)
	}
	c2, f2 := newPair(t)
	go func() { m := f2.next(t); f2.say(Message{Op: OpHello, Nonce: m.Nonce, Version: 99}) }()
	if err := c2.Hello(context.Background()); !errors.Is(err, ErrDead) {
		t.Fatalf("wrong version accepted: %v", err)
	}
}

// hello has f answer c's hello.
func hello(t *testing.T, c *Conn, f *fakeSupervisor) {
	t.Helper()
	go func() { m := f.next(t); f.say(Message{Op: OpHello, Nonce: m.Nonce, Version: Version}) }()
	if err := c.Hello(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// What a supervisor was writing to a sandboxd that died, the rest of a
// line, comes before its answer to the next sandboxd's hello: skipped.
func TestHelloSkipsTheRestOfAnOldLine(t *testing.T) {
	c, f := newPair(t)
	go func() {
		m := f.next(t)
		_, _ = f.out.Write([]byte(`IHR0aGUgcmVzdCBvZiBhIGNodW5r"}` + "\n"))
		f.say(Message{Op: OpOut, ID: 12345, Stream: Data, Data: []byte("an old call's")})
		f.say(Message{Op: OpHello, Nonce: m.Nonce, Version: Version})
	}()
	if err := c.Hello(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestExecEnforcesOutputLimitItself(t *testing.T) {
	c, f := newPair(t)
	go func() {
		m := f.next(t)
		// A supervisor that ignores the limit, and chatter for other ids.
		f.say(Message{Op: OpOut, ID: m.ID, Stream: Stdout, Data: []byte(strings.Repeat("x", 100))})
		f.say(Message{Op: OpOut, ID: m.ID + 7, Stream: Stdout, Data: []byte("not yours")})
		f.say(Message{Op: OpOut, ID: m.ID, Stream: Stderr, Data: []byte("e")})
		f.say(Message{Op: OpExit, ID: m.ID, Result: &ExecResult{ExitCode: 3}})
	}()
	var got [2]strings.Builder
	res, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"x"}, OutputLimit: 10, TimeoutMS: 1000}, nil,
		func(stream string, data []byte) {
			if stream == Stdout {
				got[0].Write(data)
			} else {
				got[1].Write(data)
			}
		})
	if err != nil || res.ExitCode != 3 || got[0].String() != strings.Repeat("x", 10) || got[1].String() != "e" {
		t.Fatalf("res %+v err %v stdout %q stderr %q", res, err, got[0].String(), got[1].String())
	}
}

func TestProtocolViolationsKillTheConnection(t *testing.T) {
	for _, bad := range []string{
		"not json\n",
		`{"op":"out","id":1,"stream":"fd3","data":"eA=="}` + "\n",
		`{"op":"exit","id":1}` + "\n",
		`{"op":"launch-missiles","id":1}` + "\n",
	} {
		c, f := newPair(t)
		hello(t, c, f)
		go func() { f.next(t); _, _ = f.out.Write([]byte(bad)) }()
		_, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"x"}, TimeoutMS: 1000}, nil, nil)
		if !errors.Is(err, ErrDead) {
			t.Errorf("%q: want ErrDead, got %v", bad, err)
		}
	}
}

func TestStdinIsFlowControlled(t *testing.T) {
	c, f := newPair(t)
	input := strings.Repeat("y", 3*InChunk+5)
	done := make(chan string)
	go func() {
		m := f.next(t)
		var got strings.Builder
		for {
			in := f.next(t)
			if in.Op == OpInClose {
				break
			}
			got.Write(in.Data)
			f.say(Message{Op: OpInAck, ID: m.ID})
		}
		f.say(Message{Op: OpExit, ID: m.ID, Result: &ExecResult{}})
		done <- got.String()
	}()
	if _, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"x"}, TimeoutMS: 5000}, strings.NewReader(input), nil); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != input {
		t.Fatalf("stdin arrived as %d bytes, want %d", len(got), len(input))
	}
}

// A terminal's keys and resizes reach the supervisor in the order they
// were done (keys typed after a resize are read at the new size).
func TestTerminalInputKeepsItsOrder(t *testing.T) {
	c, f := newPair(t)
	in := make(chan TermInput)
	seen := make(chan []string)
	go func() {
		m := f.next(t)
		var got []string
		for {
			ev := f.next(t)
			switch ev.Op {
			case OpIn:
				got = append(got, string(ev.Data))
				f.say(Message{Op: OpInAck, ID: m.ID})
				continue
			case OpResize:
				got = append(got, fmt.Sprintf("%dx%d", ev.Size.Rows, ev.Size.Cols))
				continue
			}
			break // in closed
		}
		f.say(Message{Op: OpExit, ID: m.ID, Result: &ExecResult{}})
		seen <- got
	}()
	go func() {
		for i := range 20 {
			in <- TermInput{Keys: []byte(fmt.Sprint("k", i))}
			in <- TermInput{Size: &WinSize{Rows: uint16(i), Cols: 80}}
		}
		close(in)
	}()
	if _, err := c.Terminal(context.Background(), ExecRequest{Argv: []string{"sh"}, TimeoutMS: 5000}, in, nil); err != nil {
		t.Fatal(err)
	}
	got := <-seen
	for i := range 20 {
		if want := []string{fmt.Sprint("k", i), fmt.Sprintf("%dx80", i)}; len(got) < 2*i+2 || got[2*i] != want[0] || got[2*i+1] != want[1] {
			t.Fatalf("arrived as %q", got)
		}
	}
}

func TestSilentSupervisorIsDeclaredDead(t *testing.T) {
	c, f := newPair(t)
	go func() { f.next(t); f.next(t) }() // reads exec and kill, never answers
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Exec(ctx, ExecRequest{Argv: []string{"x"}, TimeoutMS: 60000}, nil, nil)
	if !errors.Is(err, ErrDead) || time.Since(start) > killGrace+time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

// A host that takes the supervisor's diagnostics says so in its hello and
// gets each line; one that does not take them is not harmed by one.
func TestLogsGoToAHostThatAsks(t *testing.T) {
	c, f := newPair(t)
	lines := make(chan string, 2)
	c.TakeLogs(func(line string) { lines <- line })
	asked := make(chan bool, 1)
	go func() {
		m := f.next(t)
		asked <- m.Logs
		f.say(Message{Op: OpLog, Data: []byte("sandbox-init: something to know")})
		f.say(Message{Op: OpHello, Nonce: m.Nonce, Version: Version})
	}()
	if err := c.Hello(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !<-asked {
		t.Error("the hello did not ask for the diagnostics")
	}
	if got := <-lines; got != "sandbox-init: something to know" {
		t.Errorf("line %q", got)
	}

	plain, g := newPair(t)
	go func() {
		m := g.next(t)
		asked <- m.Logs
		g.say(Message{Op: OpLog, Data: []byte("unasked")})
		g.say(Message{Op: OpHello, Nonce: m.Nonce, Version: Version})
	}()
	if err := plain.Hello(context.Background()); err != nil {
		t.Fatalf("a log line the host did not ask for: %v", err)
	}
	if <-asked {
		t.Error("a host that takes no diagnostics asked for them")
	}
}

// A supervisor frozen past a call's deadline is waited for: the time it
// was frozen does not count, so the call gets its answer once it thaws.
func TestFrozenTimeDoesNotCount(t *testing.T) {
	c, f := newPair(t)
	hello(t, c, f)
	go func() {
		m := f.next(t)
		c.Froze()
		time.Sleep(killGrace + 500*time.Millisecond) // past the deadline and its grace
		c.Thawed()
		f.say(Message{Op: OpDone, ID: m.ID, Done: &FileResult{}})
	}()
	if _, err := c.call(context.Background(), Message{Op: OpList, File: &FileRequest{Path: "."}}, 0, nil, nil, 100*time.Millisecond); err != nil {
		t.Fatalf("a call whose supervisor was frozen past its deadline: %v", err)
	}
	// Without a freeze, the deadline holds.
	go func() { f.next(t) }()
	if _, err := c.call(context.Background(), Message{Op: OpList, File: &FileRequest{Path: "."}}, 0, nil, nil, 100*time.Millisecond); !errors.Is(err, ErrPastDeadline) {
		t.Fatalf("a silent supervisor past the deadline: %v", err)
	}
}
