// Command sandbox-lang-node is the Node.js language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

//go:embed kernel.js
var kernel string

// warmHook is the warm process's preloaded module.
//
//go:embed warm.js
var warmHook string

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
			ContextCommand: []string{"node", "-e", kernel},
			// A program sent as code: node main.js, started ahead.
			Warm: &language.Warm{
				Command: []string{"node", "main.js"},
				Stands:  []string{"node", "main.js"},
				HookEnv: map[string]string{"NODE_OPTIONS": "--require " + language.WarmDir + "/warm.js"},
				Files:   map[string]string{"warm.js": warmHook},
			},
		},
		MainFile: "main.js",
		Run:      []string{"node", "{entry}"},
	})
}
