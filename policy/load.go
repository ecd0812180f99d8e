package policy

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/plugins"
	contract "github.com/sandboxd/sandboxd/plugins/policy"
	"github.com/sandboxd/sandboxd/plugins/policy/builtin"
)

// Plugin is a policy block's plugin, for health reports: its process, or
// none for a built-in policy (plugins/policy/builtin), which runs inside
// sandboxd.
type Plugin struct {
	Name    string
	Process *plugins.Process // nil: built in
	Version string
}

// Health is the plugin's state; a built-in one is always running.
func (p Plugin) Health() plugins.Health {
	if p.Process == nil {
		return plugins.Health{Kind: plugins.KindPolicy, Name: p.Name, Path: "built-in", Running: true}
	}
	return p.Process.Health()
}

// Load makes the chain of the policy blocks of sandboxd.hcl. A block whose
// plugin is a built-in policy's name runs it inside sandboxd; any other
// names a plugin binary. Load starts no plugin for good: a policy plugin
// is asked for its Info (which gives its default mode) and then starts
// again on its first call. A plugin that cannot answer Info is left to
// fail at request time, where its mode says what failing means.
func Load(ctx context.Context, blocks []config.Policy, pluginDir string, log hclog.Logger) (*Chain, error) {
	var chain []Policy
	var procs []Plugin
	for _, pc := range blocks {
		plugin, proc, err := open(pc, pluginDir, log)
		if err != nil {
			New(nil).withPlugins(procs).Close()
			return nil, fmt.Errorf("policy %q: %w", pc.Name, err)
		}
		info, err := plugin.Info(ctx)
		if err != nil {
			log.Error("policy plugin did not describe itself; its requests will fail as its mode says", "policy", pc.Name, "error", err)
		}
		mode := pc.Mode
		if mode == "" {
			mode = info.DefaultMode
		}
		if mode != contract.ModeWarn && mode != contract.ModeOff && mode != contract.ModeAsk {
			mode = contract.ModeEnforce
		}
		procs = append(procs, Plugin{Name: pc.Plugin, Process: proc, Version: info.Version})
		chain = append(chain, Policy{Name: pc.Name, Mode: mode, Options: pc.Options, Checker: plugin, Kinds: info.Kinds})
		log.Info("policy loaded", "policy", pc.Name, "mode", mode)
	}
	return New(chain).withPlugins(procs), nil
}

func (c *Chain) withPlugins(procs []Plugin) *Chain {
	c.plugins = procs
	return c
}

// open is the policy a block's plugin names: a built-in one, or the
// plugin binary's process (not started yet).
func open(pc config.Policy, pluginDir string, log hclog.Logger) (contract.Policy, *plugins.Process, error) {
	if impl, ok := builtin.Lookup(pc.Plugin); ok {
		return recovering{impl}, nil, nil
	}
	proc, err := plugins.NewProcess(pluginDir, plugins.KindPolicy, pc.Plugin, pc.Timeout, log)
	if err != nil {
		return nil, nil, err
	}
	return plugins.Policy{Process: proc}, proc, nil
}

// recovering is a built-in policy whose panic fails the call, as a
// plugin's crash would, instead of sandboxd.
type recovering struct{ contract.Policy }

// Check implements contract.Policy.
func (r recovering) Check(ctx context.Context, req contract.Request) (v contract.Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("built-in policy failed: %v", p)
		}
	}()
	return r.Policy.Check(ctx, req)
}

// Plugins are the chain's plugin processes, in file order.
func (c *Chain) Plugins() []Plugin { return c.plugins }

// Close stops the plugin processes.
func (c *Chain) Close() {
	for _, p := range c.plugins {
		if p.Process != nil {
			p.Process.Close()
		}
	}
}
