package sandboxinit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/channel"
)

// A listening supervisor answers only a connection that opens with its
// token, and a newer such connection (a restarted sandboxd) replaces the
// one before.
func TestListenTakesTheTokenAndTheNewestConnection(t *testing.T) {
	ln, s, out := channelServer(t, "tcp", "127.0.0.1:0")
	go s.listenAndServe(out, ln, supervisor.TokenSum("s3cret"))

	dial := func(token string) (net.Conn, *supervisor.Conn) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, token+"\n"); err != nil {
			t.Fatal(err)
		}
		return c, supervisor.NewConn(c, c)
	}
	hello := func(conn *supervisor.Conn) error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return conn.Hello(ctx)
	}

	raw, intruder := dial("guess")
	if err := hello(intruder); err == nil {
		t.Fatal("a connection with the wrong token was answered")
	}
	_ = raw.SetReadDeadline(time.Now().Add(6 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection with the wrong token stayed open")
	}

	first, sbx := dial("s3cret")
	if err := hello(sbx); err != nil {
		t.Fatalf("the token's connection: %v", err)
	}
	_, again := dial("s3cret")
	if err := hello(again); err != nil {
		t.Fatalf("a newer connection: %v", err)
	}
	_ = first.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := first.Read(make([]byte, 1)); err == nil {
		t.Fatal("the older connection stayed open beside the newer one")
	}
}

// A dialing supervisor opens each connection with its token, and dials
// again when sandboxd's connection ends (a restart).
func TestDialOpensWithTheTokenAndComesBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, s, out := channelServer(t, "unix", path)
	go s.dialAndServe(out, path, "s3cret")

	for i := range 2 {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		in := bufio.NewReader(c)
		if line, err := in.ReadString('\n'); err != nil || line != "s3cret\n" {
			t.Fatalf("connection %d opened with %q, %v", i, line, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = supervisor.NewConn(in, c).Hello(ctx)
		cancel()
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		c.Close() // sandboxd goes away; the supervisor dials again
	}
}

// channelServer is a supervisor that speaks on a channel, and a listener
// on address for a test's end of it.
func channelServer(t *testing.T, network, address string) (net.Listener, *server, *channel.Channel) {
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := &channel.Channel{}
	dirs := paths{workspace: t.TempDir(), tmp: t.TempDir()}
	return ln, newServer(out, dirs, container{killAll: func(int) int { return 0 }, clearIPC: func() {}}), out
}

// A listening supervisor's diagnostics go to the connected sandboxd that
// asked for them in its hello, and to stderr (bounded) otherwise: not to
// a newer connection that did not ask.
func TestDiagnosticsGoToTheHostThatAsks(t *testing.T) {
	ln, s, out := channelServer(t, "tcp", "127.0.0.1:0")
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stderrR.Close()
	diag := s.diagnostics(stderrW)
	go s.listenAndServe(out, ln, supervisor.TokenSum("s3cret"))
	connect := func(logs func(string)) *supervisor.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_, _ = io.WriteString(c, "s3cret\n")
		conn := supervisor.NewConn(c, c)
		if logs != nil {
			conn.TakeLogs(logs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := conn.Hello(ctx); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	lines := make(chan string, 4)
	connect(func(line string) { lines <- line })
	fmt.Fprintln(diag, "sandbox-init: to the host")
	select {
	case got := <-lines:
		if got != "sandbox-init: to the host" {
			t.Errorf("the host got %q", got)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the host that asked got no diagnostics")
	}

	connect(nil) // a newer sandboxd that takes none
	fmt.Fprintln(diag, "sandbox-init: to stderr")
	got, _ := bufio.NewReader(stderrR).ReadString('\n')
	if got != "sandbox-init: to stderr\n" {
		t.Errorf("stderr got %q", got)
	}
	select {
	case line := <-lines:
		t.Errorf("a replaced connection got %q", line)
	default:
	}
}
