// Package builtin holds the policies compiled into sandboxd: limits,
// patterns, secrets and commands. They implement the same contract as a
// policy plugin (plugins/policy), but sandboxd calls them in its own
// process, as Nomad runs its internal drivers: every run asks each of
// them, and a process hop per policy per run cost more CPU than their
// checks. Any other policy block's plugin is a binary in plugin_dir,
// served through go-plugin.
package builtin

import "github.com/sandboxd/sandboxd/plugins/policy"

// catalog is every built-in policy, by the name a block's plugin gives.
var catalog = map[string]policy.Policy{
	"limits":   limits{},
	"patterns": patterns{},
	"secrets":  secrets{},
	"commands": commands{},
}

// Lookup is the built-in policy of that name, if there is one.
func Lookup(name string) (policy.Policy, bool) {
	p, ok := catalog[name]
	return p, ok
}
