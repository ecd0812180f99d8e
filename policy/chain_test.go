package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/plugins"
	contract "github.com/sandboxd/sandboxd/plugins/policy"
)

// fake answers with a verdict or an error; a plugin that hangs is the
// plugin host's error once its deadline passed.
type fake struct {
	v   contract.Verdict
	err error
}

func (f fake) Check(context.Context, contract.Request) (contract.Verdict, error) { return f.v, f.err }

var (
	denies = fake{v: contract.Verdict{Deny: true, Findings: []contract.Finding{{Rule: "r.deny", Severity: "error", Message: "no", File: "a.py", Line: 3, Column: 2}}}}
	warns  = fake{v: contract.Verdict{Findings: []contract.Finding{{Rule: "r.warn", Severity: "warning", Message: "hm"}}}}
)

func chain(ps ...Policy) *Chain {
	for i := range ps {
		if ps[i].Name == "" {
			ps[i].Name = "p" + string(rune('a'+i))
		}
	}
	return New(ps)
}

func TestModes(t *testing.T) {
	ctx := context.Background()
	d := chain(Policy{Mode: "warn", Checker: warns}, Policy{Mode: "enforce", Checker: denies}, Policy{Mode: "enforce", Checker: warns}).Evaluate(ctx, contract.Request{})
	if d.Allowed || len(d.Findings) != 3 || d.Denial == nil || d.Denial.Rule != "r.deny" || d.Denial.Policy != "pb" || d.Findings[0].Policy != "pa" {
		t.Errorf("enforce: %+v", d)
	}
	d = chain(Policy{Mode: "warn", Checker: denies}).Evaluate(ctx, contract.Request{})
	if !d.Allowed || len(d.Findings) != 1 {
		t.Errorf("warn: a deny only reports: %+v", d)
	}
	d = chain(Policy{Mode: "off", Checker: denies}).Evaluate(ctx, contract.Request{})
	if !d.Allowed || len(d.Findings) != 0 {
		t.Errorf("off: %+v", d)
	}
}

// A policy that judges some kinds of request is asked about those alone.
func TestPoliciesAreAskedAboutTheirKinds(t *testing.T) {
	ctx := context.Background()
	c := chain(Policy{Mode: "enforce", Checker: denies, Kinds: []string{contract.KindExec}}, Policy{Mode: "warn", Checker: warns})
	if d := c.Evaluate(ctx, contract.Request{Kind: contract.KindRun}); !d.Allowed || len(d.Findings) != 1 {
		t.Errorf("a run: %+v", d)
	}
	if d := c.Evaluate(ctx, contract.Request{Kind: contract.KindExec}); d.Allowed || len(d.Findings) != 2 {
		t.Errorf("an exec: %+v", d)
	}
}

// A plugin that fails (crashes: an error; hangs; answers garbage) denies
// in enforce mode, naming it, and warns in warn mode.
func TestFailuresCloseWhenEnforcingAndOpenWhenWarning(t *testing.T) {
	for name, f := range map[string]fake{
		"crash":   {err: errors.New("plugin exited")},
		"hang":    {err: fmt.Errorf("%w: policy \"bad\" did not answer within 2s", plugins.ErrUnavailable)},
		"garbage": {v: contract.Verdict{Findings: []contract.Finding{{Rule: "x", Severity: "doom"}}}},
		"no rule": {v: contract.Verdict{Findings: []contract.Finding{{Severity: "info"}}}},
		"flood":   {v: contract.Verdict{Findings: make([]contract.Finding, maxFindings+1)}},
	} {
		c := chain(Policy{Name: "bad", Mode: "enforce", Checker: f})
		d := c.Evaluate(context.Background(), contract.Request{})
		if d.Allowed || d.Denial == nil || d.Denial.Rule != RuleFailure || d.Denial.Severity != "critical" || !strings.Contains(d.Denial.Message, "policy plugin bad failed") {
			t.Errorf("%s, enforce: %+v", name, d)
		}
		d = chain(Policy{Name: "bad", Mode: "warn", Checker: f}).Evaluate(context.Background(), contract.Request{})
		if !d.Allowed || len(d.Findings) != 1 || d.Findings[0].Severity != "warning" || d.Findings[0].Rule != RuleFailure {
			t.Errorf("%s, warn: %+v", name, d)
		}
		if st := c.Stats()["bad/"+RuleFailure]; st.Findings != 1 || st.Denials != 1 {
			t.Errorf("%s: stats %+v", name, c.Stats())
		}
	}
}

func TestStatsCountFindingsAndDenials(t *testing.T) {
	c := chain(Policy{Name: "w", Mode: "warn", Checker: warns}, Policy{Name: "e", Mode: "enforce", Checker: denies})
	for range 3 {
		c.Evaluate(context.Background(), contract.Request{})
	}
	st := c.Stats()
	if st["w/r.warn"].Findings != 3 || st["w/r.warn"].Denials != 0 || st["e/r.deny"].Findings != 3 || st["e/r.deny"].Denials != 3 {
		t.Errorf("stats %+v", st)
	}
}

// An asking policy's deny is a question, unless an enforcing one denies:
// then no one is asked. A failed asking plugin leaves it to a person too.
func TestAskingPoliciesQuestion(t *testing.T) {
	ctx := context.Background()
	d := chain(Policy{Mode: "ask", Checker: warns}, Policy{Mode: "ask", Checker: denies}).Evaluate(ctx, contract.Request{})
	if !d.Allowed || d.Question == nil || d.Question.Rule != "r.deny" || d.Question.Policy != "pb" || d.Denial != nil {
		t.Errorf("ask: %+v", d)
	}
	d = chain(Policy{Mode: "ask", Checker: denies}, Policy{Mode: "enforce", Checker: denies}).Evaluate(ctx, contract.Request{})
	if d.Allowed || d.Question != nil || d.Denial == nil || d.Denial.Policy != "pb" {
		t.Errorf("ask then enforce: %+v", d)
	}
	d = chain(Policy{Mode: "ask", Checker: fake{err: errors.New("crashed")}}).Evaluate(ctx, contract.Request{})
	if !d.Allowed || d.Question == nil || !strings.Contains(d.Question.Message, "a person decides") {
		t.Errorf("failed asking plugin: %+v", d)
	}
}
