package main

import (
	"os/exec"
	"strings"
	"testing"
)

// sandboxctl is a client: it links the API, the client and what the
// command line itself needs, none of the daemon (its sessions, runtimes,
// plugins, store), so that it stays small and builds apart.
func TestLinksNoDaemon(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{"api": true, "client": true, "cmd/sandboxctl": true, "internal/mcpserver": true, "internal/units": true}
	for _, p := range strings.Fields(string(out)) {
		rel, ours := strings.CutPrefix(p, "github.com/sandboxd/sandboxd/")
		if ours && !allowed[rel] {
			t.Errorf("sandboxctl links %s: a client needs only the API (use package client)", p)
		}
	}
}
