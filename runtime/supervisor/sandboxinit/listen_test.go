package sandboxinit

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// A listening supervisor answers only a connection that opens with its
// token, and a newer such connection (a restarted sandboxd) replaces the
// one before.
func TestListenTakesTheTokenAndTheNewestConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dirs := paths{workspace: t.TempDir(), tmp: t.TempDir()}
	out := &channel{}
	s := newServer(out, dirs, container{endAll: func() int { return 0 }, clearIPC: func() {}})
	go s.listenAndServe(out, ln, "s3cret")

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
