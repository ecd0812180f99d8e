package daemon_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
	"github.com/sandboxd/sandboxd/internal/sessions"
)

// calc is a language of HCL alone: the generic plugin has no contexts.
const calc = `
language "calc" {
  plugin     = "generic"
  image      = "sandboxd/bash:latest"
  extensions = ["calc"]
  main_file  = "main.calc"
  run        = ["sh", "{entry}"]
}`

// A language's block lists the other languages whose contexts its
// sessions run: their names and aliases resolve, once sandboxd starts;
// a language it does not list, or a language without contexts, is
// refused with what to change.
func TestContextLanguages(t *testing.T) {
	for _, bad := range []struct{ contexts, says string }{
		{`["cobol"]`, `no language "cobol"`},
		{`["calc"]`, `language "calc" has no contexts`},
	} {
		_, _, err := daemontest.Open(t, daemontest.Options{Languages: daemontest.Bash + calc + `
language "terminal" {
  plugin   = "bash"
  image    = "sandboxd/bash:latest"
  contexts = ` + bad.contexts + `
}`})
		if err == nil || !strings.Contains(err.Error(), `language "terminal": contexts: `+bad.says) {
			t.Errorf("contexts = %s: %v", bad.contexts, err)
		}
	}

	d, _ := daemontest.New(t, daemontest.Bash+calc+`
language "node" {
  image = "sandboxd/node:latest"
}
language "terminal" {
  plugin   = "bash"
  image    = "sandboxd/bash:latest"
  contexts = ["js", "node"]
}`)
	ctx := context.Background()
	term, ok := d.Languages.Lookup("terminal")
	if !ok || strings.Join(term.ContextLanguages(), " ") != "terminal node" {
		t.Fatalf("terminal's context languages: %v", term.ContextLanguages())
	}
	// Its own by any of its plugin's names; node's by node's.
	for name, want := range map[string]string{"": "terminal", "terminal": "terminal", "bash": "terminal", "SH": "terminal", "js": "node", "NODE": "node"} {
		if l, aerr := d.Languages.ContextLanguage(term, name); aerr != nil || l.Name() != want {
			t.Errorf("%q: %v, want %s", name, aerr, want)
		}
	}
	s, aerr := d.Sessions.Create(ctx, sessions.Request{Language: "bash"})
	if aerr != nil {
		t.Fatal(aerr)
	}
	for _, req := range []daemon.ExecRequest{
		{Context: "main", Language: "node", Program: request.Program{Code: "echo"}}, // bash lists none
		{Context: "main", Language: "calc", Program: request.Program{Code: "echo"}},
		{Language: "bash", Program: request.Program{Code: "echo"}}, // no context
	} {
		if _, aerr := d.Exec(ctx, s.ID, req, nil); !errdefs.Is(aerr, errdefs.Invalid) {
			t.Errorf("%+v: %v", req, aerr)
		}
	}
}
