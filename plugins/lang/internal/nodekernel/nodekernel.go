// Package nodekernel is the context kernel of the languages node runs:
// kernel.js, for JavaScript cells and, with type stripping, TypeScript's.
package nodekernel

import _ "embed"

//go:embed kernel.js
var kernel string

// JavaScript is the context command of a JavaScript context.
func JavaScript() []string { return []string{"node", "-e", kernel} }

// TypeScript is the context command of a TypeScript context: node's own
// type stripping (module.stripTypeScriptTypes, Node 23.2 and later) makes
// each cell JavaScript first.
func TypeScript() []string { return []string{"node", "-e", kernel, "typescript"} }
