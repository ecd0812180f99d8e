// Command sandbox-lang-bash is the Bash language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// kernel is the context kernel: one interactive shell, fed by jq.
//
//go:embed kernel.sh
var kernel string

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "bash",
			DisplayName:    "Bash",
			Version:        "1.0.0",
			Extensions:     []string{"sh", "bash"},
			Aliases:        []string{"sh", "shell"},
			DefaultImage:   "sandboxd/bash:latest",
			VersionCommand: []string{"bash", "--version"},
			ContextCommand: []string{"bash", "-c", kernel},
		},
		MainFile: "main.sh",
		Run:      []string{"bash", "{entry}"},
	})
}
