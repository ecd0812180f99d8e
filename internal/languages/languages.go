// Package languages is the catalogue of the configured languages: each
// one's block, its plugin and what the plugin says of it, the names it
// answers to, its network ceiling and the languages whose contexts its
// sessions run. It answers "which language is this name"; the containers
// a language runs in are internal/sandbox's.
package languages

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// pluginCallTimeout bounds every call to a language plugin.
const pluginCallTimeout = 5 * time.Second

// Language is one configured language.
type Language struct {
	Config    config.Language
	Plugin    plugins.Language
	Info      language.Info
	baseImage string      // the configured image (or the plugin's default)
	allow     egress.List // Config.Network.Allow, parsed
	contexts  []*Language // Config.Contexts, resolved
}

// Name is the language's configured name.
func (l *Language) Name() string { return l.Config.Name }

// Limits are the language's ceilings.
func (l *Language) Limits() runtime.Limits { return l.Config.Limits }

// BaseImage is the image its block names, or its plugin's default: the
// image its containers run, or the one they run with Config.Packages.
func (l *Language) BaseImage() string { return l.baseImage }

// Warm says whether l's programs are run by runtimes started ahead.
func (l *Language) Warm() bool { return len(l.Info.Warm) > 0 && l.Config.Warm }

// Registry is every configured language, in config order.
type Registry struct {
	cfg    *config.Config
	log    hclog.Logger
	langs  []*Language
	lookup map[string]*Language // name, alias or extension -> language
}

// Load starts the language plugins and learns what they say of their
// languages.
func Load(ctx context.Context, cfg *config.Config, log hclog.Logger) (*Registry, error) {
	r := &Registry{cfg: cfg, log: log, lookup: map[string]*Language{}}
	for _, lc := range cfg.Languages {
		l, err := r.load(ctx, lc)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.langs = append(r.langs, l)
	}
	for _, l := range r.langs {
		if err := r.resolveContexts(l); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// resolveContexts finds the languages whose contexts l's sessions run
// beside their own.
func (r *Registry) resolveContexts(l *Language) error {
	for _, name := range l.Config.Contexts {
		c, err := r.Resolve(name)
		switch {
		case err != nil:
			return fmt.Errorf("language %q: contexts: %w (in %s)", l.Name(), err, r.cfg.Path)
		case len(c.Info.ContextCommand) == 0:
			return fmt.Errorf("language %q: contexts: language %q has no contexts (its plugin declares no context command); take it out of the list in %s", l.Name(), name, r.cfg.Path)
		case c != l && !slices.Contains(l.contexts, c):
			l.contexts = append(l.contexts, c)
		}
	}
	return nil
}

// ContextLanguage is the language of a context in one of l's sessions
// that asks for name: l's own ("" or l's name), or one of those its block
// lists in contexts.
func (r *Registry) ContextLanguage(l *Language, name string) (*Language, error) {
	if name == "" {
		return l, nil
	}
	c, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	if c == l || c.Config.Plugin == l.Config.Plugin {
		return l, nil // its own kernel, by its plugin's names too
	}
	if !slices.Contains(l.contexts, c) {
		return nil, errdefs.Errorf(errdefs.Invalid, "a %s session runs contexts of %s: a context of %s needs it in the contexts of language %q in sandboxd.hcl, and its interpreter in the image",
			l.Name(), strings.Join(l.ContextLanguages(), ", "), c.Name(), l.Name())
	}
	return c, nil
}

// ContextLanguages are the names of the languages whose contexts l's
// sessions run: its own, then those its block lists.
func (l *Language) ContextLanguages() []string {
	names := []string{l.Name()}
	for _, c := range l.contexts {
		names = append(names, c.Name())
	}
	return names
}

func (r *Registry) load(ctx context.Context, lc config.Language) (*Language, error) {
	var env []string
	if g := lc.Generic; g != nil {
		spec, err := json.Marshal(language.Template{
			Meta: language.Info{
				Name: lc.Name, DisplayName: g.DisplayName, Version: "hcl", Extensions: g.Extensions,
				Aliases: g.Aliases, DefaultImage: lc.Image, VersionCommand: g.VersionCommand,
			},
			MainFile: g.MainFile, Sources: g.Sources, Compile: g.Compile, Run: g.Run, Env: g.Env,
		})
		if err != nil {
			return nil, err
		}
		env = append(env, "SANDBOXD_LANGUAGE="+string(spec))
	}
	proc, err := plugins.NewProcess(r.cfg.PluginDir, plugins.KindLanguage, lc.Plugin, pluginCallTimeout, r.log, env...)
	if err != nil {
		return nil, fmt.Errorf("language %q: %w", lc.Name, err)
	}
	l := &Language{Config: lc, Plugin: plugins.Language{Process: proc}}
	if l.allow, err = egress.Parse(lc.Network.Allow); err != nil { // config checked them
		proc.Close()
		return nil, fmt.Errorf("language %q: network: %w", lc.Name, err)
	}
	if l.Info, err = l.Plugin.Info(ctx); err != nil {
		proc.Close()
		return nil, fmt.Errorf("language %q: %w", lc.Name, err)
	}
	l.baseImage = lc.Image
	if l.baseImage == "" {
		l.baseImage = l.Info.DefaultImage
	}
	if l.baseImage == "" {
		proc.Close()
		return nil, fmt.Errorf("language %q: no image: set image in its block of %s", lc.Name, r.cfg.Path)
	}
	keys := append([]string{lc.Name, l.Info.Name}, l.Info.Aliases...)
	keys = append(keys, l.Info.Extensions...)
	for _, k := range keys {
		k = strings.ToLower(strings.TrimPrefix(k, "."))
		if other, ok := r.lookup[k]; ok && other.Config.Name != lc.Name {
			say := r.log.Warn
			if other.Config.Plugin == lc.Plugin && k != strings.ToLower(lc.Name) {
				say = r.log.Debug // a second version of a plugin's language: its names stay the first block's, as meant
			}
			say("language name claimed twice; the first block keeps it", "name", k, "kept", other.Config.Name, "ignored", lc.Name)
			continue
		}
		r.lookup[k] = l
	}
	if lc.Limits.Disk >= lc.Limits.Memory {
		r.log.Warn("disk is not below memory: workspace files are in RAM and count toward memory, so a full workspace is killed for memory before it sees ENOSPC",
			"language", lc.Name, "memory", units.ByteSize(lc.Limits.Memory).String(), "disk", units.ByteSize(lc.Limits.Disk).String())
	}
	return l, nil
}

// Resolve finds a language by name, alias or extension.
func (r *Registry) Resolve(name string) (*Language, error) {
	if name == "" {
		return nil, errdefs.Errorf(errdefs.Invalid, "language is required; one of: %s", r.names())
	}
	l, ok := r.lookup[strings.ToLower(strings.TrimPrefix(name, "."))]
	if !ok {
		return nil, errdefs.Errorf(errdefs.UnknownLanguage, "no language %q; available: %s", name, r.names())
	}
	return l, nil
}

// Lookup is Resolve without the error: the language a stored record names.
func (r *Registry) Lookup(name string) (*Language, bool) {
	l, ok := r.lookup[name]
	return l, ok
}

func (r *Registry) names() string {
	names := make([]string, len(r.langs))
	for i, l := range r.langs {
		names[i] = l.Config.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// All is every language, in config order.
func (r *Registry) All() []*Language { return r.langs }

// Close stops the plugins.
func (r *Registry) Close() {
	for _, l := range r.langs {
		l.Plugin.Close()
	}
}
