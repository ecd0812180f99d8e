package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sandboxd/sandboxd/api"
)

func newDesktopCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "desktop",
		Short: "See and drive a desktop session's screen: screenshots, the mouse, the keyboard, windows",
		Long: `A session of a language with a desktop (the shipped "desktop": XFCE and
Chromium on a virtual screen) has a screen of its own. These commands look
at it and drive it as a person at it would. Each action prints the screen
as it is then (its size, the pointer, the focused window and the windows;
--json for all of it).`,
		Example: `  S=$(sandboxctl session create --lang desktop)
  sandboxctl desktop open $S https://example.com/
  sandboxctl desktop screenshot $S -o screen.png
  sandboxctl desktop click $S 200 150
  sandboxctl desktop type $S 'hello'
  sandboxctl desktop key $S ctrl+a Return`,
	}
	var jsonOut bool
	cmd.PersistentFlags().BoolVar(&jsonOut, "json", false, "print the screen as JSON")
	act := func(use, short string, args cobra.PositionalArgs, action func(args []string) (api.DesktopAction, error)) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, args []string) error {
				a, err := action(args[1:])
				if err != nil {
					return err
				}
				screen, err := g.client().DesktopAction(cmd.Context(), args[0], a)
				if err != nil {
					return apiFailure(err)
				}
				return printScreen(screen, jsonOut)
			},
		}
	}
	point := func(kind string) func([]string) (api.DesktopAction, error) {
		return func(args []string) (api.DesktopAction, error) {
			a := api.DesktopAction{Action: kind}
			if len(args) == 1 {
				return a, fail("give both X and Y, or neither (then where the pointer is)")
			}
			if len(args) == 2 {
				x, y, err := coordinates(args[0], args[1])
				if err != nil {
					return a, err
				}
				a.X, a.Y = &x, &y
			}
			return a, nil
		}
	}
	var button string
	click := act("click SESSION [X Y]", "Click (at X, Y, or where the pointer is)", cobra.RangeArgs(1, 3), func(args []string) (api.DesktopAction, error) {
		a, err := point("click")(args)
		a.Button = button
		return a, err
	})
	click.Flags().StringVar(&button, "button", "left", "left, middle or right")
	var amount int
	scroll := act("scroll SESSION up|down|left|right [X Y]", "Turn the wheel (at X, Y, or where the pointer is)", cobra.RangeArgs(2, 4), func(args []string) (api.DesktopAction, error) {
		a, err := point("scroll")(args[1:])
		a.Direction, a.Amount = args[0], amount
		return a, err
	})
	scroll.Flags().IntVar(&amount, "amount", 3, "wheel clicks")
	var dragButton string
	drag := act("drag SESSION X Y TO_X TO_Y", "Drag with a button held from X, Y to TO_X, TO_Y", cobra.ExactArgs(5), func(args []string) (api.DesktopAction, error) {
		a, err := point("drag")(args[:2])
		if err == nil {
			var x, y int
			x, y, err = coordinates(args[2], args[3])
			a.ToX, a.ToY = &x, &y
		}
		a.Button = dragButton
		return a, err
	})
	drag.Flags().StringVar(&dragButton, "button", "left", "left, middle or right")
	screenshot := &cobra.Command{
		Use: "screenshot SESSION", Short: "Save the screen as PNG (-o FILE; - or nothing: standard output, not a terminal)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, _ := cmd.Flags().GetString("output")
			if out == "" && term.IsTerminal(int(os.Stdout.Fd())) {
				return fail("a screenshot is PNG: give -o FILE (or -o - for standard output), or redirect it")
			}
			png, err := g.client().Screenshot(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(err)
			}
			if out == "" || out == "-" {
				_, err = os.Stdout.Write(png)
			} else {
				err = os.WriteFile(out, png, 0o644)
			}
			if err != nil {
				return fail("writing the screenshot: %v", err)
			}
			return nil
		},
	}
	screenshot.Flags().StringP("output", "o", "", "the PNG file to write (default: standard output)")
	cmd.AddCommand(
		screenshot,
		&cobra.Command{
			Use: "state SESSION", Short: "Print the screen: its size, the pointer and the windows", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				screen, err := g.client().Desktop(cmd.Context(), args[0])
				if err != nil {
					return apiFailure(err)
				}
				return printScreen(screen, jsonOut)
			},
		},
		act("move SESSION X Y", "Move the pointer to X, Y", cobra.ExactArgs(3), point("move")),
		click,
		act("double-click SESSION [X Y]", "Double-click (at X, Y, or where the pointer is)", cobra.RangeArgs(1, 3), point("double_click")),
		drag,
		scroll,
		act("type SESSION TEXT", "Type TEXT, as keystrokes, into the focused window", cobra.ExactArgs(2), func(args []string) (api.DesktopAction, error) {
			return api.DesktopAction{Action: "type", Text: args[0]}, nil
		}),
		act("key SESSION KEY...", `Press keys or chords, one after another ("Return", "ctrl+c", "ctrl+shift+t")`, cobra.MinimumNArgs(2), func(args []string) (api.DesktopAction, error) {
			return api.DesktopAction{Action: "key", Keys: strings.Join(args, " ")}, nil
		}),
		act("open SESSION URL|PATH", "Open a URL or a file in Chromium (a file is shown, never run)", cobra.ExactArgs(2), func(args []string) (api.DesktopAction, error) {
			return api.DesktopAction{Action: "open", Target: args[0]}, nil
		}),
		act("focus SESSION WINDOW", "Raise and focus a window, by the id state lists", cobra.ExactArgs(2), func(args []string) (api.DesktopAction, error) {
			return api.DesktopAction{Action: "focus", Window: args[0]}, nil
		}),
	)
	return cmd
}

func coordinates(xs, ys string) (x, y int, err error) {
	x, errX := strconv.Atoi(xs)
	y, errY := strconv.Atoi(ys)
	if errX != nil || errY != nil {
		return 0, 0, fail("X and Y are whole numbers of pixels from the screen's top left corner, not %q %q", xs, ys)
	}
	return x, y, nil
}

// printScreen prints a screen: a line for its size and pointer, a line per
// window (the focused one marked *), or all of it as JSON.
func printScreen(s *api.Desktop, asJSON bool) error {
	if asJSON {
		return printJSON(s)
	}
	fmt.Printf("screen %dx%d, pointer at %d,%d\n", s.Width, s.Height, s.Cursor.X, s.Cursor.Y)
	for _, w := range s.Windows {
		mark := " "
		if w.ID == s.Focused {
			mark = "*"
		}
		fmt.Printf("%s %-10s %s\n", mark, w.ID, printable(w.Title))
	}
	return nil
}

// printable is a title a program in the sandbox chose, made safe for a
// terminal: control characters (escape sequences that would set the
// terminal's title or clipboard, carriage returns that would hide a
// line) and bidirectional overrides become U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}
