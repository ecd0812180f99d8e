// Command sandbox-lang-generic is the language plugin of languages defined
// in sandboxd.hcl alone: a language block with plugin = "generic" carries
// the file name, the compile and run command templates, the extensions
// and aliases, and sandboxd hands them to this plugin as JSON in
// SANDBOXD_LANGUAGE (a language.Template) when it starts it.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// SpecEnv names the environment variable with the language's template.
const SpecEnv = "SANDBOXD_LANGUAGE"

func main() {
	var t language.Template
	if err := json.Unmarshal([]byte(os.Getenv(SpecEnv)), &t); err != nil || t.Meta.Name == "" || len(t.Run) == 0 || t.MainFile == "" {
		fmt.Fprintf(os.Stderr, "sandbox-lang-generic: %s must hold a language template with a name, main_file and run (sandboxd sets it from a language block with plugin = \"generic\")\n", SpecEnv)
		os.Exit(1)
	}
	plugins.Serve(&t)
}
