package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sandboxd/sandboxd/client"
)

func newShellCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "shell SESSION [-- CMD [ARGS...]]",
		Short: "Open an interactive shell (or CMD) in a session, like docker exec -it",
		Long: `Open an interactive terminal in a session: bash by default, or CMD.
Your terminal goes raw (^C reaches the program) and is restored on every
exit; resizing your window resizes the session's terminal. The exit code is
the command's; 124 at the session's deadline.`,
		Example: "  sandboxctl shell $id\n  sandboxctl shell $id -- python3",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 && dash != 1 || dash < 0 && len(args) != 1 {
				return fail("shell takes SESSION, then optionally -- and a command")
			}
			return interactive(cmd.Context(), sessionTerminal(g.client(), args[0], args[1:]))
		},
	}
}

// sessionTerminal opens argv (nil: the daemon's shell) on a terminal in
// a session.
func sessionTerminal(c *client.Client, session string, argv []string) openTerminal {
	return func(ctx context.Context, rows, cols int) (*client.Terminal, error) {
		return c.Terminal(ctx, session, argv, rows, cols)
	}
}

// openTerminal opens a terminal of a size.
type openTerminal func(ctx context.Context, rows, cols int) (*client.Terminal, error)

// interactive runs what open opens, wired to our terminal.
func interactive(ctx context.Context, open openTerminal) error {
	in := int(os.Stdin.Fd())
	tty := term.IsTerminal(in)
	rows, cols := 24, 80
	if tty {
		if w, h, err := term.GetSize(in); err == nil {
			rows, cols = h, w
		}
	}
	t, err := open(ctx, rows, cols)
	if err != nil {
		return apiFailure(err)
	}
	defer t.Close()
	if tty {
		state, err := term.MakeRaw(in)
		if err != nil {
			return fail("making the terminal raw: %v", err)
		}
		restore := func() { _ = term.Restore(in, state) }
		defer restore()
		// A signal that ends us must not leave the terminal raw.
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		defer signal.Stop(stop)
		go func() {
			if _, ok := <-stop; ok {
				restore()
				os.Exit(exitFailed)
			}
		}()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if w, h, err := term.GetSize(in); err == nil {
					_ = t.Resize(h, w)
				}
			}
		}()
	}
	go func() {
		_, _ = io.Copy(t, os.Stdin)
		if !tty {
			_, _ = t.Write([]byte{4}) // our input ended: ^D, the terminal's end of file
		}
	}()
	_, _ = io.Copy(os.Stdout, t)
	end, err := t.Wait()
	if err != nil {
		return apiFailure(err)
	}
	if end.TimedOut {
		return &exitError{code: exitTimeout, msg: "the deadline ended the terminal's program"}
	}
	if end.ExitCode != 0 {
		return &exitError{code: end.ExitCode}
	}
	return nil
}
