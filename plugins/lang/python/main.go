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

// warmHook is the warm process's sitecustomize.
//
//go:embed warm.py
var warmHook string

// env is every step's: unbuffered, so output streams as it is printed.
var env = map[string]string{"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}

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
			// A program sent as code: python3 main.py, started ahead.
			Warm: []language.Warm{{
				Command: []string{"python3", "main.py"},
				Stands:  []string{"python3", "main.py"},
				Env:     env,
				HookEnv: map[string]string{"PYTHONPATH": language.WarmDir},
				Files:   map[string]string{"sitecustomize.py": warmHook},
				Forks:   true,
			}},
		},
		MainFile: "main.py",
		Run:      []string{"python3", "{entry}"},
		Env:      env,
	})
}
