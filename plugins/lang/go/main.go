// Command sandbox-lang-go is the Go language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/bashwarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "go",
			DisplayName:    "Go",
			Version:        "1.0.0",
			Extensions:     []string{"go"},
			Aliases:        []string{"golang"},
			DefaultImage:   "sandboxd/go:latest",
			VersionCommand: []string{"go", "version"},
			// The compile step, with the go command's fixed work done
			// when the image was built.
			Warm: []language.Warm{bashwarm.GoBuild()},
		},
		MainFile: "main.go",
		Compile:  []string{"go", "build", "-o", "{out}", "{sources}"},
		Run:      []string{"{out}"},
	})
}
