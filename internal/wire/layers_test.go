package wire

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The API's types (package api) stay at the edges: the clients, the
// servers that speak the API and this package, which maps them to
// sandboxd's own. Nothing inside (the daemon, sessions, languages, the
// store) imports api or this package, so that the wire can change
// without touching them and they can change without touching the wire.
func TestOnlyTheEdgesImportTheAPI(t *testing.T) {
	const module = "github.com/sandboxd/sandboxd/"
	edges := []string{"api/", "client/", "cmd/", "e2e/", "internal/server/", "internal/dashboard/", "internal/mcpserver/", "internal/e2b/", "internal/wire/"}
	root, _ := filepath.Abs("../..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		for _, e := range edges {
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
			switch p, _ := strconv.Unquote(imp.Path.Value); p {
			case module + "api", module + "internal/wire":
				t.Errorf("%s imports %s: inside sandboxd, work on its own types (internal/wire maps them)", rel, p)
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
