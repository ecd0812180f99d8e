// Command sandbox-policy-example shows a third party how to write a
// sandboxd policy plugin: implement policy.Policy (Info and Check) and
// call plugins.ServePolicy. It is loaded only when a policy block names
// it:
//
//	policy "no-todo" {
//	  plugin  = "example"            # bin/plugins/sandbox-policy-example
//	  mode    = "warn"
//	  options = { words = "TODO,FIXME", severity = "warning" }
//	}
//
// It reports every word of its list that appears in code (not in comments
// or strings), with its line and column.
package main

import (
	"context"
	"regexp"
	"strings"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/policy"
)

type example struct{}

// Info says who the policy is and what it does by default.
func (example) Info(context.Context) (policy.Info, error) {
	return policy.Info{Name: "example", Version: "1.0.0", DefaultMode: policy.ModeWarn,
		Description: "reports words of a list found in code", Rules: []string{"example.word"}}, nil
}

// Check judges one request. Options come from the policy block.
func (example) Check(_ context.Context, req policy.Request) (policy.Verdict, error) {
	severity := req.Options["severity"]
	if policy.SeverityRank(severity) < 0 {
		severity = policy.SeverityWarning
	}
	var out []policy.Finding
	for _, word := range strings.Split(req.Options["words"], ",") {
		if word = strings.TrimSpace(word); word == "" {
			continue
		}
		re := regexp.MustCompile(`\b(` + regexp.QuoteMeta(word) + `)\b`)
		for _, f := range req.Files {
			src := policy.NewSource(f.Path, policy.FamilyOfFile(f.Path, req.Language), f.Content)
			for _, m := range src.Find(re, true) {
				out = append(out, src.At(m[2], "example.word", severity, word+" found in code"))
			}
		}
	}
	// DenyAtError denies when a finding is an error or critical; the
	// daemon blocks only if the block's mode is enforce.
	return policy.DenyAtError(out), nil
}

func main() { plugins.ServePolicy(example{}) }
