package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/units"
)

// maxInput bounds what sandboxctl reads from a file or stdin.
const maxInput = 48 << 20

func newRunCmd(g *globals) *cobra.Command {
	var (
		lang, stdinPath, memory string
		timeout                 time.Duration
		asJSON, markdown        bool
		tty, stdinOpen          bool
		network                 networkFlags
		env                     envFlags
	)
	cmd := &cobra.Command{
		Use:   "run [flags] FILE|- [-- ARGS...]",
		Short: "Run a program once in a fresh sandbox",
		Long: `Run a program once in a fresh sandbox and stream its output.

The language comes from the file's extension unless --lang is given.

With --markdown, FILE is a Markdown document (a chat answer, a README):
its fenced code blocks run one after another, each in the language of its
fence (python, js, ts, go, bash, ...), in a session per language, so a
block sees what the blocks before it in its language left in /workspace;
shell blocks (bash, sh) run in the session the block before them used.
Blocks in other languages are skipped with a note. The exit code is that
of the first block that failed.
With -it, the program runs on a terminal wired to yours: input() and
prompts work, ^C reaches it, resizing your window resizes its terminal.

The exit code is the program's; 124 on timeout, 137 when killed for memory,
125 when sandboxctl or sandboxd failed.`,
		Example: `  sandboxctl run hello.py
  echo 'console.log(1)' | sandboxctl run --lang node -
  sandboxctl run --stdin input.txt --timeout 2s --memory 128m main.py -- arg1 arg2
  sandboxctl run -e DEBUG=1 --env-file .env main.py
  sandboxctl run --markdown answer.md
  sandboxctl run -it quiz.py`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if stdinOpen != tty {
				return fail("-i and -t go together: run -it FILE runs the program on your terminal")
			}
			if markdown {
				if tty {
					return fail("run --markdown runs blocks one after another; it has no -it")
				}
				if len(args) != 1 || cmd.ArgsLenAtDash() >= 0 || stdinPath != "" {
					return fail("run --markdown takes one FILE (or - for stdin) and no program arguments or --stdin")
				}
				limits, err := memoryLimit(memory)
				if err != nil {
					return err
				}
				vars, err := env.env()
				if err != nil {
					return err
				}
				md := &markdownRun{c: g.client(), asJSON: asJSON, timeout: timeout, limits: limits, env: vars, unlabeled: lang}
				return md.runDocument(cmd.Context(), args[0])
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 && dash != 1 || dash < 0 && len(args) != 1 {
				return fail("run takes one FILE (or - for stdin), then -- and the program's arguments")
			}
			file := args[0]
			req, err := readProgram(file, lang)
			if err != nil {
				return err
			}
			req.Args = args[1:]
			if stdinPath != "" {
				if stdinPath == "-" && file == "-" {
					return fail("the program already comes from stdin: give --stdin a file")
				}
				if req.Stdin, req.StdinEncoding, err = readText(stdinPath); err != nil {
					return err
				}
			}
			req.Timeout = api.Duration(timeout)
			req.Network, req.Secrets = network.request(), network.secrets
			if req.Env, err = env.env(); err != nil {
				return err
			}
			if req.Limits, err = memoryLimit(memory); err != nil {
				return err
			}
			c := g.client()
			if tty {
				if file == "-" || stdinPath != "" || asJSON {
					return fail("run -it reads the program from FILE and its input from your keys: no - , --stdin or --json")
				}
				return interactive(cmd.Context(), func(ctx context.Context, rows, cols int) (*client.Terminal, error) {
					return c.RunTerminal(ctx, req, rows, cols)
				})
			}
			return execute(asJSON,
				func() (*api.RunResult, error) { return c.Run(cmd.Context(), req) },
				func(on func(api.Event)) (*api.RunResult, error) { return c.RunStream(cmd.Context(), req, on) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&lang, "lang", "", "language (default: from the file extension)")
	f.StringVar(&stdinPath, "stdin", "", "file to feed the program's stdin, or - for ours")
	f.DurationVar(&timeout, "timeout", 0, "deadline, e.g. 2s (default: the daemon's)")
	f.StringVar(&memory, "memory", "", "memory limit, e.g. 128m (default: the daemon's)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON instead of streaming the output")
	env.add(f, "KEY=VALUE in the program's environment")
	network.add(f)
	f.BoolVarP(&tty, "tty", "t", false, "run the program on a terminal (with -i: run -it)")
	f.BoolVarP(&stdinOpen, "interactive", "i", false, "wire the program's terminal to your keys (with -t)")
	f.BoolVar(&markdown, "markdown", false, "run the fenced code blocks of a Markdown document (e.g. a chat answer) one after another, each in its fence's language; --lang is for blocks without one")
	return cmd
}

// networkFlags ask for a sandbox's egress: a subset of its language's
// allow-list, or none; and the secrets it may send out.
type networkFlags struct {
	allow   []string
	none    bool
	secrets []string
}

func (n *networkFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&n.allow, "allow", nil, "a host the program may reach through sandboxd's egress proxy, HOST[:PORT] (repeatable; default: all its language allows)")
	f.BoolVar(&n.none, "no-network", false, "no egress at all, even where the language allows some")
	f.StringArrayVar(&n.secrets, "secret", nil, "a secret of sandboxd.hcl to use, by name: the program gets $SANDBOXD_SECRET_NAME, a placeholder the egress proxy replaces with the value for the secret's hosts (repeatable)")
}

// request is the network a request asks for; nil leaves it to the
// language.
func (n *networkFlags) request() *api.Network {
	if n.none || len(n.allow) > 0 {
		return &api.Network{Allow: append([]string{}, n.allow...)}
	}
	return nil
}

// memoryLimit is the limits a --memory flag asks for; nil without one.
func memoryLimit(memory string) (*api.Limits, error) {
	if memory == "" {
		return nil, nil
	}
	n, err := units.ParseByteSize(memory)
	if err != nil {
		return nil, fail("--memory: %v", err)
	}
	return &api.Limits{Memory: api.ByteSize(n)}, nil
}

func readInput(name string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fail("%v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fail("reading %s: %v", name, err)
	}
	if len(data) > maxInput {
		return nil, fail("%s is over %s", name, api.ByteSize(maxInput))
	}
	return data, nil
}

// readProgram reads a program file (- for stdin) into a request, its
// language from --lang or the file's extension.
func readProgram(file, lang string) (api.RunRequest, error) {
	req := api.RunRequest{Language: lang}
	if req.Language == "" {
		ext := strings.TrimPrefix(filepath.Ext(file), ".")
		if file == "-" || ext == "" {
			return req, fail("cannot tell the language of %q: use --lang (see `sandboxctl languages`)", file)
		}
		req.Language = ext
	}
	code, encoding, err := readText(file)
	if err != nil {
		return req, err
	}
	if file == "-" {
		if encoding != "" {
			return req, fail("the program on stdin is not UTF-8 text")
		}
		req.Code = code
	} else {
		f := api.File{Path: filepath.Base(file), Content: code, Encoding: encoding}
		req.Files, req.Entry = []api.File{f}, f.Path
	}
	return req, nil
}

// readText reads input as request text: UTF-8 as is, anything else base64.
func readText(name string) (text, encoding string, err error) {
	data, err := readInput(name)
	if err != nil {
		return "", "", err
	}
	text, encoding = api.EncodeBytes(data)
	return text, encoding, nil
}

// execute runs a program or command: whole (printing the result as JSON)
// with --json, else streaming its output to ours; the exit code follows
// the result.
func execute(asJSON bool, whole func() (*api.RunResult, error), stream func(func(api.Event)) (*api.RunResult, error)) error {
	var res *api.RunResult
	var err error
	if asJSON {
		res, err = whole()
	} else {
		res, err = stream(printEvent)
	}
	if err != nil {
		return apiFailure(err)
	}
	if asJSON {
		if err := printJSON(res); err != nil {
			return err
		}
	} else {
		printFindings(os.Stderr, "sandboxctl: ", res.Findings)
		printEgressDenied(os.Stderr, res.Egress)
		printDisplay(res)
	}
	return resultExit(res)
}

// printDisplay prints what a context's exec showed: text as it is, other
// kinds noted (--json carries them); and when the context's state was lost.
func printDisplay(res *api.RunResult) {
	if c := res.Context; c != nil && c.Lost != "" {
		fmt.Fprintf(os.Stderr, "sandboxctl: context %s: %s\n", c.Name, c.Lost)
	}
	var text string
	var others []string
	for i, d := range res.Display {
		switch {
		case api.IsCaption(res.Display, i):
		case d.MIME == "text/plain":
			text = d.Data
		default:
			others = append(others, d.MIME)
		}
	}
	if text != "" {
		fmt.Println(text)
	}
	if len(others) > 0 {
		fmt.Fprintf(os.Stderr, "sandboxctl: also shown: %s (in the result: --json)\n", strings.Join(others, ", "))
	}
}

// printEgressDenied says which connections the egress proxy refused, once
// per destination, with why.
func printEgressDenied(w io.Writer, list []api.Egress) {
	for _, d := range deniedEgress(list) {
		fmt.Fprintf(w, "sandboxctl: egress denied: %s: %s\n", d.dest, d.why)
	}
}

type denial struct {
	dest, why string
	tries     int
}

// deniedEgress gathers refused connections by destination, in order.
func deniedEgress(list []api.Egress) []denial {
	var out []denial
	index := map[string]int{}
	for _, e := range list {
		if e.Allowed {
			continue
		}
		dest := "(a connection)"
		if e.Host != "" {
			dest = net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
		}
		if i, ok := index[dest]; ok {
			out[i].tries++
			continue
		}
		index[dest] = len(out)
		out = append(out, denial{dest: dest, why: e.Error, tries: 1})
	}
	for i, d := range out {
		if d.tries > 1 {
			out[i].dest = fmt.Sprintf("%s (%d times)", d.dest, d.tries)
		}
	}
	return out
}

// resultExit maps a result to sandboxctl's exit code, saying why on stderr
// when the program did not simply exit.
func resultExit(res *api.RunResult) error {
	switch {
	case res.TimedOut:
		return &exitError{code: exitTimeout, msg: fmt.Sprintf("timed out after %.0f ms; everything it started was killed", res.DurationMS)}
	case res.OOMKilled:
		return &exitError{code: exitOOM, msg: "killed: out of memory (raise --memory up to the daemon's ceiling)"}
	case res.Error != "":
		return &exitError{code: res.ExitCode, msg: "the program could not start: " + res.Error}
	}
	if res.Truncated {
		fmt.Fprintf(os.Stderr, "sandboxctl: output truncated (stdout %s, stderr %s produced)\n",
			api.ByteSize(res.StdoutBytes), api.ByteSize(res.StderrBytes))
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}
