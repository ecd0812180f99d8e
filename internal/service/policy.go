package service

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
	contract "github.com/sandboxd/sandboxd/plugins/policy"
	"github.com/sandboxd/sandboxd/policy"
)

// policyPlugin is a configured policy's plugin, for health reports.
type policyPlugin struct {
	plugin plugins.Policy
	info   contract.Info
}

// loadPolicies starts nothing: a policy plugin starts on its first call.
// Its Info gives the default mode; a plugin that cannot answer it is left
// to fail at request time, where its mode says what failing means.
func (s *Service) loadPolicies(ctx context.Context) error {
	var chain []policy.Policy
	for _, pc := range s.cfg.Policies {
		proc, err := plugins.NewProcess(s.cfg.PluginDir, plugins.KindPolicy, pc.Plugin, pc.Timeout, s.log)
		if err != nil {
			return fmt.Errorf("policy %q: %w", pc.Name, err)
		}
		pp := policyPlugin{plugin: plugins.Policy{Process: proc}}
		if pp.info, err = pp.plugin.Info(ctx); err != nil {
			s.log.Error("policy plugin did not describe itself; its requests will fail as its mode says", "policy", pc.Name, "error", err)
		}
		mode := pc.Mode
		if mode == "" {
			mode = pp.info.DefaultMode
		}
		if mode != contract.ModeWarn && mode != contract.ModeOff {
			mode = contract.ModeEnforce
		}
		s.policyPlugins = append(s.policyPlugins, pp)
		chain = append(chain, policy.Policy{Name: pc.Name, Mode: mode, Timeout: pc.Timeout, Options: pc.Options, Checker: pp.plugin})
		s.log.Info("policy loaded", "policy", pc.Name, "mode", mode)
	}
	s.policies = policy.New(chain)
	return nil
}

// judgement is what the policies are asked about one request.
type judgement struct {
	kind    string
	lang    *lang
	files   []language.File
	entry   string
	argv    []string
	cwd     string
	timeout api.Duration
	limits  *api.Limits
	session string
}

// judge runs the policy chain. A denial comes back as the policy_denied
// error, with every finding, and is recorded like an execution that never
// ran.
func (s *Service) judge(ctx context.Context, j judgement) (policy.Decision, *api.Error) {
	req := contract.Request{Kind: j.kind, Language: j.lang.cfg.Name, Entry: j.entry, Argv: j.argv, Cwd: j.cwd, Session: j.session,
		Ceilings: contractLimits(j.lang.cfg.Limits)}
	for _, f := range j.files {
		req.Files = append(req.Files, contract.File{Path: f.Path, Content: f.Content})
	}
	req.Limits.TimeoutMS = time.Duration(j.timeout).Milliseconds()
	if l := j.limits; l != nil {
		if l.Timeout != 0 {
			req.Limits.TimeoutMS = time.Duration(l.Timeout).Milliseconds()
		}
		req.Limits.Memory, req.Limits.CPUs, req.Limits.Pids = int64(l.Memory), l.CPUs, l.Pids
	}
	d := s.policies.Evaluate(ctx, req)
	if d.Allowed || j.kind == contract.KindValidate {
		return d, nil
	}
	f := d.Denial
	where := ""
	switch {
	case f.Line > 0:
		where = " at " + f.Location()
	case f.File != "":
		where = " in " + f.File
	}
	now := time.Now()
	s.count(j.lang.cfg.Name, j.kind, "denied", nil)
	s.recordExecution(api.Execution{ID: state.NewID(now), Kind: j.kind, Language: j.lang.cfg.Name, Session: j.session,
		StartedAt: now.UTC(), ExitCode: -1, Decision: api.DecisionDenied, Findings: d.Findings})
	return d, &api.Error{Code: api.CodePolicyDenied, Findings: d.Findings,
		Message: fmt.Sprintf("denied by policy %s: %s%s: %s", f.Policy, f.Rule, where, f.Message)}
}

// Validate runs the policies over a program or a command without running
// anything.
func (s *Service) Validate(ctx context.Context, req api.ValidateRequest) (*api.ValidateResult, *api.Error) {
	l, aerr := s.resolve(req.Language)
	if aerr != nil {
		return nil, aerr
	}
	j := judgement{kind: contract.KindValidate, lang: l, argv: req.Argv, timeout: req.Timeout, limits: req.Limits}
	if len(req.Argv) == 0 {
		prog, aerr := decodeProgram(api.RunRequest{Language: req.Language, Code: req.Code, Files: req.Files, Entry: req.Entry})
		if aerr != nil {
			return nil, apiErr(api.CodeInvalidRequest, "%s (or send argv to judge a command)", aerr.Message)
		}
		plan, aerr := s.plan(ctx, l, prog)
		if aerr != nil {
			return nil, aerr
		}
		j.files, j.entry = plan.Files, prog.plan.Entry
	}
	d, _ := s.judge(ctx, j)
	return &api.ValidateResult{Allowed: d.Allowed, Findings: d.Findings}, nil
}

func contractLimits(l config.Limits) contract.Limits {
	return contract.Limits{TimeoutMS: l.Timeout.Milliseconds(), Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids}
}
