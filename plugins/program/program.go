// Package program is what every plugin contract says of a request's
// program: its files. Language plugins plan them, policy plugins judge
// them, and the daemon keeps them in this one shape from the moment it has
// decoded a request until it hands them to the sandbox.
//
// It is part of the plugin SDK and imports nothing of the daemon.
package program

// File is a file of a program. Path is relative to the sandbox's
// workspace; Mode 0 means 0644.
type File struct {
	Path    string
	Content []byte
	Mode    uint32
}
