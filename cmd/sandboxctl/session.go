package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/units"
)

func newSessionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Create, list, inspect, reset, freeze, pause, resume and remove sessions",
		Long: `A session is a sandbox of one's own that keeps its files across executions
(sandboxctl exec, sandboxctl cp) until it is removed or expires. An idle
session hibernates: its workspace sleeps on disk, without a container, and
the next call that needs it wakes it.`,
	}
	cmd.AddCommand(newSessionCreateCmd(g), newSessionLsCmd(g), newSessionInspectCmd(g),
		newSessionResetCmd(g), newSessionPauseCmd(g), newSessionFreezeCmd(g), newSessionResumeCmd(g), newSessionNetworkCmd(g), newSessionPortsCmd(g), newSessionPreviewCmd(g), newSessionTopCmd(g), newSessionRmCmd(g), newSessionSnapshotCmd(g), newSessionForkCmd(g))
	return cmd
}

func newSessionSnapshotCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot SESSION NAME",
		Short: "Save a session's workspace (files, modes, links) as a named snapshot",
		Long: `Save a session's workspace as a named snapshot that sessions can start
from (sandboxctl session create --from-snapshot NAME). Processes and the
state of contexts' interpreters are not saved; project_files is not part of it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sn, err := g.client().Snapshot(cmd.Context(), args[0], args[1])
			if err != nil {
				return apiFailure(err)
			}
			fmt.Printf("%s (%s)\n", sn.Name, api.ByteSize(sn.Size))
			return nil
		},
	}
}

func newSessionForkCmd(g *globals) *cobra.Command {
	var (
		count int
		name  string
		ttl   time.Duration
	)
	cmd := &cobra.Command{
		Use:     "fork SESSION",
		Short:   "Start sessions from a session's workspace as it is now, and print their ids",
		Example: "  for id in $(sandboxctl session fork -n 4 $base); do sandboxctl exec $id -- ./try.sh & done",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := g.client().Fork(cmd.Context(), args[0], api.ForkRequest{Count: count, Name: name, TTL: api.Duration(ttl)})
			if err != nil {
				return apiFailure(err)
			}
			for _, s := range res.Sessions {
				fmt.Println(s.ID)
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&count, "count", "n", 1, "how many sessions")
	cmd.Flags().StringVar(&name, "name", "", "the snapshot's name (default: made up)")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "the new sessions' lifetime (default: the daemon's)")
	return cmd
}

func newSnapshotCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "List and delete snapshots (sandboxctl session snapshot takes them)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List the snapshots",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := g.client().Snapshots(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			table("NAME\tID\tLANGUAGE\tSIZE\tFROM SESSION\tCREATED", func(w *tabwriter.Writer) {
				for _, s := range list {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.ID, s.Language, api.ByteSize(s.Size), s.Session, s.CreatedAt.Local().Format("2006-01-02 15:04:05"))
				}
			})
			return nil
		},
	}, &cobra.Command{
		Use:   "rm NAME...",
		Short: "Delete snapshots",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, ref := range args {
				if err := g.client().DeleteSnapshot(cmd.Context(), ref); err != nil {
					return apiFailure(err)
				}
			}
			return nil
		},
	})
	return cmd
}

func newSessionCreateCmd(g *globals) *cobra.Command {
	var (
		lang, memory, project string
		fromSnapshot          string
		ttl, idle             time.Duration
		cpus                  float64
		pids                  int64
		env                   envFlags
		network               networkFlags
	)
	cmd := &cobra.Command{
		Use:     "create --lang L [flags]",
		Short:   "Start a session and print its id",
		Example: "  id=$(sandboxctl session create --lang python --ttl 30m)\n  sandboxctl exec $id -- python3 -c 'print(1)'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lang == "" && fromSnapshot == "" {
				return fail("--lang is required (see `sandboxctl languages`), or --from-snapshot")
			}
			req := api.SessionRequest{Language: lang, Project: project, TTL: api.Duration(ttl), IdleTimeout: api.Duration(idle),
				Network: network.request(), Secrets: network.secrets, FromSnapshot: fromSnapshot}
			limits := &api.Limits{CPUs: cpus, Pids: pids}
			if memory != "" {
				n, err := units.ParseByteSize(memory)
				if err != nil {
					return fail("--memory: %v", err)
				}
				limits.Memory = api.ByteSize(n)
			}
			req.Limits = limits
			var err error
			if req.Env, err = env.env(); err != nil {
				return err
			}
			s, err := g.client().CreateSession(cmd.Context(), req)
			if err != nil {
				return apiFailure(err)
			}
			fmt.Println(s.ID)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&lang, "lang", "", "language of the session")
	f.DurationVar(&ttl, "ttl", 0, "lifetime, e.g. 30m (default: the daemon's)")
	f.DurationVar(&idle, "idle-timeout", 0, "expire after this long unused (default: the daemon's)")
	f.StringVar(&memory, "memory", "", "memory limit, e.g. 512m")
	f.Float64Var(&cpus, "cpus", 0, "cpu limit in cores, e.g. 0.5")
	f.Int64Var(&pids, "pids", 0, "process limit")
	f.StringVar(&project, "project", "", "project to mount read-only at /workspace/project_files")
	f.StringVar(&fromSnapshot, "from-snapshot", "", "start with a snapshot's workspace (its language unless --lang)")
	env.add(f, "KEY=VALUE for every exec")
	network.add(f)
	return cmd
}

func newSessionLsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := g.client().Sessions(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(list)
			}
			table("ID\tLANGUAGE\tSTATE\tDISK\tCREATED\tEXPIRES IN\tEXECS\tPROJECT", func(w *tabwriter.Writer) {
				for _, s := range list {
					state, disk := s.State, "-"
					if s.Error != "" {
						state += " (" + s.Error + ")"
					}
					if s.Hibernation != nil {
						disk = api.ByteSize(s.Hibernation.Bytes).String()
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, s.Language, state, disk,
						s.CreatedAt.Local().Format(time.TimeOnly), time.Until(s.ExpiresAt).Round(time.Second), s.Executions, s.Project)
				}
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSessionInspectCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect SESSION",
		Short: "Print a session as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.client().Session(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(err)
			}
			return printJSON(s)
		},
	}
}

func newSessionResetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "reset SESSION",
		Short: "Kill a session's processes and empty its workspace (project files stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.client().ResetSession(cmd.Context(), args[0]); err != nil {
				return apiFailure(err)
			}
			return nil
		},
	}
}

func newSessionPortsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "ports SESSION",
		Short: "List the TCP ports listening inside a session's sandbox",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ports, err := g.client().Ports(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(err)
			}
			for _, p := range ports {
				fmt.Println(net.JoinHostPort(p.Address, strconv.Itoa(p.Port)))
			}
			return nil
		},
	}
}

func newSessionPreviewCmd(g *globals) *cobra.Command {
	var ttl time.Duration
	var revoke bool
	cmd := &cobra.Command{
		Use:   "preview SESSION PORT | --revoke SESSION",
		Short: "Print a link that opens a server in a session to a browser",
		Long: `Print a link that opens the server a session runs on PORT (on its own
loopback) to a browser on this host, through sandboxd's TCP listener
(http.listen), at an origin of its own: http://PORT-SESSION.localhost:7070/.
The link's token opens that port of that session only, for --ttl; once
opened, the browser keeps it in a cookie of that origin. --revoke ends
every link of the session made so far.`,
		Example: `  sandboxctl session exec $S -- sh -c 'python3 -m http.server 8000 &'
  sandboxctl session preview $S 8000
  sandboxctl session preview --revoke $S`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if revoke {
				if len(args) != 1 {
					return fail("--revoke takes the session alone")
				}
				if err := g.client().RevokePreviews(cmd.Context(), args[0]); err != nil {
					return apiFailure(err)
				}
				return nil
			}
			if len(args) != 2 {
				return fail("give the session and the port: sandboxctl session preview SESSION PORT")
			}
			port, err := strconv.Atoi(args[1])
			if err != nil {
				return fail("port %q: a number from 1 to 65535", args[1])
			}
			p, err := g.client().Preview(cmd.Context(), args[0], port, ttl)
			if err != nil {
				return apiFailure(err)
			}
			fmt.Println(p.URL)
			fmt.Fprintf(os.Stderr, "good until %s\n", p.ExpiresAt.Local().Format(time.DateTime))
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the link is good for (at most 168h)")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "end every preview link of the session instead")
	return cmd
}

func newSessionPauseCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pause SESSION...",
		Short: "Hibernate sessions: their workspaces sleep on disk, without containers, until the next call",
		Long: `Hibernate sessions now, as idle_timeout does: each workspace (files, modes,
links, mtimes) goes to an archive under sandboxd's state_dir, and its
container away. Env, limits, network, snapshots and history stay; the
memory of contexts' interpreters does not. Any call that needs the sandbox
(exec, cp, terminal, ...) or sandboxctl session resume wakes it.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachSession(args, func(id string) (string, error) {
				s, err := g.client().PauseSession(cmd.Context(), id)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s hibernated (%s)", id, api.ByteSize(s.Hibernation.Bytes)), nil
			})
		},
	}
}

func newSessionFreezeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "freeze SESSION...",
		Short: "Freeze sessions: their processes stop where they stand, memory kept, until the next call",
		Long: `Freeze sessions now, as sessions.freeze_after does: the runtime stops every
process in the sandbox where it stands (the cgroup freezer under runc,
runsc pause under gVisor). Processes, servers and contexts' memory stay,
no CPU is used, and a frozen session does not count against sessions.max.
Any call that needs the sandbox (exec, cp, terminal, ...) or sandboxctl
session resume thaws it in milliseconds. A session with a terminal or
another operation open is refused.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachSession(args, func(id string) (string, error) {
				if _, err := g.client().FreezeSession(cmd.Context(), id); err != nil {
					return "", err
				}
				return id + " frozen", nil
			})
		},
	}
}

func newSessionResumeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "resume SESSION...",
		Short: "Wake hibernated or frozen sessions now",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachSession(args, func(id string) (string, error) {
				before, err := g.client().Session(cmd.Context(), id)
				if err != nil {
					return "", err
				}
				s, err := g.client().ResumeSession(cmd.Context(), id)
				switch {
				case err != nil:
					return "", err
				case before.State == api.SessionHibernated:
					return fmt.Sprintf("%s active (resumed in %.0f ms)", id, s.ResumeMS), nil
				case before.State == api.SessionFrozen:
					return id + " active (thawed)", nil
				}
				return id + " active", nil
			})
		},
	}
}

// eachSession does fn for each session id, printing what it says, and
// goes on past a failure, which it reports and makes the exit status.
func eachSession(ids []string, fn func(id string) (string, error)) error {
	var failed error
	for _, id := range ids {
		msg, err := fn(id)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandboxctl: %s: %v\n", id, err)
			failed = &exitError{code: exitFailed}
			continue
		}
		if msg != "" {
			fmt.Println(msg)
		}
	}
	return failed
}

func newSessionNetworkCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "network SESSION [HOST[:PORT]...]",
		Short: "Set what a session may reach through the egress proxy, within its language's allow-list (no hosts: nothing)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.client().SetNetwork(cmd.Context(), args[0], args[1:])
			if err != nil {
				return apiFailure(err)
			}
			fmt.Println(strings.Join(s.Network.Allow, " "))
			return nil
		},
	}
}

func newSessionRmCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm SESSION...",
		Short: "End sessions and remove their containers",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachSession(args, func(id string) (string, error) {
				return "", g.client().DeleteSession(cmd.Context(), id)
			})
		},
	}
}

func newExecCmd(g *globals) *cobra.Command {
	var (
		stdinPath, cwd string
		timeout        time.Duration
		env            envFlags
		asJSON         bool
		contextName    string
		contextLang    string
		tty, stdinOpen bool
	)
	cmd := &cobra.Command{
		Use:   "exec [flags] SESSION -- CMD [ARGS...]\n  sandboxctl exec --context NAME [flags] SESSION FILE|-",
		Short: "Run a command in a session, or code in one of its contexts, and stream its output",
		Long: `Run a command in a session's workspace and stream its output.

