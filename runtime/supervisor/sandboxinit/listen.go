package sandboxinit

import (
	"bufio"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Where a runtime with no attach to PID 1's stdio (Kubernetes: a pod's
// stdout goes to the node's logs) reaches the supervisor instead: a TCP
// port on the sandbox's own loopback, which the runtime reaches by port
// forwarding, with a token the runtime sets in the environment. The
// environment of a non-dumpable PID 1 is readable by root alone, and the
// token is gone from it before any program starts, so code in the sandbox,
// which can connect to the port, cannot take the channel over.
// channel is the supervisor's current connection to sandboxd: the
// writer of its messages, replaced when sandboxd connects again (after a
// restart), dropping what is sent while nobody is connected.
type channel struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *channel) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		return len(p), nil
	}
	if _, err := c.w.Write(p); err != nil {
		c.w = nil
	}
	return len(p), nil
}

func (c *channel) set(w io.Writer) {
	c.mu.Lock()
	c.w = w
	c.mu.Unlock()
}

// listenAndServe serves sandboxd on ln, one connection at a time: a
// newer one that shows the token replaces the current one, which is how
// a restarted sandboxd takes over. It never returns: the sandbox ends
// when the runtime removes it.
func (s *server) listenAndServe(out *channel, ln net.Listener, token string) {
	type authed struct {
		conn net.Conn
		in   io.Reader
	}
	admitted := make(chan authed)
	go func() {
		var current net.Conn
		done := make(chan struct{})
		close(done)
		for a := range admitted {
			if current != nil {
				_ = current.Close()
			}
			<-done // the previous connection's last message is handled
			current, done = a.conn, make(chan struct{})
			out.set(a.conn)
			go func(in io.Reader, done chan struct{}) {
				defer close(done)
				if err := s.serve(in); err != nil {
					fmt.Fprintf(os.Stderr, "sandbox-init: the connection to sandboxd ended: %v\n", err)
				}
			}(a.in, done)
		}
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // out of descriptors: a bomb is running
			continue
		}
		// Each on its own: one that never sends its token holds no other.
		go func() {
			if in, ok := authenticate(conn, token); ok {
				admitted <- authed{conn, in}
			} else {
				_ = conn.Close()
			}
		}()
	}
}

// authenticate reads the token line a connection must open with, within
// a few seconds, and returns the rest of what it sends.
func authenticate(conn net.Conn, token string) (io.Reader, bool) {
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	in := bufio.NewReaderSize(conn, 64<<10)
	line, err := in.ReadString('\n')
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil || subtle.ConstantTimeCompare([]byte(strings.TrimSuffix(line, "\n")), []byte(token)) != 1 {
		return nil, false
	}
	return in, true
}
