package wire

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sandboxd/sandboxd/"

// The API's types (package api) stay at the edges: the clients, the
// servers that speak the API and this package, which maps them to
// sandboxd's own. Nothing inside (the daemon, sessions, languages, the
// store) imports api or this package, so that the wire can change
// without touching them and they can change without touching the wire.
func TestOnlyTheEdgesImportTheAPI(t *testing.T) {
	onlyIn(t, []string{module + "api", module + "internal/wire"},
		"inside sandboxd, work on its own types (internal/wire maps them)",
		"api/", "client/", "cmd/", "e2e/", "internal/server/", "internal/dashboard/", "internal/mcpserver/", "internal/e2b/", "internal/wire/")
}

// The supervisor's protocol stays under the sandbox lease: the runtimes
// speak it, and internal/sandbox (the leases, their runs and the
// workspace's operations) is the only part of the daemon that does. The
// daemon and sessions, and the servers above them, meet its terms.
func TestOnlyTheSandboxLeaseImportsTheSupervisor(t *testing.T) {
	onlyIn(t, []string{module + "runtime/supervisor"},
		"use internal/sandbox's terms (its Lease runs programs, its Workspace does the rest)",
		"runtime/", "cmd/sandbox-init/", "internal/sandbox/", "internal/testutil/", "e2e/")
}

// onlyIn fails for each Go file outside the dirs (relative to the
// module's root) that imports one of pkgs, saying what to do instead.
func onlyIn(t *testing.T, pkgs []string, instead string, dirs ...string) {
	t.Helper()
	root, _ := filepath.Abs("../..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		for _, e := range dirs {
			if strings.HasPrefix(rel, e) {
				return nil
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); slices.Contains(pkgs, p) {
				t.Errorf("%s imports %s: %s", rel, p, instead)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files checked under %s", checked, root)
	}
}
