package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxd/sandboxd/internal/egress"
)

// Secret is a secret block: a credential sandboxd holds for sandboxes
// that ask for it by name. It never enters a sandbox: the egress proxy
// writes it into the headers of requests to Hosts (see internal/egress).
type Secret struct {
	Name  string
	Value string // from sandboxd's environment or a file, never a request
	Hosts egress.List
}

type secretSchema struct {
	Name      string   `hcl:"name,label"`
	ValueEnv  *string  `hcl:"value_env,optional"`
	ValueFile *string  `hcl:"value_file,optional"`
	Hosts     []string `hcl:"hosts,optional"`
	Body      hcl.Body `hcl:",body"`
}

// secretName is what a secret may be called: it becomes part of an
// environment variable's name (SANDBOXD_SECRET_<name>).
var secretName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// secrets reads the secret blocks.
func (v *validator) secrets(blocks []secretSchema, abs func(string) string, caFile string) map[string]Secret {
	out := map[string]Secret{}
	defined := map[string]bool{}
	for _, b := range blocks {
		if v.defined(defined, "secret", b.Name, b.Body) {
			continue
		}
		s := Secret{Name: b.Name}
		if !secretName.MatchString(b.Name) {
			v.fail(b.Body, "name", fmt.Sprintf("%q is not a secret's name", b.Name), "a letter, then letters, digits and _ (it names the variable SANDBOXD_SECRET_<name>)")
		}
		switch {
		case (b.ValueEnv == nil) == (b.ValueFile == nil):
			v.fail(b.Body, "value_env", "or value_file must be given, and only one", `value_env = "GITHUB_TOKEN" (a variable of sandboxd's environment) or value_file = "/etc/sandboxd/github.token"`)
		case b.ValueEnv != nil:
			s.Value = os.Getenv(*b.ValueEnv)
			if s.Value == "" {
				v.fail(b.Body, "value_env", fmt.Sprintf("names %s, which is not set in sandboxd's environment", *b.ValueEnv), "set it where sandboxd starts (a systemd EnvironmentFile, say)")
			}
		default:
			data, err := os.ReadFile(abs(*b.ValueFile))
			s.Value = strings.TrimRight(string(data), "\r\n")
			if err != nil || s.Value == "" {
				v.fail(b.Body, "value_file", fmt.Sprintf("cannot be read, or is empty (%v)", err), "a file only sandboxd's user can read, holding the value")
			}
		}
		hosts, err := egress.Parse(b.Hosts)
		if err != nil || len(hosts) == 0 {
			v.fail(b.Body, "hosts", fmt.Sprintf("%v", orEmpty(err)), "the hosts it is written for, as network.allow entries: [\"api.github.com\"]")
		}
		s.Hosts = hosts
		if caFile == "" {
			v.fail(b.Body, "hosts", "need the sandboxes to trust sandboxd's certificates for them, and network.ca_file is \"\"", "leave network.ca_file at the host's bundle, or name one")
		}
		out[b.Name] = s
	}
	return out
}

func orEmpty(err error) string {
	if err == nil {
		return "is empty"
	}
	return err.Error()
}
