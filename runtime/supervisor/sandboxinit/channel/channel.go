// Package channel is the supervisor's connection to sandboxd where it is
// not PID 1's stdio: a connection opened with a token, which a newer one
// replaces, by listening on a loopback port or by dialing sandboxd's
// socket; and the supervisor's diagnostics, sent over it where its stderr
// is a node's log.
//
// Either the supervisor listens (Kubernetes: a pod's stdout goes to the
// node's logs, so the runtime reaches a TCP port on the sandbox's loopback
// by port forwarding), or it dials (Docker on this host: sandboxd's
// socket, mounted read-only, is a shorter way than the attach stream
// through dockerd and the container's shim).
package channel

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

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Channel is the supervisor's current connection to sandboxd: the
// writer of its messages, replaced when sandboxd connects again (after a
// restart), dropping what is sent while nobody is connected.
type Channel struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *Channel) Write(p []byte) (int, error) {
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

func (c *Channel) set(w io.Writer) {
	c.mu.Lock()
	c.w = w
	c.mu.Unlock()
}

// Listen serves sandboxd on ln with serve, writing on out, one connection at a time: a
// newer one that shows the token whose SHA-256 is tokenSum replaces the
// current one, which is how a restarted sandboxd takes over. It never returns: the sandbox ends
// when the runtime removes it.
func Listen(out *Channel, ln net.Listener, tokenSum string, serve func(io.Reader) error, connected func()) {
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
			connected()
			out.set(a.conn)
			go func(in io.Reader, done chan struct{}) {
				defer close(done)
				if err := serve(in); err != nil {
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
			if in, ok := authenticate(conn, tokenSum); ok {
				admitted <- authed{conn, in}
			} else {
				_ = conn.Close()
			}
		}()
	}
}

// Diagnostics is where our own messages go where our stderr is a node's
// log (a pod's): to sandboxd by send, while wanted says the host connected
// asked for them in its hello; otherwise to stderr, 64 KiB of them in all.
// Only what we write to os.Stderr goes this way: a crash's trace, which
// the Go runtime writes to fd 2, still reaches the node's log.
func Diagnostics(stderr *os.File, wanted func() bool, send func(line string)) *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		return stderr
	}
	go func() {
		left := 64 << 10
		lines := bufio.NewReader(r)
		for {
			line, err := lines.ReadString('\n')
			if line = strings.TrimRight(line, "\n"); line != "" {
				line = line[:min(len(line), 4096)]
				if wanted() {
					send(line)
				} else if left > 0 {
					left -= len(line) + 1
					fmt.Fprintln(stderr, line)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return w
}

// authenticate reads the token line a connection must open with, within
// a few seconds, checks it against its SHA-256, and returns the rest of
// what the connection sends.
func authenticate(conn net.Conn, tokenSum string) (io.Reader, bool) {
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	in := bufio.NewReaderSize(conn, 64<<10)
	line, err := in.ReadString('\n')
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil || tokenSum == "" || subtle.ConstantTimeCompare([]byte(supervisor.TokenSum(strings.TrimSuffix(line, "\n"))), []byte(tokenSum)) != 1 {
		return nil, false
	}
	return in, true
}

// Dial serves sandboxd with serve over connections to the Unix socket at
// path, each opened with the token: one at a time, and a new one when it
// ends, which is how a restarted sandboxd takes over. One refused or
// closed at once (sandboxd is away, or does not know the token yet) is
// tried again soon, then less often, twice a second at most. It never
// returns: the sandbox ends when the runtime removes it.
//
// The first try comes a millisecond after a connection ends: a session
// frozen while sandboxd restarted dials once thawed, on the path of the
// call that thawed it (at 10 ms, that wait was most of the call's 14 ms).
func Dial(out *Channel, path, token string, serve func(io.Reader) error) {
	const first, most = time.Millisecond, 500 * time.Millisecond
	wait := first
	for {
		if serveDialed(out, path, token, serve) > most {
			wait = first // sandboxd's own connection ended: it will be back
		} else {
			wait = min(2*wait, most)
		}
		time.Sleep(wait)
	}
}

// serveDialed serves one connection to path, and says how long it lasted.
func serveDialed(out *Channel, path, token string, serve func(io.Reader) error) time.Duration {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return 0
	}
	defer conn.Close()
	started := time.Now()
	if _, err := io.WriteString(conn, token+"\n"); err != nil {
		return 0
	}
	out.set(conn)
	defer out.set(nil)
	if err := serve(conn); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: the connection to sandboxd ended: %v\n", err)
	}
	return time.Since(started)
}
