package policy

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/plugins"
	contract "github.com/sandboxd/sandboxd/plugins/policy"
)

// Plugin is a policy block's plugin process, for health reports.
type Plugin struct {
	Process *plugins.Process
	Version string
}

// Load makes the chain of the policy blocks of sandboxd.hcl. It starts no
// plugin for good: a policy plugin is asked for its Info (which gives its
// default mode) and then starts again on its first call. A plugin that
// cannot answer Info is left to fail at request time, where its mode says
// what failing means.
func Load(ctx context.Context, blocks []config.Policy, pluginDir string, log hclog.Logger) (*Chain, error) {
	var chain []Policy
	var procs []Plugin
	for _, pc := range blocks {
		proc, err := plugins.NewProcess(pluginDir, plugins.KindPolicy, pc.Plugin, pc.Timeout, log)
		if err != nil {
			for _, p := range procs {
				p.Process.Close()
			}
			return nil, fmt.Errorf("policy %q: %w", pc.Name, err)
		}
		plugin := plugins.Policy{Process: proc}
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
		procs = append(procs, Plugin{Process: proc, Version: info.Version})
		chain = append(chain, Policy{Name: pc.Name, Mode: mode, Options: pc.Options, Checker: plugin, Kinds: info.Kinds})
		log.Info("policy loaded", "policy", pc.Name, "mode", mode)
	}
	c := New(chain)
	c.plugins = procs
	return c, nil
}

// Plugins are the chain's plugin processes, in file order.
func (c *Chain) Plugins() []Plugin { return c.plugins }

// Close stops the plugins.
func (c *Chain) Close() {
	for _, p := range c.plugins {
		p.Process.Close()
	}
}
