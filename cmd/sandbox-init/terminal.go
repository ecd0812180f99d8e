package main

import (
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// openTerminal gives the execution a pseudo-terminal of the request's
// size: the child's stdin, stdout and stderr are its tty; what the
// program writes comes from the master as stdout, and stdin goes into it.
// The writer is a descriptor of its own, so that closing stdin when the
// program ends does not cut the output still to be read.
func (e *execution) openTerminal(bool) ([]uintptr, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	size := e.req.TTY
	_ = pty.Setsize(ptmx, &pty.Winsize{Rows: size.Rows, Cols: size.Cols})
	fd, err := unix.Dup(int(ptmx.Fd()))
	if err != nil {
		ptmx.Close()
		tty.Close()
		return nil, err
	}
	unix.CloseOnExec(fd)
	// No stderr of its own: the terminal carries both streams.
	errR, errW, err := os.Pipe()
	if err != nil {
		unix.Close(fd)
		ptmx.Close()
		tty.Close()
		return nil, err
	}
	errW.Close()
	e.stdinW, e.stdinCh = os.NewFile(uintptr(fd), "ptmx"), make(chan []byte, 1)
	go e.writeStdin()
	e.pty, e.outR, e.errR = ptmx, ptmx, errR
	e.childEnds = []*os.File{tty}
	return []uintptr{tty.Fd(), tty.Fd(), tty.Fd()}, nil
}

// resize sets a terminal execution's window size; the program gets
// SIGWINCH.
func (e *execution) resize(size supervisor.WinSize) {
	if e.pty != nil {
		_ = pty.Setsize(e.pty, &pty.Winsize{Rows: size.Rows, Cols: size.Cols})
	}
}
