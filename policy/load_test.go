package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	contract "github.com/sandboxd/sandboxd/plugins/policy"
)

// The shipped policies run in sandboxd's process: no binary, no plugin
// process, reported as built in, judging as their plugins did.
func TestBuiltinPoliciesNeedNoBinary(t *testing.T) {
	ctx := context.Background()
	blocks := []config.Policy{{Name: "size", Plugin: "limits", Options: map[string]string{"max_files": "1"}}, {Name: "patterns", Plugin: "patterns"}}
	c, err := Load(ctx, blocks, t.TempDir(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range c.Plugins() {
		if h := p.Health(); p.Process != nil || h.Path != "built-in" || !h.Running || p.Version == "" {
			t.Errorf("%s: %+v %+v", p.Name, p, h)
		}
	}
	files := []contract.File{{Path: "a.py", Content: []byte("eval(input())\n")}, {Path: "b.py"}}
	d := c.Evaluate(ctx, contract.Request{Kind: contract.KindRun, Language: "python", Files: files})
	if d.Allowed || d.Denial == nil || d.Denial.Policy != "size" || d.Denial.Rule != "limits.files" || len(d.Findings) != 2 || d.Findings[1].Rule != "python.eval" {
		t.Errorf("decision: %+v", d)
	}
	if _, err := Load(ctx, []config.Policy{{Name: "mine", Plugin: "mine"}}, t.TempDir(), hclog.NewNullLogger()); err == nil || !strings.Contains(err.Error(), "sandbox-policy-mine") {
		t.Errorf("a plugin of another name is a binary: %v", err)
	}
}

type panics struct{ contract.Policy }

func (panics) Check(context.Context, contract.Request) (contract.Verdict, error) { panic("boom") }

// A built-in policy's panic fails its call as a plugin's crash does: the
// request is denied where the policy enforces, and sandboxd goes on.
func TestBuiltinPolicyPanicFailsItsCall(t *testing.T) {
	d := chain(Policy{Name: "b", Mode: contract.ModeEnforce, Checker: recovering{panics{}}}).Evaluate(context.Background(), contract.Request{})
	if d.Allowed || d.Denial == nil || d.Denial.Rule != RuleFailure || !strings.Contains(d.Denial.Message, "boom") {
		t.Errorf("decision: %+v", d)
	}
}
