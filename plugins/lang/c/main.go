// Command sandbox-lang-c is the C language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/bashwarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "c",
			DisplayName:    "C (gcc)",
			Version:        "1.0.0",
			Extensions:     []string{"c"},
			Aliases:        []string{"gcc"},
			DefaultImage:   "sandboxd/c:latest",
			VersionCommand: []string{"gcc", "--version"},
			// The compile step links with gold.
			Warm: []language.Warm{bashwarm.Link("gcc", "-fuse-ld=gold")},
		},
		MainFile: "main.c",
		Compile:  []string{"gcc", "-O2", "-o", "{out}", "{sources}", "-lm"},
		Run:      []string{"{out}"},
	})
}
