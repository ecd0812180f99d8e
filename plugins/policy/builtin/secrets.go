package builtin

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/sandboxd/sandboxd/plugins/policy"
)

type secret struct {
	rule, severity, what string
	re                   *regexp.Regexp // group 1 is the secret
}

var secretRules = []secret{
	{"secrets.aws_access_key", policy.SeverityError, "an AWS access key id", regexp.MustCompile(`\b((?:AKIA|ASIA)[0-9A-Z]{16})\b`)},
	{"secrets.aws_secret_key", policy.SeverityError, "an AWS secret access key", regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b`)},
	{"secrets.github_token", policy.SeverityError, "a GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
	{"secrets.slack_token", policy.SeverityError, "a Slack token", regexp.MustCompile(`\b(xox[abposr]-[A-Za-z0-9-]{10,})`)},
	{"secrets.private_key", policy.SeverityError, "a private key", regexp.MustCompile(`-----BEGIN (?:[A-Z]+ )?PRIVATE KEY(?: BLOCK)?-----\s*([A-Za-z0-9+/=\s]{16,})`)},
	{"secrets.password", policy.SeverityWarning, "a password or key assigned in code", regexp.MustCompile(`(?i)\b(?:password|passwd|pwd|secret|api_?key|access_?token|auth_?token|client_?secret)\b["']?\s*[:=]+\s*["']([^"'\s]{6,})["']`)},
}

// placeholder tells values that are not secrets: templates, references.
var placeholder = regexp.MustCompile(`^(?:\$|\{|<|%|\*+$|x+$|changeme$|password$|secret$)`)

// secrets is the secrets policy (warn by default): credentials written
// into code (AWS keys, GitHub and Slack tokens, private-key blocks,
// passwords assigned literally). It looks everywhere, strings and
// comments included, since that is where secrets are, and masks every
// secret in the messages and snippets it returns, so neither the answer
// nor sandboxd's records ever hold one.
type secrets struct{}

func (secrets) Info(context.Context) (policy.Info, error) {
	rules := make([]string, len(secretRules))
	for i, r := range secretRules {
		rules[i] = r.rule
	}
	return policy.Info{Name: "secrets", Version: "1.0.0", DefaultMode: policy.ModeWarn, Rules: rules,
		Description: "hardcoded credentials, masked in every message"}, nil
}

func (secrets) Check(_ context.Context, req policy.Request) (policy.Verdict, error) {
	var out []policy.Finding
	for _, f := range req.Files {
		out = append(out, scan(policy.NewSource(f.Path, "", f.Content))...)
	}
	if len(req.Argv) > 0 {
		out = append(out, scan(policy.NewSource("argv", "", []byte(strings.Join(req.Argv, " "))))...)
	}
	return policy.DenyAtError(out), nil
}

// scan finds secrets and masks all of them in every snippet.
func scan(s *policy.Source) []policy.Finding {
	type hit struct {
		r          secret
		start, end int
	}
	var hits []hit
	for _, r := range secretRules {
		for _, m := range s.Find(r.re, false) {
			if v := s.Text[m[2]:m[3]]; r.rule == "secrets.password" && placeholder.MatchString(strings.ToLower(v)) {
				continue
			}
			hits = append(hits, hit{r, m[2], m[3]})
		}
	}
	masked := []byte(s.Text)
	for _, h := range hits {
		for i := h.start + min(4, (h.end-h.start)/4); i < h.end; i++ {
			if masked[i] != '\n' {
				masked[i] = '*'
			}
		}
	}
	view := policy.NewSource(s.Path, "", masked)
	out := make([]policy.Finding, 0, len(hits))
	for _, h := range hits {
		f := view.At(h.start, h.r.rule, h.r.severity, fmt.Sprintf("%s (%s, %d characters): keep it out of code, e.g. in the environment",
			h.r.what, view.Text[h.start:min(h.end, h.start+8)], h.end-h.start))
		out = append(out, f)
	}
	return out
}
