// Command misbehave is a policy plugin for tests that fails as its
// options say: behave = "crash" (exits mid-call), "hang" (never answers),
// "garbage" (an invalid severity), "fail" (returns an error), or "deny"
// (denies with one finding).
package main

import (
	"context"
	"errors"
	"os"

	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/policy"
)

type misbehave struct{}

func (misbehave) Info(context.Context) (policy.Info, error) {
	return policy.Info{Name: "misbehave", Version: "0.0.1", DefaultMode: policy.ModeEnforce}, nil
}

func (misbehave) Check(ctx context.Context, req policy.Request) (policy.Verdict, error) {
	switch req.Options["behave"] {
	case "crash":
		os.Exit(3)
	case "hang":
		<-make(chan struct{})
	case "fail":
		return policy.Verdict{}, errors.New("the plugin's own error")
	case "garbage":
		return policy.Verdict{Findings: []policy.Finding{{Rule: "x", Severity: "apocalyptic"}}}, nil
	case "deny":
		return policy.Verdict{Deny: true, Findings: []policy.Finding{{Rule: "misbehave.deny", Severity: policy.SeverityError, Message: "denied on request"}}}, nil
	}
	return policy.Verdict{}, nil
}

func main() { plugins.ServePolicy(misbehave{}) }
