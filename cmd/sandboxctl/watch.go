package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newWatchCmd(g *globals) *cobra.Command {
	var recursive, asJSON bool
	cmd := &cobra.Command{
		Use:   "watch SESSION [DIR]",
		Short: "Print what changes under a directory of a session's workspace, as it happens",
		Long: `Print each change under DIR (relative to /workspace; default the workspace
itself) as it happens: "create PATH", "write PATH", "remove PATH",
"rename PATH" (moved away or in), "chmod PATH"; "overflow N" when N changes
came faster than they could be told. With -r, the directories below DIR
too, new ones included. Until interrupted, or DIR goes.`,
		Example: `  sandboxctl watch -r $S src
  sandboxctl watch --json $S outputs | jq -r 'select(.type=="write").path'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 2 {
				dir = args[1]
			}
			enc := json.NewEncoder(os.Stdout)
			err := g.client().Watch(cmd.Context(), args[0], dir, recursive, func(ev api.FileEvent) error {
				switch {
				case asJSON:
					return enc.Encode(ev)
				case ev.Type == api.FileEventReady:
					fmt.Fprintf(os.Stderr, "sandboxctl: watching %s of session %s\n", orWorkspace(dir), args[0])
				case ev.Type == api.FileEventOverflow:
					fmt.Printf("overflow %d\n", ev.Count)
				default:
					fmt.Printf("%s %s\n", ev.Type, ev.Path)
				}
				return nil
			})
			if err != nil {
				return apiFailure(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "the directories below it too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event as a JSON line (the first: ready)")
	return cmd
}

func orWorkspace(dir string) string {
	if dir == "" {
		return "the workspace"
	}
	return dir
}
