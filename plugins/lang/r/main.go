// Command sandbox-lang-r is the R language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// kernel is the context kernel: one interactive R, fed by jq.
//
//go:embed kernel.sh
var kernel string

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:        "r",
			DisplayName: "R",
			Version:     "1.0.0",
			Extensions:  []string{"R", "r"},
			Aliases:     []string{"rlang"},
			// R is in the Code Interpreter's image (images/code-interpreter),
			// beside Python and Node.js.
			DefaultImage:   "sandboxd/code-interpreter:latest",
			VersionCommand: []string{"Rscript", "--version"},
			ContextCommand: []string{"bash", "-c", kernel},
		},
		MainFile: "main.R",
		Run:      []string{"Rscript", "{entry}"},
	})
}
