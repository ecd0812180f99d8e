// Command sandbox-lang-rust is the Rust language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/lang/internal/bashwarm"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "rust",
			DisplayName:    "Rust",
			Version:        "1.0.0",
			Extensions:     []string{"rs"},
			Aliases:        []string{"rs", "rustc"},
			DefaultImage:   "sandboxd/rust:latest",
			VersionCommand: []string{"rustc", "--version"},
			// The compile step links with gold.
			Warm: []language.Warm{bashwarm.Link("rustc", "-C link-arg=-fuse-ld=gold")},
		},
		MainFile: "main.rs",
		// std linked dynamically: the link is most of a build, and the
		// image that compiles a program is the one that runs it.
		Compile: []string{"rustc", "--edition", "2021", "-C", "prefer-dynamic", "-o", "{out}", "{entry}"},
		Run:     []string{"{out}"},
	})
}
