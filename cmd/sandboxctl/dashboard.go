package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
)

func newDashboardCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "dashboard",
		Short: "Print a link that opens sandboxd's web dashboard in a browser",
		Long: `Print a link to the dashboard on sandboxd's TCP listener (http.listen in
sandboxd.hcl) with a fresh login token. Opening it signs the browser in
for 12 hours; the link itself is good for 10 minutes. Each run makes a new
one; removing state_dir/dashboard.key and restarting sandboxd signs every
browser out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			login, err := g.client().DashboardLogin(cmd.Context())
			if err != nil {
				return apiFailure(err)
			}
			fmt.Println(login.URL)
			fmt.Fprintf(os.Stderr, "open it within %s (by %s)\n", time.Until(login.ExpiresAt).Round(time.Minute), login.ExpiresAt.Local().Format(time.Kitchen))
			return nil
		},
	}
}
