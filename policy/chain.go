// Package policy is the daemon's policy chain: the policies of
// sandboxd.hcl in file order, each with its mode (enforce, warn, off), the
// combined decision of a request, and counters per rule. It owns what a
// plugin's failure means: an enforcing policy that crashes, hangs or
// answers garbage denies (fails closed, naming the plugin); a warning one
// lets the request through with a warning finding (fails open); an asking
// one leaves it to a person. The plugins themselves (plugins/policy) only
// judge.
package policy

import (
	"context"
	"fmt"
	"slices"
	"sync"

	contract "github.com/sandboxd/sandboxd/plugins/policy"
)

// Checker is a policy plugin as the chain calls it.
type Checker interface {
	Check(ctx context.Context, req contract.Request) (contract.Verdict, error)
}

// Policy is one policy block. Its deadline is its Checker's: the plugin
// host gives every call the block's timeout, and kills a plugin that
// misses it.
type Policy struct {
	Name    string
	Mode    string // contract.ModeEnforce, ModeAsk, ModeWarn or ModeOff
	Options map[string]string
	Checker Checker
	// Kinds are the kinds of request the plugin judges (its Info's); it
	// is not asked about others. None: every kind.
	Kinds []string
}

// judges says whether p is asked about a request of kind.
func (p Policy) judges(kind string) bool {
	return p.Mode != contract.ModeOff && (len(p.Kinds) == 0 || slices.Contains(p.Kinds, kind))
}

// Limits on what a plugin may answer; more is garbage.
const (
	maxFindings = 200
	maxText     = 2000
)

// RuleFailure is the rule of the finding a failed plugin leaves.
const RuleFailure = "policy.plugin_failed"

// Finding is a plugin's finding and the policy block that reported it.
type Finding struct {
	Policy string
	contract.Finding
}

// RuleStats counts one rule's findings, and the requests it denied.
type RuleStats struct {
	Findings uint64
	Denials  uint64
}

// Decision is the chain's combined answer.
type Decision struct {
	Allowed  bool
	Findings []Finding
	// Denial is the first finding of the first enforcing policy that
	// denied: what the error message quotes.
	Denial *Finding
	// Question, on a request no enforcing policy denied, is the first
	// finding of the first asking policy that would have: the request
	// needs a person's approval.
	Question *Finding
}

// Chain evaluates policies in order. Safe for concurrent use.
type Chain struct {
	policies []Policy
	plugins  []Plugin // the plugins of the blocks, for health reports
	mu       sync.Mutex
	rules    map[string]*RuleStats
}

// New returns a chain of policies in the order given.
func New(policies []Policy) *Chain {
	return &Chain{policies: policies, rules: map[string]*RuleStats{}}
}

// Evaluate runs every policy that is not off and combines their verdicts
// in file order: denied when an enforcing policy denies (or fails), else a
// question when an asking one does. Every
// finding of every policy comes back. The plugins are independent, so
// they are asked at once: a request waits for the slowest, not the sum.
func (c *Chain) Evaluate(ctx context.Context, req contract.Request) Decision {
	verdicts := make([]contract.Verdict, len(c.policies))
	var wg sync.WaitGroup
	for i, p := range c.policies {
		if !p.judges(req.Kind) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req
			r.Options = p.Options
			verdicts[i] = c.verdict(ctx, p, r)
		}()
	}
	wg.Wait()
	d := Decision{Allowed: true, Findings: []Finding{}}
	for i, p := range c.policies {
		if !p.judges(req.Kind) {
			continue
		}
		v := verdicts[i]
		first := len(d.Findings)
		for _, f := range v.Findings {
			d.Findings = append(d.Findings, Finding{Policy: p.Name, Finding: f})
		}
		denies := v.Deny && p.Mode == contract.ModeEnforce
		headline := func() *Finding {
			f := Finding{Policy: p.Name, Finding: contract.Finding{Rule: p.Name, Severity: contract.SeverityError, Message: "denied without a finding"}}
			if first < len(d.Findings) {
				f = d.Findings[first]
			}
			return &f
		}
		switch {
		case denies && d.Allowed:
			d.Allowed, d.Denial = false, headline()
		case v.Deny && p.Mode == contract.ModeAsk && d.Question == nil:
			d.Question = headline()
		}
		c.count(d.Findings[first:], denies)
	}
	if !d.Allowed {
		d.Question = nil // a denial needs no one's approval
	}
	return d
}

// verdict is a policy's answer, or for a plugin that failed, the verdict
// its mode gives: denied (fail closed) when it enforces, a warning (fail
// open) when it warns.
func (c *Chain) verdict(ctx context.Context, p Policy, req contract.Request) contract.Verdict {
	v, err := c.check(ctx, p, req)
	if err == nil {
		return v
	}
	sev := contract.SeverityWarning
	msg := fmt.Sprintf("policy plugin %s failed: %v; allowed because the policy only warns", p.Name, err)
	switch p.Mode {
	case contract.ModeEnforce:
		sev, msg = contract.SeverityCritical, fmt.Sprintf("policy plugin %s failed: %v; denied because the policy enforces (it fails closed)", p.Name, err)
	case contract.ModeAsk:
		sev, msg = contract.SeverityCritical, fmt.Sprintf("policy plugin %s failed: %v; a person decides because the policy asks", p.Name, err)
	}
	return contract.Verdict{Deny: true, Findings: []contract.Finding{{Rule: RuleFailure, Severity: sev, Message: msg}}}
}

// check calls one plugin and checks its answer.
func (c *Chain) check(ctx context.Context, p Policy, req contract.Request) (contract.Verdict, error) {
	v, err := p.Checker.Check(ctx, req)
	if err != nil {
		return v, err
	}
	return v, garbage(v)
}

// garbage tells what is wrong with an answer no plugin should give.
func garbage(v contract.Verdict) error {
	if len(v.Findings) > maxFindings {
		return fmt.Errorf("answered %d findings (at most %d)", len(v.Findings), maxFindings)
	}
	for _, f := range v.Findings {
		switch {
		case f.Rule == "" || len(f.Rule) > 100:
			return fmt.Errorf("answered a finding without a rule name")
		case contract.SeverityRank(f.Severity) < 0:
			return fmt.Errorf("answered severity %.40q (info, warning, error or critical)", f.Severity)
		case f.Line < 0 || f.Column < 0:
			return fmt.Errorf("answered a negative position")
		case len(f.Message) > maxText || len(f.Snippet) > maxText || len(f.File) > maxText:
			return fmt.Errorf("answered a finding over %d bytes", maxText)
		}
	}
	return nil
}

func (c *Chain) count(findings []Finding, denied bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range findings {
		key := f.Policy + "/" + f.Rule
		st := c.rules[key]
		if st == nil {
			st = &RuleStats{}
			c.rules[key] = st
		}
		st.Findings++
		if denied && contract.SeverityRank(f.Severity) >= contract.SeverityRank(contract.SeverityError) {
			st.Denials++
		}
	}
}

// Stats counts findings and denials per policy/rule since start.
func (c *Chain) Stats() map[string]RuleStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]RuleStats, len(c.rules))
	for k, v := range c.rules {
		out[k] = *v
	}
	return out
}