With --context NAME, FILE (or - for stdin) is code for the session's
long-lived interpreter NAME, started on first use: variables, imports and
open files persist from exec to exec, and the value of a final expression
is printed (Jupyter-like). The result says when the context's state was
lost (killed at a deadline, crashed) and it started afresh.

The exit code is the command's; 124 on timeout, 137 when killed for memory,
125 for an unknown, expired or lost session.`,
		Example: "  sandboxctl exec $id -- python3 -c 'print(1)'\n  sandboxctl exec --stdin data.csv $id -- wc -l\n  echo 'import pandas as pd; df = pd.read_csv(\"data.csv\")' | sandboxctl exec --context main $id -\n  echo 'df.shape' | sandboxctl exec --context main $id -",
		RunE: func(cmd *cobra.Command, args []string) error {
			var req api.ExecRequest
			if stdinOpen && !tty {
				return fail("-i goes with -t (exec -it SESSION -- CMD); to feed a file to stdin use --stdin")
			}
			if tty {
				if dash := cmd.ArgsLenAtDash(); dash != 1 || len(args) < 2 || contextName != "" || stdinPath != "" || env.set() {
					return fail("exec -it takes SESSION, then -- and the command (no --context, --stdin, -e or --env-file: give the session its environment with session create -e)")
				}
				return interactive(cmd.Context(), sessionTerminal(g.client(), args[0], args[1:]))
			}
			if contextName != "" {
				if len(args) != 2 || cmd.ArgsLenAtDash() >= 0 || stdinPath != "" {
					return fail("exec --context takes SESSION and one FILE (or - for stdin), no command and no --stdin")
				}
				code, err := readInput(args[1])
				if err != nil {
					return err
				}
				req = api.ExecRequest{Context: contextName, Language: contextLang, Code: string(code), Cwd: cwd, Timeout: api.Duration(timeout)}
			} else if contextLang != "" {
				return fail("exec --language is a context's: give --context NAME too")
			} else if dash := cmd.ArgsLenAtDash(); dash != 1 || len(args) < 2 {
				return fail("exec takes SESSION, then -- and the command (or --context NAME and a FILE of code)")
			} else {
				req = api.ExecRequest{Argv: args[1:], Cwd: cwd, Timeout: api.Duration(timeout)}
			}
			var err error
			if req.Env, err = env.env(); err != nil {
				return err
			}
			if stdinPath != "" {
				if req.Stdin, req.StdinEncoding, err = readText(stdinPath); err != nil {
					return err
				}
			}
			c := g.client()
			return execute(asJSON,
				func() (*api.RunResult, error) { return c.Exec(cmd.Context(), args[0], req) },
				func(on func(api.Event)) (*api.RunResult, error) { return c.ExecStream(cmd.Context(), args[0], req, on) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&stdinPath, "stdin", "", "file to feed the command's stdin, or - for ours")
	f.StringVar(&cwd, "cwd", "", "working directory, relative to /workspace")
	f.DurationVar(&timeout, "timeout", 0, "deadline, e.g. 2s (default: the session's)")
	env.add(f, "KEY=VALUE")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON instead of streaming the output")
	f.StringVar(&contextName, "context", "", "run FILE's code in the session's long-lived interpreter of this name")
	f.StringVar(&contextLang, "language", "", "with --context: the context's language, when another the session's language runs (its contexts in sandboxd.hcl)")
	f.BoolVarP(&tty, "tty", "t", false, "run the command on a terminal, interactively (with -i: exec -it)")
	f.BoolVarP(&stdinOpen, "interactive", "i", false, "keep stdin open to the command (with -t)")
	return cmd
}

func newContextCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "List, restart or end a session's contexts (its long-lived interpreters)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls SESSION",
		Short: "List a session's running contexts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.client().Contexts(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(err)
			}
			table("NAME\tLANGUAGE\tPID\tSTARTED\tEXECUTIONS\tMEMORY", func(w *tabwriter.Writer) {
				for _, c := range l.Contexts {
					fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\t%s\n", c.Name, c.Language, c.PID, c.StartedAt.Local().Format("15:04:05"), c.Executions, api.ByteSize(c.RSSBytes))
				}
			})
			return nil
		},
	}, &cobra.Command{
		Use:   "restart SESSION NAME",
		Short: "Restart a context with a fresh interpreter (its state is gone)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.client().RestartContext(cmd.Context(), args[0], args[1]); err != nil {
				return apiFailure(err)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "rm SESSION NAME",
		Short: "End a context and its state",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.client().EndContext(cmd.Context(), args[0], args[1]); err != nil {
				return apiFailure(err)
			}
			return nil
		},
	})
	return cmd
}

// printEvent writes an output event to our stdout or stderr, and what a
// queued run waits on to stderr.
func printEvent(ev api.Event) {
	w := os.Stdout
	switch ev.Type {
	case api.EventStderr:
		w = os.Stderr
	case api.EventQueued:
		// As docker run tells of a pull: on stderr, the program's
		// output untouched.
		fmt.Fprintf(os.Stderr, "sandboxctl: waiting: %s\n", ev.Data)
		return
	}
	data, err := api.DecodeBytes(ev.Data, ev.Encoding)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandboxctl: undecodable %s event: %v\n", ev.Type, err)
		return
	}
	_, _ = w.Write(data)
}

// remote splits SESSION:PATH; a local path (which may hold a colon after a
// slash) is not remote.
func remote(arg string) (id, p string, ok bool) {
	id, p, ok = strings.Cut(arg, ":")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", "", false
	}
	return id, p, true
}

func newCpCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files between the host and a session",
		Long: `Copy a file or directory into a session (sandboxctl cp LOCAL SESSION:PATH)
