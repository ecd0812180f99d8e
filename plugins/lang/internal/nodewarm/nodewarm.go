// Package nodewarm is the warm runtime of the languages node runs: node
// with warm.js preloaded (NODE_OPTIONS --require), which waits for the
// run and makes the process the run's before node loads its main module.
package nodewarm

import (
	_ "embed"

	"github.com/sandboxd/sandboxd/plugins/language"
)

//go:embed warm.js
var hook string

// Warm is a warm node that stands in for `node SCRIPT ...`, having run
// prime (JavaScript, or none) ahead: what it loads, the run finds in
// require's cache, and what it runs once is compiled already.
func Warm(script, prime string) language.Warm {
	files := map[string]string{"warm.js": hook}
	first := language.WarmDir + "/warm.js"
	if prime != "" {
		files["prime.js"] = "(() => {\n" + prime + "\n})();\nrequire(\"./warm.js\");\ndelete require.cache[__filename];\n"
		first = language.WarmDir + "/prime.js"
	}
	return language.Warm{
		Command: []string{"node", script},
		Stands:  []string{"node", script},
		HookEnv: map[string]string{"NODE_OPTIONS": "--require " + first},
		Files:   files,
	}
}
