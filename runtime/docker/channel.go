package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// channels is sandboxd's end of the supervisors' Unix socket: one socket
// in a host directory that every runc sandbox has mounted read-only at
// supervisor.ChannelDir. Each supervisor dials it and opens with its
// container's token; the connection goes to whoever expects that token
// from the container's uid (a Create or an Attach), and any other is
// closed. Code in a sandbox can dial it too, but knows no token, cannot
// replace the socket, and holds at most a few connections open: the
// kernel says which uid dialed, and every sandbox has its own.
//
// Messages then pass between two processes, where the attach stream
// carries them through dockerd and the container's shim (about 5 ms of
// CPU per one-shot run between the two).
type channels struct {
	ln net.Listener

	mu       sync.Mutex
	expected map[string]expected // by the token's sum (supervisor.TokenSum)
	opening  map[uint32]int      // connections yet to send their token, by uid
}

// expected is a supervisor a Create or an Attach waits for.
type expected struct {
	uid      uint32
	admitted chan dialed
}

// maxOpening bounds the connections of one uid that have not sent their
// token yet: a sandbox's programs cannot use up sandboxd's descriptors.
const maxOpening = 4

// dialed is a supervisor's admitted connection: in holds what it sent
// after its token.
type dialed struct {
	conn net.Conn
	in   io.Reader
}

// listenChannels listens at supervisor.ChannelSocket's name in dir, in
// place of a socket a sandboxd before this one left.
func listenChannels(dir string) (*channels, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("the supervisors' channel directory: %w", err)
	}
	path := filepath.Join(dir, filepath.Base(supervisor.ChannelSocket))
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("the supervisors' channel: %w", err)
	}
	// Each sandbox runs as a uid of its own, which must be able to connect.
	if err := os.Chmod(path, 0o666); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("the supervisors' channel: %w", err)
	}
	c := &channels{ln: ln, expected: map[string]expected{}, opening: map[uint32]int{}}
	go c.accept()
	return c, nil
}

func (c *channels) accept() {
	for {
		conn, err := c.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond) // out of descriptors, for a moment
			continue
		}
		go c.admit(conn)
	}
}

// admit gives conn to whoever expects the token it opens with, from its
// uid, within a few seconds, or closes it.
func (c *channels) admit(conn net.Conn) {
	uid, err := peerUID(conn)
	c.mu.Lock()
	full := c.opening[uid] >= maxOpening
	if err == nil && !full {
		c.opening[uid]++
	}
	c.mu.Unlock()
	if err != nil || full {
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	in := bufio.NewReaderSize(conn, 64<<10)
	line, err := in.ReadSlice('\n') // no longer than the buffer
	_ = conn.SetReadDeadline(time.Time{})
	key := supervisor.TokenSum(strings.TrimSuffix(string(line), "\n"))
	c.mu.Lock()
	if c.opening[uid]--; c.opening[uid] == 0 {
		delete(c.opening, uid)
	}
	e, ok := c.expected[key]
	ok = ok && err == nil && e.uid == uid
	if ok {
		delete(c.expected, key)
	}
	c.mu.Unlock()
	if !ok {
		_ = conn.Close()
		return
	}
	e.admitted <- dialed{conn, in}
}

// peerUID is the uid of the process that dialed conn, as the kernel saw it.
func peerUID(conn net.Conn) (uint32, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}

// expect readies c for the supervisor of the sandbox that runs as uid and
// opens with the token whose sum is key, before it can dial; wait takes
// its connection. Keyed by the sum, which is all a container's label
// shows (channelLabel).
func (c *channels) expect(key string, uid uint32) chan dialed {
	ch := make(chan dialed, 1)
	c.mu.Lock()
	c.expected[key] = expected{uid: uid, admitted: ch}
	c.mu.Unlock()
	return ch
}

// wait returns the connection of the supervisor ch expects, or gives up
// on it when ctx ends.
func (c *channels) wait(ctx context.Context, key string, ch chan dialed) (*supervisor.Conn, io.Closer, error) {
	select {
	case d := <-ch:
		return supervisor.NewConn(d.in, d.conn), d.conn, nil
	case <-ctx.Done():
		c.forget(key)
		select {
		case d := <-ch: // admitted meanwhile
			_ = d.conn.Close()
		default:
		}
		return nil, nil, fmt.Errorf("the supervisor did not connect to sandboxd's channel: %w", ctx.Err())
	}
}

// forget stops expecting the supervisor whose token's sum is key.
func (c *channels) forget(key string) {
	c.mu.Lock()
	delete(c.expected, key)
	c.mu.Unlock()
}

func (c *channels) Close() error { return c.ln.Close() }
