package builtin

import (
	"context"

	"github.com/sandboxd/sandboxd/plugins/policy"
	"github.com/sandboxd/sandboxd/plugins/policy/internal/rules"
)

// patterns is the patterns policy (warn by default): dangerous constructs
// per language, with exact lines, never in comments or strings where the
// language makes that easy to tell (Go is parsed with go/parser). Errors
// and criticals (rm -rf /, curl | sh, fork bombs) deny when the policy
// enforces.
type patterns struct{}

func (patterns) Info(context.Context) (policy.Info, error) {
	return policy.Info{Name: "patterns", Version: "1.0.0", DefaultMode: policy.ModeWarn,
		Description: "dangerous constructs per language: eval, shell commands, unpickling, rm -rf /, curl | sh, fork bombs"}, nil
}

func (patterns) Check(_ context.Context, req policy.Request) (policy.Verdict, error) {
	var out []policy.Finding
	for _, f := range req.Files {
		family := policy.FamilyOfFile(f.Path, req.Language)
		if family == "" {
			continue
		}
		out = append(out, rules.Scan(policy.NewSource(f.Path, family, f.Content), family)...)
	}
	return policy.DenyAtError(out), nil
}
