package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// addCompletions makes shell completion (`sandboxctl completion bash|zsh|
// fish`, cobra's) ask the daemon: language names for --lang and LANGUAGE
// arguments, session ids for SESSION arguments.
func addCompletions(root *cobra.Command, g *globals) {
	ask := func(list func(context.Context) ([]string, error)) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			names, err := list(ctx)
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		}
	}
	languages := ask(func(ctx context.Context) (names []string, err error) {
		ls, err := g.client().Languages(ctx)
		for _, l := range ls {
			names = append(names, l.Name+"\t"+l.DisplayName)
		}
		return names, err
	})
	sessions := ask(func(ctx context.Context) (ids []string, err error) {
		ss, err := g.client().Sessions(ctx)
		for _, s := range ss {
			ids = append(ids, s.ID+"\t"+s.Language+", "+s.State)
		}
		return ids, err
	})
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("lang") != nil {
			_ = c.RegisterFlagCompletionFunc("lang", languages)
		}
		// The first argument the usage line names, e.g. "exec [flags] SESSION -- CMD".
		for _, arg := range strings.Fields(c.Use)[1:] {
			if arg == "[flags]" {
				continue
			}
			many := strings.HasSuffix(strings.Trim(arg, "[]"), "...")
			var complete cobra.CompletionFunc
			switch strings.Trim(arg, "[].") {
			case "SESSION":
				complete = sessions
			case "LANGUAGE":
				complete = languages
			}
			if complete != nil && c.ValidArgsFunction == nil {
				c.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
					if len(args) > 0 && !many {
						return nil, cobra.ShellCompDirectiveDefault
					}
					return complete(cmd, args, prefix)
				}
			}
			break
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
