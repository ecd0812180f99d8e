package docker

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// The channels' socket gives a connection to whoever expects its token,
// closes any other, and gives up on a supervisor that never dials.
func TestChannelsAdmitOnlyAnExpectedToken(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, filepath.Base(supervisor.ChannelSocket))
	if err := os.WriteFile(stale, nil, 0o600); err != nil { // a socket left by a sandboxd before
		t.Fatal(err)
	}
	c, err := listenChannels(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if fi, err := os.Stat(stale); err != nil || fi.Mode().Perm() != 0o666 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the socket: %v %v", fi, err)
	}
	open := func() net.Conn {
		t.Helper()
		conn, err := net.Dial("unix", stale)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	dial := func(token string) net.Conn {
		t.Helper()
		conn := open()
		if _, err := io.WriteString(conn, token+"\nhello"); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	me := uint32(os.Getuid())
	closed := func(conn net.Conn) bool {
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err := conn.Read(make([]byte, 1))
		return err == io.EOF
	}

	if !closed(dial("unexpected")) {
		t.Error("a connection with a token no one expects stayed open")
	}
	sum := supervisor.TokenSum
	admitted := c.expect(sum("t0k"), me)
	if !closed(dial("guess")) {
		t.Error("a connection with the wrong token stayed open")
	}
	if !closed(dial(sum("t0k"))) {
		t.Error("a connection with the token's sum (a container's label) stayed open")
	}
	dial("t0k")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, conn, err := c.wait(ctx, sum("t0k"), admitted); err != nil || conn == nil {
		t.Fatalf("the expected supervisor: %v", err)
	}
	if !closed(dial("t0k")) {
		t.Error("a token was admitted twice")
	}

	admitted = c.expect(sum("late"), me)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.wait(short, sum("late"), admitted); err == nil {
		t.Fatal("waited past the deadline")
	}
	if !closed(dial("late")) {
		t.Error("a token given up on was admitted")
	}

	c.expect(sum("other's"), me+1)
	if !closed(dial("other's")) {
		t.Error("a token was admitted from another sandbox's uid")
	}

	// Connections that send nothing hold a few places of their uid's,
	// no more, and only for a while.
	for range maxOpening {
		open()
	}
	time.Sleep(100 * time.Millisecond) // accepted and counted
	if !closed(open()) {
		t.Errorf("more than %d connections of one uid waited for their token", maxOpening)
	}
}
