// Command sandbox-lang-python is the Python language plugin.
package main

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// kernel is the context kernel, run with -u so output streams as printed.
//
//go:embed kernel.py
var kernel string

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "python",
			DisplayName:    "Python 3",
			Version:        "1.0.0",
			Extensions:     []string{"py"},
			Aliases:        []string{"py", "python3"},
			DefaultImage:   "sandboxd/python:latest",
			VersionCommand: []string{"python3", "--version"},
			InstallCommand: language.InstallDebianFirst("python3-", "python3-pip", "pip3 install --break-system-packages --no-cache-dir"),
			ContextCommand: []string{"python3", "-u", "-c", kernel},
		},
		MainFile: "main.py",
		Run:      []string{"python3", "{entry}"},
		// Unbuffered, so output streams as it is printed.
		Env: map[string]string{"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
	})
}
