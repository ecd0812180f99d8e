// Command sandbox-lang-node is the Node.js language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/nodekernel"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/nodewarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "node",
			DisplayName:    "Node.js",
			Version:        "1.0.0",
			Extensions:     []string{"js", "mjs", "cjs"},
			Aliases:        []string{"js", "javascript", "nodejs"},
			DefaultImage:   "sandboxd/node:latest",
			VersionCommand: []string{"node", "--version"},
			InstallCommand: language.InstallNPM,
			ContextCommand: nodekernel.JavaScript(),
			// A program sent as code: node main.js, started ahead.
			Warm: []language.Warm{nodewarm.Warm("main.js")},
		},
		MainFile: "main.js",
		Run:      []string{"node", "{entry}"},
	})
}
