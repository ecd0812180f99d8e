package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newApprovalsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "Approve or deny the requests a policy in mode \"ask\" holds for a person",
		Long: `A policy block with mode = "ask" turns what it would deny into a question:
the run or exec waits, up to approval_timeout, until a person approves or
denies it here (or on the dashboard). Who decided, when and why are kept
with the approval and in the history.`,
	}
	var (
		asJSON bool
		state  string
		reason string
	)
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List approvals, newest first (pending ones by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if state == "all" {
				state = ""
			}
			list, err := g.client().Approvals(cmd.Context(), state)
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(list)
			}
			table("ID\tSTATE\tKIND\tLANGUAGE\tSESSION\tASKED\tWHY\tDECIDED", func(w *tabwriter.Writer) {
				for _, a := range list {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.State, a.Kind, a.Language, orDash(a.Session),
						a.Created.Local().Format("15:04:05"), a.Question.Policy+"/"+a.Question.Rule, decided(a))
				}
			})
			return nil
		},
	}
	ls.Flags().StringVar(&state, "state", api.ApprovalPending, "pending, approved, denied, expired or all")
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show what an approval would run, with the findings at their lines",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.client().Approval(cmd.Context(), args[0])
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				return printJSON(a)
			}
			printApproval(a)
			return nil
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	approve := &cobra.Command{
		Use:   "approve ID",
		Short: "Let a pending request run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.client().Approve(cmd.Context(), args[0], reason)
			if err != nil {
				return apiFailure(err)
			}
			fmt.Printf("approved %s%s\n", a.ID, unwaited(a))
			return nil
		},
	}
	approve.Flags().StringVar(&reason, "reason", "", "why, for the record")
	deny := &cobra.Command{
		Use:   "deny ID --reason WHY",
		Short: "Refuse a pending request: its client gets approval_denied with the reason",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return fail("say why with --reason: the client that asked is told")
			}
			a, err := g.client().Deny(cmd.Context(), args[0], reason)
			if err != nil {
				return apiFailure(err)
			}
			fmt.Printf("denied %s%s\n", a.ID, unwaited(a))
			return nil
		},
	}
	deny.Flags().StringVar(&reason, "reason", "", "why (required): the client that asked is told")
	cmd.AddCommand(ls, show, approve, deny)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// decided says who decided an approval and when, or when it expires.
func decided(a api.Approval) string {
	if a.Decided == nil {
		return "expires " + a.Deadline.Local().Format("15:04:05")
	}
	return fmt.Sprintf("%s %s by %s", a.State, a.Decided.Local().Format("15:04:05"), orDash(a.By))
}

// requester names who asked, as the daemon vouches for it: the socket's
// peer (its user, uid and command), the dashboard, or an E2B key.
func requester(r *api.Requester) string {
	if r == nil {
		return "-"
	}
	who := "uid ?"
	if r.UID != nil {
		who = fmt.Sprintf("uid %d", *r.UID)
		if r.User != "" {
			who = fmt.Sprintf("%s (%s)", r.User, who)
		}
	}
	switch r.Via {
	case "e2b":
		who = "E2B key " + r.Key
	case "dashboard":
		who = "dashboard, signed in by " + who
	default:
		if r.Process != "" {
			who += " via " + r.Process
		}
	}
	if r.Client != "" {
		who += fmt.Sprintf(" (client %q)", r.Client)
	}
	return who
}

// unwaited warns that a decision reached no client.
func unwaited(a *api.Approval) string {
	if a.Waiting {
		return ""
	}
	return " (its client no longer waits: recorded, nothing runs)"
}

// printApproval shows an approval as a person reviews it: what runs, and
// each file with the findings under their lines.
func printApproval(a *api.Approval) {
	fmt.Printf("approval %s: %s\n", a.ID, a.State)
	fmt.Printf("  %s in %s", a.Kind, a.Language)
	if a.Session != "" {
		fmt.Printf(", session %s", a.Session)
	}
	fmt.Printf(", asked %s, %s\n", a.Created.Local().Format(time.DateTime), decided(*a))
	if a.RequestedBy != nil {
		fmt.Printf("  asked by %s\n", requester(a.RequestedBy))
	}
	if a.Reason != "" {
		fmt.Printf("  reason: %s\n", a.Reason)
	}
	for _, r := range a.Refused {
		fmt.Printf("  refused %s: %s tried to decide: %s\n", r.At.Local().Format("15:04:05"), requester(&r.By), r.Reason)
	}
	fmt.Printf("  asked by policy %s: %s: %s\n", a.Question.Policy, a.Question.Rule, a.Question.Message)
	if len(a.Argv) > 0 {
		fmt.Printf("\n  $ %s\n", strings.Join(a.Argv, " "))
	}
	shown := map[int]bool{}
	for _, f := range a.Files {
		fmt.Printf("\n--- %s\n", f.Path)
		first := max(f.FirstLine, 1)
		if first > 1 {
			fmt.Printf("     ... (from line %d)\n", first)
		}
		for i, line := range strings.Split(strings.TrimSuffix(f.Content, "\n"), "\n") {
			fmt.Printf("%4d | %s\n", first+i, line)
			for j, fd := range a.Findings {
				if fd.Line == first+i && (fd.File == "" || fd.File == f.Path) {
					fmt.Printf("     ^ %s/%s (%s): %s\n", fd.Policy, fd.Rule, fd.Severity, fd.Message)
					shown[j] = true
				}
			}
		}
		if f.Truncated {
			fmt.Println("     ... (cut: the rest is not shown)")
		}
	}
	for j, fd := range a.Findings {
		if !shown[j] {
			fmt.Printf("  %s\n", fd)
		}
	}
}
