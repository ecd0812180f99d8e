package sandbox

import (
	"sort"
	"strings"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/languages"
)

// SecretEnvPrefix names the variable that holds a secret's placeholder in
// a sandbox: SANDBOXD_SECRET_<name>.
const SecretEnvPrefix = "SANDBOXD_SECRET_"

// Secrets are the secret blocks a request names, each with a fresh
// placeholder. They go out through the egress proxy, so a language
// without egress has none to give.
func (p *Provider) Secrets(lang *languages.Language, names []string) ([]egress.Secret, error) {
	l := p.of[lang]
	if len(names) == 0 {
		return nil, nil
	}
	if len(l.Egress()) == 0 {
		return nil, errdefs.Errorf(errdefs.Invalid, "secrets: language %s has no egress, so no secret could be used; an operator allows hosts in its network block", l.Name())
	}
	var out []egress.Secret
	for _, name := range names {
		s, ok := p.cfg.Secrets[name]
		if !ok {
			return nil, errdefs.Errorf(errdefs.Invalid, "secrets: no secret %q; sandboxd.hcl defines %s", name, definedSecrets(p.cfg.Secrets))
		}
		out = append(out, egress.Secret{Name: name, Value: s.Value, Hosts: s.Hosts, Header: s.Header, Query: s.Query, Placeholder: egress.Placeholder(name)})
	}
	return out, nil
}

// StoredSecrets are a stored session's secrets again: each name still
// defined, with the placeholder its environment holds.
func (p *Provider) StoredSecrets(names []string, env map[string]string) []egress.Secret {
	var out []egress.Secret
	for _, name := range names {
		if s, ok := p.cfg.Secrets[name]; ok && env[SecretEnvPrefix+name] != "" {
			out = append(out, egress.Secret{Name: name, Value: s.Value, Hosts: s.Hosts, Header: s.Header, Query: s.Query, Placeholder: env[SecretEnvPrefix+name]})
		}
	}
	return out
}

// SecretEnv is the variables that hold secrets' placeholders.
func SecretEnv(secrets []egress.Secret) map[string]string {
	env := map[string]string{}
	for _, s := range secrets {
		env[SecretEnvPrefix+s.Name] = s.Placeholder
	}
	return env
}

func definedSecrets(secrets map[string]config.Secret) string {
	if len(secrets) == 0 {
		return "none (a secret block names one)"
	}
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