or out of one (sandboxctl cp SESSION:PATH LOCAL). PATH is relative to
/workspace. A directory comes down as a directory; links inside it come down
as links and are never followed. "-" is stdin or stdout for a single file.`,
		Example: "  sandboxctl cp data.csv $id:inputs/data.csv\n  sandboxctl cp $id:outputs ./results",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.client()
			if id, p, ok := remote(args[1]); ok {
				return upload(cmd, c, args[0], id, p)
			}
			if id, p, ok := remote(args[0]); ok {
				return download(cmd, c, id, p, args[1])
			}
			return fail("one of SRC and DST must be SESSION:PATH")
		},
	}
}

func upload(cmd *cobra.Command, c *client.Client, local, id, dst string) error {
	ctx := cmd.Context()
	if local == "-" {
		if dst == "" || strings.HasSuffix(dst, "/") {
			return fail("name the destination file when copying from stdin")
		}
		_, err := c.PutFile(ctx, id, dst, os.Stdin, 0)
		return orFailure(err)
	}
	st, err := os.Stat(local)
	if err != nil {
		return fail("%v", err)
	}
	if dst == "" || strings.HasSuffix(dst, "/") {
		dst += filepath.Base(local)
	}
	if !st.IsDir() {
		return putLocal(cmd, c, local, id, dst, st.Mode())
	}
	return filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err // directories are made on the way; links and the like are skipped
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		return putLocal(cmd, c, p, id, path.Join(dst, filepath.ToSlash(rel)), info.Mode())
	})
}

func putLocal(cmd *cobra.Command, c *client.Client, local, id, dst string, mode fs.FileMode) error {
	f, err := os.Open(local)
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	_, err = c.PutFile(cmd.Context(), id, dst, f, uint32(mode.Perm()))
	return orFailure(err)
}

func orFailure(err error) error {
	if err != nil {
		return apiFailure(err)
	}
	return nil
}

func download(cmd *cobra.Command, c *client.Client, id, src, local string) error {
	body, contentType, err := c.GetFile(cmd.Context(), id, src)
	if err != nil {
		return apiFailure(err)
	}
	defer body.Close()
	if contentType == api.ContentTypeTar && local != "-" {
		return extract(body, local)
	}
	return save(body, local, path.Base(src))
}

// save writes a downloaded file to dst: "-" is stdout, and into an existing
// directory the file keeps its name.
func save(body io.Reader, dst, name string) error {
	if dst == "-" {
		_, err := io.Copy(os.Stdout, body)
		return err
	}
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		dst = filepath.Join(dst, name)
	}
	f, err := os.Create(dst)
	if err != nil {
		return fail("%v", err)
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return fail("downloading %s: %v", name, err)
	}
	return f.Close()
}

// extract unpacks a directory archive from a sandbox, which is untrusted:
// everything is written through os.Root on the destination, so no entry
// and no link in the archive can reach outside it. Into an existing
// directory the archive's top directory is added; otherwise dst becomes it.
func extract(r io.Reader, dst string) error {
	into := false
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		into = true
	} else if err := os.Mkdir(dst, 0o755); err != nil {
		return fail("%v", err)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fail("%v", err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fail("reading the archive: %v", err)
		}
		name := path.Clean(hdr.Name)
		if !into {
			_, rest, _ := strings.Cut(name, "/")
			name = rest
		}
		if name == "" || name == "." {
			continue
		}
		if err := extractEntry(root, tr, hdr, name); err != nil {
			return fail("%s: %v", hdr.Name, err)
		}
	}
}

// sparse reports a GNU sparse entry (old format or PAX records).
func sparse(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return hdr.Typeflag == tar.TypeGNUSparse
}

func extractEntry(root *os.Root, r io.Reader, hdr *tar.Header, name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, 0o755)
	case tar.TypeSymlink:
		_ = root.Remove(name)
		return root.Symlink(hdr.Linkname, name)
	case tar.TypeReg:
		if sparse(hdr) {
			// The reader would write the holes out in full: a few bytes of
			// archive could fill the host's disk.
			return errors.New("a sparse file: not extracted")
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return nil // anything else is not made on the host
}
