package languages

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/plugins/language"
)

// catalogue is a registry of python (whose sessions run node contexts),
// node, and bash (no contexts), as Load would make it without plugins.
func catalogue(t *testing.T) *Registry {
	t.Helper()
	r := &Registry{cfg: &config.Config{Path: "sandboxd.hcl"}, lookup: map[string]*Language{}}
	for _, l := range []*Language{
		{Config: config.Language{Name: "python", Plugin: "python", Contexts: []string{"js"}},
			Info: language.Info{Name: "python", Extensions: []string{"py"}, ContextCommand: []string{"k"}}},
		{Config: config.Language{Name: "code-interpreter", Plugin: "python"},
			Info: language.Info{Name: "python", Extensions: []string{"py"}, ContextCommand: []string{"k"}}},
		{Config: config.Language{Name: "node", Plugin: "node"},
			Info: language.Info{Name: "node", Aliases: []string{"js", "javascript"}, ContextCommand: []string{"k"}}},
		{Config: config.Language{Name: "bash", Plugin: "bash"}, Info: language.Info{Name: "bash"}},
	} {
		r.langs = append(r.langs, l)
		for _, k := range append([]string{l.Config.Name, l.Info.Name}, append(l.Info.Aliases, l.Info.Extensions...)...) {
			if _, ok := r.lookup[k]; !ok {
				r.lookup[k] = l
			}
		}
	}
	for _, l := range r.langs {
		if err := r.resolveContexts(l); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestResolveByNameAliasOrExtension(t *testing.T) {
	r := catalogue(t)
	for name, want := range map[string]string{"python": "python", ".py": "python", "JS": "node", "javascript": "node", "code-interpreter": "code-interpreter"} {
		l, err := r.Resolve(name)
		if err != nil || l.Name() != want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", name, l, err, want)
		}
	}
	if _, err := r.Resolve("cobol"); !errdefs.Is(err, errdefs.UnknownLanguage) || !strings.Contains(err.Error(), "bash, code-interpreter, node, python") {
		t.Errorf("an unknown language: %v", err)
	}
	if _, err := r.Resolve(""); !errdefs.Is(err, errdefs.Invalid) {
		t.Errorf("no language: %v", err)
	}
}

func TestContextLanguage(t *testing.T) {
	r := catalogue(t)
	python, _ := r.Resolve("python")
	ci, _ := r.Resolve("code-interpreter")
	for _, tc := range []struct {
		in         *Language
		name, want string
	}{
		{python, "", "python"},
		{python, "node", "node"},
		{python, "javascript", "node"},
		{ci, "python", "code-interpreter"}, // its own kernel, by its plugin's name
	} {
		l, err := r.ContextLanguage(tc.in, tc.name)
		if err != nil || l.Name() != tc.want {
			t.Errorf("ContextLanguage(%s, %q) = %v, %v; want %s", tc.in.Name(), tc.name, l, err, tc.want)
		}
	}
	if _, err := r.ContextLanguage(ci, "node"); !errdefs.Is(err, errdefs.Invalid) || !strings.Contains(err.Error(), `contexts of language "code-interpreter"`) {
		t.Errorf("a context language its block does not list: %v", err)
	}
	if got := python.ContextLanguages(); strings.Join(got, ",") != "python,node" {
		t.Errorf("ContextLanguages = %q", got)
	}
	python.Config.Contexts = []string{"bash"}
	if err := r.resolveContexts(python); err == nil || !strings.Contains(err.Error(), "has no contexts") {
		t.Errorf("a context language without a kernel: %v", err)
	}
}

func TestNarrowAndExtras(t *testing.T) {
	allow, err := egress.Parse([]string{"pypi.org:443", "*.example.com", "socks.example.com:1080"})
	if err != nil {
		t.Fatal(err)
	}
	l := &Language{Config: config.Language{Name: "python"}, allow: allow}
	none := &Language{Config: config.Language{Name: "bash"}}

	if got, err := l.Narrow(nil); err != nil || len(got) != len(allow) {
		t.Errorf("no network asked: %v, %v", got, err)
	}
	if got, err := l.Narrow(&state.Network{Allow: []string{"pypi.org:443"}}); err != nil || len(got) != 1 {
		t.Errorf("a narrower list: %v, %v", got, err)
	}
	if _, err := l.Narrow(&state.Network{Allow: []string{"evil.com:443"}}); !errdefs.Is(err, errdefs.Invalid) || !strings.Contains(err.Error(), "beyond") {
		t.Errorf("a wider list: %v", err)
	}
	if _, err := none.Narrow(&state.Network{Allow: []string{"pypi.org:443"}}); !errdefs.Is(err, errdefs.Invalid) || !strings.Contains(err.Error(), "no egress") {
		t.Errorf("a list for a language without egress: %v", err)
	}
	if got, err := l.Narrow(&state.Network{Deny: []string{"pypi.org"}}); err != nil || len(got) != len(allow) {
		t.Errorf("a deny list alone narrows nothing: %v, %v", got, err)
	}

	x, err := l.Extras(&state.Network{Deny: []string{"a.example.com"}, Proxy: &state.Proxy{Address: "socks.example.com:1080", Username: "u", Password: "p"}})
	if err != nil || len(x.Deny) != 1 || x.Socks == nil || x.Socks.Address != "socks.example.com:1080" {
		t.Errorf("extras: %+v, %v", x, err)
	}
	for _, bad := range []*state.Proxy{
		{Address: "socks.other.org:1080"},
		{Address: "no-port"},
		{Address: "socks.example.com:1080", Password: "p"},
	} {
		if _, err := l.Extras(&state.Network{Proxy: bad}); !errdefs.Is(err, errdefs.Invalid) {
			t.Errorf("proxy %+v: %v", bad, err)
		}
	}
}
