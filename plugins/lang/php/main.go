// Command sandbox-lang-php is the PHP language plugin.
package main

import (
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// warmHook is the preload library that holds a started php at the open of
// its script until the run arrives (images/php/warm.c); sandboxd's php
// image has it.
const warmHook = "/usr/local/lib/sandboxd/php-warm.so"

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
			// A program sent as code, with no arguments: php main.php,
			// started ahead. Without the hook php would run whatever
			// main.php holds now, so an image without it fails the start.
			Warm: []language.Warm{{
				Command: []string{"sh", "-c", `[ -r "$LD_PRELOAD" ] || { echo "$LD_PRELOAD is not in this image: build it from sandboxd's images/php" >&2; exit 1; }; exec php main.php`},
				Stands:  []string{"php", "main.php"},
				Exact:   true,
				HookEnv: map[string]string{"LD_PRELOAD": warmHook, "SANDBOXD_WARM_SCRIPT": "main.php"},
			}},
		},
		MainFile: "main.php",
		Run:      []string{"php", "{entry}"},
	})
}
