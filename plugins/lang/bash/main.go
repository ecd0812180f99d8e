// Command sandbox-lang-bash is the Bash language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

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
		},
		MainFile: "main.sh",
		Run:      []string{"bash", "{entry}"},
	})
}
