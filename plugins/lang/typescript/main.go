// Command sandbox-lang-typescript is the TypeScript language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "typescript",
			DisplayName:    "TypeScript",
			Version:        "1.0.0",
			Extensions:     []string{"ts"},
			Aliases:        []string{"ts"},
			DefaultImage:   "sandboxd/node:latest",
			VersionCommand: []string{"tsc", "--version"},
			InstallCommand: language.InstallNPM,
		},
		MainFile: "main.ts",
		Compile:  []string{"node", "/usr/local/lib/sandboxd/transpile.js", "{outdir}", "{sources}"},
		Run:      []string{"node", "{outdir}/{stem}.js"},
	})
}
