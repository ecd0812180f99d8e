// Command sandbox-lang-ruby is the Ruby language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// warmLoader is the warm process's script.
//
//go:embed warm.rb
var warmLoader string

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "ruby",
			DisplayName:    "Ruby",
			Version:        "1.0.0",
			Extensions:     []string{"rb"},
			Aliases:        []string{"rb"},
			DefaultImage:   "sandboxd/ruby:latest",
			VersionCommand: []string{"ruby", "--version"},
			InstallCommand: language.InstallDebianFirst("ruby-", "", "gem install --no-document"),
			// A program sent as code: ruby main.rb, started ahead.
			Warm: []language.Warm{{
				Command: []string{"ruby", language.WarmDir + "/warm.rb"},
				Stands:  []string{"ruby", "main.rb"},
				Files:   map[string]string{"warm.rb": warmLoader},
			}},
		},
		MainFile: "main.rb",
		Run:      []string{"ruby", "{entry}"},
	})
}
