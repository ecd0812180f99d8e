// Command sandbox-lang-csharp is the C# language plugin: Mono's mcs and
// mono from Debian.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// mcs is the compile step's command before its sources. mcs says
// "Compilation succeeded - 1 warning(s)" on stdout: the shell sends it to
// stderr with the diagnostics, so that the program's stdout is its own.
var mcs = []string{"sh", "-c", `exec "$@" >&2`, "sh", "mcs", "-optimize+", "-out:" + language.OutDir + "/prog.exe"}

// env is every step's: Mono's console writes UTF-8 only under a UTF-8
// locale, and its shared area is a /dev/shm file per process, of no use
// in a sandbox.
var env = map[string]string{"LANG": "C.UTF-8", "MONO_DISABLE_SHARED_AREA": "1"}

func main() {
	plugins.Serve(&language.Template{
		Meta: language.Info{
			Name:           "csharp",
			DisplayName:    "C# (Mono)",
			Version:        "1.0.0",
			Extensions:     []string{"cs"},
			Aliases:        []string{"cs", "c#", "mono"},
			DefaultImage:   "sandboxd/csharp:latest",
			VersionCommand: []string{"mcs", "--version"},
			// mcs started ahead, in a Mono that has compiled twice
			// (images/csharp/McsHook.cs).
			Warm: []language.Warm{{Command: []string{"mono", "/usr/local/lib/sandboxd/mcs-hook.exe"}, Stands: mcs, Env: env}},
		},
		MainFile: "main.cs",
		Compile:  append(mcs[:len(mcs):len(mcs)], "{sources}"),
		Run:      []string{"mono", "{out}.exe"},
		Env:      env,
	})
}
