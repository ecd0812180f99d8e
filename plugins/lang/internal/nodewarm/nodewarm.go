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

// Warm is a warm node that stands in for `node ARGS...` and runs with
// more arguments after them: ARGS are node's options and a script, or
// options that make a script needless (a startup snapshot's).
func Warm(args ...string) language.Warm {
	argv := append([]string{"node"}, args...)
	return language.Warm{
		Command: argv,
		Stands:  argv,
		HookEnv: map[string]string{"NODE_OPTIONS": "--require " + language.WarmDir + "/warm.js"},
		Files:   map[string]string{"warm.js": hook},
	}
}
