package sandboxinit

import (
	"errors"
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/spawn"
)

// openTerminal gives the execution a pseudo-terminal of the request's
// size: the child's stdin, stdout and stderr are its tty; what the
// program writes comes from the master as stdout, and stdin goes into it.
// Reader and writer are non-blocking descriptors of their own, in Go's
// poller: closing stdin when the program ends does not cut the output
// still to be read, and closing the reader ends a read that a kernel
// (gVisor's) never answers with EIO once the program is gone.
func (e *execution) openTerminal(bool) ([]uintptr, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	defer ptmx.Close() // the descriptors below keep the master open
	size := e.req.TTY
	_ = pty.Setsize(ptmx, &pty.Winsize{Rows: size.Rows, Cols: size.Cols})
	// No stderr of its own: the terminal carries both streams.
	errR, errW, err := os.Pipe()
	if err != nil {
		tty.Close()
		return nil, err
	}
	errW.Close()
	var fds [2]int
	for i := range fds {
		if fds[i], err = unix.Dup(int(ptmx.Fd())); err != nil {
			for _, fd := range fds[:i] {
				unix.Close(fd)
			}
			tty.Close()
			errR.Close()
			return nil, err
		}
		unix.CloseOnExec(fds[i])
	}
	_ = unix.SetNonblock(fds[0], true) // the one open file both share: both go to the poller
	master := os.NewFile(uintptr(fds[0]), "ptmx")
	e.stdinW, e.stdinCh = os.NewFile(uintptr(fds[1]), "ptmx"), make(chan []byte, 1)
	go e.writeStdin()
	e.pty, e.outR, e.errR = master, master, errR
	e.childEnds = []*os.File{tty}
	return []uintptr{tty.Fd(), tty.Fd(), tty.Fd()}, nil
}

// resize sets a terminal execution's window size; the program gets
// SIGWINCH. (Through the raw descriptor: File.Fd would make the master
// blocking again.)
func (e *execution) resize(size supervisor.WinSize) {
	if e.pty == nil {
		return
	}
	var err error
	rc, cerr := e.pty.SyscallConn()
	if cerr == nil {
		cerr = rc.Control(func(fd uintptr) {
			err = spawn.IgnoringEINTR(func() error {
				return unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
			})
		})
	}
	if err = errors.Join(cerr, err); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: a terminal's new size: %v\n", err)
	}
}
