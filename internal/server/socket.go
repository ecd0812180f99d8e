package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"
)

// ErrInUse means a live daemon already serves the socket.
var ErrInUse = errors.New("socket in use")

// Listen opens the Unix socket at path with mode 0660, owned by group if
// one is given (its members may then use sandboxd). A socket file that no
// daemon answers on is stale and replaced; one that answers is refused.
func Listen(path, group string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the socket directory: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		conn, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			conn.Close()
			return nil, fmt.Errorf("%w: another sandboxd answers on %s; stop it, or give this one another --socket", ErrInUse, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("setting the socket's mode: %w", err)
	}
	if group != "" {
		g, err := user.LookupGroup(group)
		if err == nil {
			var gid int
			if gid, err = strconv.Atoi(g.Gid); err == nil {
				err = os.Chown(path, -1, gid)
			}
		}
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("giving the socket to group %s: %w", group, err)
		}
	}
	return ln, nil
}
