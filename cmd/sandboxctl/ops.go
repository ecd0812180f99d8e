package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func table(header string, rows func(w *tabwriter.Writer)) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, header)
	rows(w)
	w.Flush()
}

func newStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether sandboxd is healthy (exit 0 only if it is)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := g.client().Health(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				_ = printJSON(h)
			} else {
				fmt.Printf("sandboxd %s: %s (up %s)\n", h.Version, h.Status, time.Duration(h.Uptime).Round(time.Second))
				if h.Docker.OK {
					fmt.Printf("docker:   %s (API %s, runtime %s)\n", h.Docker.Version, h.Docker.APIVersion, h.Docker.Runtime)
				} else {
					fmt.Printf("docker:   unavailable: %s\n", h.Docker.Error)
				}
				for _, p := range h.Plugins {
					state := "running"
					if !p.Running {
						state = "idle"
					}
					if p.LastError != "" {
						state += ", last error: " + p.LastError
					}
					fmt.Printf("plugin:   %s/%s %s (%s)\n", p.Kind, p.Name, p.Version, state)
				}
				for _, p := range h.Problems {
					fmt.Println("problem: ", p)
				}
			}
			if h.Status != "ok" {
				return &exitError{code: exitUnhealthy}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newLanguagesCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "languages",
		Short: "List languages, their images and pools",
		RunE: func(cmd *cobra.Command, _ []string) error {
			langs, err := g.client().Languages(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(langs)
			}
			table("NAME\tVERSION\tALIASES\tEXTENSIONS\tIMAGE\tIDLE/BUSY/TARGET\tSTATUS", func(w *tabwriter.Writer) {
				for _, l := range langs {
					status, version, image := "ready", l.Version, l.Image
					switch {
					case l.Building != nil:
						status = fmt.Sprintf("building for %s: %s", time.Since(l.Building.Since).Round(time.Second), l.Building.Step)
					case l.Error != "":
						status = l.Error
					}
					if version == "" {
						version = "-"
					}
					if len(l.Packages) > 0 {
						image = l.BaseImage + " +" + strings.Join(l.Packages, ",")
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d/%d/%d\t%s\n", l.Name, version, strings.Join(l.Aliases, ","),
						strings.Join(l.Extensions, ","), image, l.Pool.Idle, l.Pool.Busy, l.Pool.Target, status)
				}
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPoolsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pools",
		Short: "Show warm pool figures per language",
		RunE: func(cmd *cobra.Command, _ []string) error {
			pools, err := g.client().Pools(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(pools)
			}
			names := make([]string, 0, len(pools))
			for name := range pools {
				names = append(names, name)
			}
			sort.Strings(names)
			// WARM: runs by a runtime started ahead / started cold / runtimes
			// that never became ready; "-" for a language without one.
			table("LANGUAGE\tIDLE\tBUSY\tSTARTING\tREMOVING\tWAITING\tTARGET\tMAX\tHITS\tMISSES\tWARM RUNS/COLD/FAILED\tCREATED\tDESTROYED\tFAILURES\tLAST ERROR", func(w *tabwriter.Writer) {
				for _, name := range names {
					p := pools[name]
					warm := "-"
					if p.Warm {
						warm = fmt.Sprintf("%d/%d/%d", p.WarmHits, p.WarmMisses, p.WarmFailures)
					}
					fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%s\n", name, p.Idle, p.Busy, p.Starting,
						p.Removing, p.Waiting, p.Target, p.Max, p.Hits, p.Misses, warm, p.Created, p.Destroyed, p.Failures, p.LastError)
				}
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPluginsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List plugins and their health",
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := g.client().Plugins(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(list)
			}
			table("KIND\tNAME\tVERSION\tRUNNING\tRESTARTS\tLAST ERROR\tPATH", func(w *tabwriter.Writer) {
				for _, p := range list {
					fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%d\t%s\t%s\n", p.Kind, p.Name, p.Version, p.Running, p.Restarts, p.LastError, p.Path)
				}
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSecretsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "List the secrets runs and sessions may ask for (--secret NAME), with their hosts and where in a request each goes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := g.client().Secrets(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(list)
			}
			table("NAME\tHOSTS\tGOES IN", func(w *tabwriter.Writer) {
				for _, s := range list {
					where := "header " + s.Header
					if s.Query != "" {
						where = "query parameter " + s.Query
					}
					fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, strings.Join(s.Hosts, " "), where)
				}
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newHistoryCmd(g *globals) *cobra.Command {
	var (
		asJSON bool
		limit  int
		filter api.ExecutionFilter
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List recent executions, newest first",
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := g.client().Executions(cmd.Context(), limit, filter)
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(list)
			}
			table("ID\tSTARTED\tLANGUAGE\tEXIT\tDURATION\tASKED BY\tOUTCOME", func(w *tabwriter.Writer) {
				for _, e := range list {
					var flags []string
					if e.TimedOut {
						flags = append(flags, "timed out")
					}
					if e.OOMKilled {
						flags = append(flags, "out of memory")
					}
					if e.Truncated {
						flags = append(flags, "truncated")
					}
					if e.Error != "" {
						flags = append(flags, "not started: "+e.Error)
					}
					switch a := e.Approval; {
					case a != nil && a.State == api.ApprovalApproved:
						flags = append(flags, "approved by "+a.By)
					case a != nil:
						flags = append(flags, fmt.Sprintf("%s by %s: %s", a.State, orDash(a.By), a.Reason))
					case e.Decision == api.DecisionDenied:
						flags = append(flags, "denied by policy")
					}
					if denied := deniedEgress(e.Egress); len(denied) > 0 {
						dests := make([]string, len(denied))
						for i, d := range denied {
							dests[i] = d.dest
						}
						flags = append(flags, "egress denied: "+strings.Join(dests, ", "))
					}
					if n := len(e.Findings); n > 0 {
						flags = append(flags, fmt.Sprintf("%d findings (%s/%s)", n, e.Findings[0].Policy, e.Findings[0].Rule))
					}
					outcome := strings.Join(flags, ", ")
					if outcome == "" {
						outcome = "exited"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%.1fms\t%s\t%s\n", e.ID, e.StartedAt.Local().Format("2006-01-02 15:04:05"),
						e.Language, e.ExitCode, e.Timings.TotalMS, requester(e.Requester), outcome)
				}
			})
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&limit, "limit", 20, "how many")
	cmd.Flags().StringVar(&filter.Language, "lang", "", "only this language")
	cmd.Flags().StringVar(&filter.Session, "session", "", "only this session's")
	cmd.Flags().StringVar(&filter.Kind, "kind", "", "only runs, execs, terminals, E2B processes or desktop actions: run, exec, terminal, process or desktop")
	cmd.Flags().StringVar(&filter.Outcome, "outcome", "", "only these: ok, nonzero, timeout, oom, error or denied")
	return cmd
}

func newStatsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Print the daemon's counters as JSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := g.client().Stats(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			return printJSON(s)
		},
	}
}
