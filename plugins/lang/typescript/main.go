// Command sandbox-lang-typescript is the TypeScript language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/nodewarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// transpiler strips a program's types (images/node/transpile.js).
const transpiler = "/usr/local/lib/sandboxd/transpile.js"

// primeTypeScript is run by the warm transpiler before a program comes:
// V8 compiles the compiler's code the first time it runs, so a program's
// transpile then finds it compiled (hello world's takes a third of the
// time it took after a one-line prime, a program with classes, enums and
// generics a tenth).
//
//go:embed prime.js
var primeTypeScript string

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
			// Started ahead: the transpiler, with TypeScript loaded and
			// run once, and node for the program sent as code.
			Warm: []language.Warm{nodewarm.Warm(transpiler, primeTypeScript), nodewarm.Warm(language.OutDir+"/main.js", "")},
		},
		MainFile: "main.ts",
		Compile:  []string{"node", transpiler, "{outdir}", "{sources}"},
		Run:      []string{"node", "{outdir}/{stem}.js"},
	})
}
