package main

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
)

// topEvery is how often `session top` redraws: the daemon samples each
// session's sandbox as often.
const topEvery = 2 * time.Second

func newSessionTopCmd(g *globals) *cobra.Command {
	var once, asJSON bool
	cmd := &cobra.Command{
		Use:   "top [SESSION...]",
		Short: "Show what sessions' sandboxes use, live (like docker stats)",
		Long: `Show, for every session (or those named), what its sandbox uses: CPU (100%
is one CPU), memory against its limit, processes, bytes in its workspace
and /tmp, and bytes through the egress proxy. It redraws every 2 s until
interrupted; --no-stream prints once. A hibernated session uses nothing
and is shown as such; asking does not wake it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.client()
			live := !once && !asJSON && term.IsTerminal(int(os.Stdout.Fd()))
			for {
				rows, err := topRows(cmd, c, args)
				if err != nil {
					return apiFailure(err)
				}
				if asJSON {
					return printJSON(rows)
				}
				var buf bytes.Buffer
				if live {
					buf.WriteString("\x1b[H\x1b[2J") // home, clear: one frame at a time
				}
				printTop(&buf, rows)
				os.Stdout.Write(buf.Bytes())
				if once {
					return nil
				}
				if !live {
					fmt.Println() // frames apart, for a pipe
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(topEvery):
				}
			}
		},
	}
	cmd.Flags().BoolVar(&once, "no-stream", false, "print once and exit")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the metrics as JSON, once")
	return cmd
}

// topRow is one session's line.
type topRow struct {
	Session api.Session         `json:"session"`
	Metrics *api.SessionMetrics `json:"metrics,omitempty"`
	Error   string              `json:"error,omitempty"`
}

// topRows asks for the sessions named (all when none is), and what each
// uses, a few at a time.
func topRows(cmd *cobra.Command, c *client.Client, ids []string) ([]topRow, error) {
	var sessions []api.Session
	if len(ids) == 0 {
		list, err := c.Sessions(cmd.Context())
		if err != nil {
			return nil, err
		}
		sessions = list
	} else {
		for _, id := range ids {
			s, err := c.Session(cmd.Context(), id)
			if err != nil {
				return nil, err
			}
			sessions = append(sessions, *s)
		}
	}
	rows := make([]topRow, len(sessions))
	slots := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, s := range sessions {
		rows[i].Session = s
		if s.State != api.SessionActive {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			m, err := c.Metrics(cmd.Context(), s.ID)
			if err != nil {
				rows[i].Error = err.Error()
				return
			}
			rows[i].Metrics = m
		}()
	}
	wg.Wait()
	return rows, nil
}

func printTop(out *bytes.Buffer, rows []topRow) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tLANGUAGE\tCPU %\tMEM USAGE / LIMIT\tMEM %\tPROCS\tWORKSPACE\tTMP\tNET OUT / IN")
	for _, r := range rows {
		s := r.Session
		now := (*api.SandboxUsage)(nil)
		if r.Metrics != nil {
			now = r.Metrics.Now
		}
		switch {
		case r.Error != "":
			fmt.Fprintf(w, "%s\t%s\t%s\n", s.ID, s.Language, r.Error)
		case now == nil:
			fmt.Fprintf(w, "%s\t%s\t%s\t-\t-\t-\t-\t-\t-\n", s.ID, s.Language, s.State)
		default:
			memPct := "-"
			if s.Limits.Memory > 0 {
				memPct = fmt.Sprintf("%.1f%%", 100*float64(now.MemoryBytes)/float64(s.Limits.Memory))
			}
			fmt.Fprintf(w, "%s\t%s\t%.1f%%\t%s / %s\t%s\t%d\t%s\t%s\t%s / %s\n", s.ID, s.Language, now.CPUPercent,
				api.ByteSize(now.MemoryBytes), s.Limits.Memory, memPct, now.Processes,
				api.ByteSize(now.WorkspaceBytes), api.ByteSize(now.TmpBytes),
				api.ByteSize(now.NetworkSentBytes), api.ByteSize(now.NetworkReceivedBytes))
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "(no sessions)")
	}
	w.Flush()
}
