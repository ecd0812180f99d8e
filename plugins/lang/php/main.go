// Command sandbox-lang-php is the PHP language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "php",
			DisplayName:    "PHP",
			Version:        "1.0.0",
			Extensions:     []string{"php"},
			Aliases:        []string{},
			DefaultImage:   "sandboxd/php:latest",
			VersionCommand: []string{"php", "--version"},
		},
		MainFile: "main.php",
		Run:      []string{"php", "{entry}"},
	})
}
