package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// E2B is the e2b block: a listener that answers E2B's SDKs (internal/e2b).
type E2B struct {
	Listen  string
	APIKeys []string
	// Templates maps the template names clients create sandboxes from to
	// languages: every language by its name, "base" and
	// "code-interpreter-v1" by default, and the template blocks.
	Templates map[string]E2BTemplate
}

// E2BTemplate is what a sandbox made from a template is: a session of
// Language, with Env on top of the language's, under Limits (nil: the
// language's), running Start in the background from its first moment.
type E2BTemplate struct {
	Language string
	Env      map[string]string
	Limits   *Limits
	Start    []string
}

type e2bSchema struct {
	Listen    *string          `hcl:"listen,optional"`
	APIKeys   []string         `hcl:"api_keys,optional"`
	Templates []templateSchema `hcl:"template,block"`
	Body      hcl.Body         `hcl:",body"`
}

type templateSchema struct {
	Name     string            `hcl:"name,label"`
	Language *string           `hcl:"language,optional"`
	Env      map[string]string `hcl:"env,optional"`
	Limits   *limitsSchema     `hcl:"limits,block"`
	Start    []string          `hcl:"start,optional"`
	Body     hcl.Body          `hcl:",body"`
}

// minAPIKey is the shortest API key accepted: long enough not to guess.
const minAPIKey = 20

// The templates E2B's SDKs create from when told nothing: the core SDK's
// and the Code Interpreter's, and the languages that serve them here
// when the configuration has them, first first. E2B's base image has
// python3 and bash: python's image has both, bash's no python.
var defaultTemplates = map[string][]string{
	"base":                {"python", "bash"},
	"code-interpreter-v1": {"code-interpreter", "python"},
}

// e2b reads the e2b block, once the languages are known.
func (v *validator) e2b(es *e2bSchema, languages []Language) *E2B {
	e := &E2B{Listen: "127.0.0.1:4982", Templates: map[string]E2BTemplate{}}
	if es.Listen != nil {
		e.Listen = v.listen(es.Body, *es.Listen)
	}
	if len(es.APIKeys) == 0 {
		v.fail(es.Body, "api_keys", "is missing", `the keys E2B clients send (E2B_API_KEY), each "e2b_" and at least 20 hex digits: api_keys = ["e2b_<openssl rand -hex 20>"]`)
	}
	for _, k := range es.APIKeys {
		switch hex, ok := strings.CutPrefix(k, "e2b_"); {
		case !ok || strings.Trim(hex, "0123456789abcdef") != "":
			// E2B's SDKs refuse any other key before they send it.
			v.fail(es.Body, "api_keys", "has a key that is not \"e2b_\" and lowercase hex digits", `keys as E2B's SDKs take them: "e2b_<openssl rand -hex 20>"`)
		case len(hex) < minAPIKey:
			v.fail(es.Body, "api_keys", fmt.Sprintf("has a key of %d hex digits", len(hex)), fmt.Sprintf(`keys of at least %d hex digits: "e2b_<openssl rand -hex 20>"`, minAPIKey))
		}
	}
	e.APIKeys = slices.Clone(es.APIKeys)
	known := map[string]*Language{}
	for i, l := range languages {
		known[l.Name] = &languages[i]
		e.Templates[l.Name] = E2BTemplate{Language: l.Name}
	}
	names := make([]string, 0, len(defaultTemplates))
	for name := range defaultTemplates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, lang := range defaultTemplates[name] {
			if known[lang] != nil {
				e.Templates[name] = E2BTemplate{Language: lang}
				break
			}
		}
	}
	seen := map[string]bool{}
	for _, ts := range es.Templates {
		if v.defined(seen, "template", ts.Name, ts.Body) {
			continue
		}
		switch {
		case ts.Language == nil:
			v.fail(ts.Body, "language", "is missing", `the language its sandboxes run: the name of a language block, e.g. language = "python"`)
		case known[*ts.Language] == nil:
			v.fail(ts.Body, "language", fmt.Sprintf("is %q, which has no language block", *ts.Language), "the name of a language block of this file")
		default:
			lang := known[*ts.Language]
			t := E2BTemplate{Language: lang.Name, Env: ts.Env, Start: ts.Start}
			if ts.Limits != nil {
				l := v.limits(ts.Limits, lang.Limits)
				if l.Memory > lang.Limits.Memory || l.CPUs > lang.Limits.CPUs || l.Pids > lang.Limits.Pids || l.Timeout > lang.Limits.Timeout {
					v.fail(ts.Body, "limits", "are above language "+lang.Name+"'s", "limits at most the language's: a template narrows them")
				}
				t.Limits = &l
			}
			if ts.Start != nil && len(ts.Start) == 0 {
				v.fail(ts.Body, "start", "is empty", `a command, one argument each: start = ["python3", "-m", "http.server", "8000"]`)
			}
			e.Templates[ts.Name] = t
		}
	}
	return e
}
