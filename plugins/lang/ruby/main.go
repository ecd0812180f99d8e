// Command sandbox-lang-ruby is the Ruby language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

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
		},
		MainFile: "main.rb",
		Run:      []string{"ruby", "{entry}"},
	})
}
