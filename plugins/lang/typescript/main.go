// Command sandbox-lang-typescript is the TypeScript language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/nodewarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// transpiler strips a program's types (images/node/transpile.js).
const transpiler = "/usr/local/lib/sandboxd/transpile.js"

// primeTypeScript loads the compiler transpile.js loads, and has it
// transpile once, so its code is compiled before a program comes.
const primeTypeScript = `const ts = require("typescript");
ts.transpileModule("const x: number = 1", { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020 } });`

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
