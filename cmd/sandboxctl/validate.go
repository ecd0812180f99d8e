package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sandboxd/sandboxd/api"
)

func newValidateCmd(g *globals) *cobra.Command {
	var (
		lang   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "validate FILE|-",
		Short: "Run the policies over a program without running it",
		Long: `Runs sandboxd's policy chain over a program, as a run would, without running
anything. Prints one line per finding: file:line:col: severity policy/rule: message.
Exit 0 when the policies allow the program, 1 when an enforcing policy would deny it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prog, err := readProgram(args[0], lang)
			if err != nil {
				return err
			}
			res, err := g.client().Validate(cmd.Context(), api.ValidateRequest{
				Language: prog.Language, Code: prog.Code, Files: prog.Files, Entry: prog.Entry,
			})
			if err != nil {
				return apiFailure(err)
			}
			if asJSON {
				_ = printJSON(res)
			} else {
				printFindings(os.Stdout, "", res.Findings)
			}
			if !res.Allowed {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "", "language (default: from the file's extension)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
