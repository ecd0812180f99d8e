// Command sandbox-lang-typescript is the TypeScript language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/nodekernel"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/nodewarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// snapshot is node's startup snapshot with TypeScript loaded and primed
// (images/node/snapshot.js): started from it, node transpiles its
// arguments as images/node/transpile.js does, with a third of the CPU of
// loading the compiler.
const snapshot = "/usr/local/lib/sandboxd/typescript.blob"

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
			ContextCommand: nodekernel.TypeScript(),
			// Started ahead: the transpiler, and node for the program
			// sent as code.
			Warm: []language.Warm{nodewarm.Warm("--snapshot-blob", snapshot), nodewarm.Warm(language.OutDir + "/main.js")},
		},
		MainFile: "main.ts",
		Compile:  []string{"node", "--snapshot-blob", snapshot, "{outdir}", "{sources}"},
		Run:      []string{"node", "{outdir}/{stem}.js"},
	})
}
