package config

import (
	"fmt"
	"net/textproto"
	"os"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/redact"
)

// Secret is a secret block: a credential sandboxd holds for sandboxes
// that ask for it by name. It never enters a sandbox: the egress proxy
// writes it into requests to Hosts, in the Header (Authorization unless
// the block names another) or the Query parameter the block names, and
// nowhere else (see internal/egress).
type Secret struct {
	Name   string
	Value  string // from sandboxd's environment or a file, never a request
	Hosts  egress.List
	Header string // canonical; "" when Query is set
	Query  string
}

type secretSchema struct {
	Name      string   `hcl:"name,label"`
	ValueEnv  *string  `hcl:"value_env,optional"`
	ValueFile *string  `hcl:"value_file,optional"`
	Hosts     []string `hcl:"hosts,optional"`
	Header    *string  `hcl:"header,optional"`
	Query     *string  `hcl:"query,optional"`
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
		switch {
		case s.Value == "":
		case strings.IndexFunc(s.Value, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0:
			v.fail(b.Body, "value", "holds a space, a control character or a byte beyond ASCII, which no header or query can carry as it is", "the credential as the service issued it, on one line")
		case len(s.Value) < redact.MinRun || strings.Trim(s.Value, "0123456789") == "":
			// sandboxd takes every run of a value out of what it writes:
			// a short or numeric one would be found in ordinary text.
			v.fail(b.Body, "value", fmt.Sprintf("is shorter than %d characters, or only digits: too easy to guess, and too common in ordinary text to keep out of records", redact.MinRun), "a credential as services issue them (a token, a key)")
		}
		s.Header, s.Query = v.secretPlace(b)
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

// headerName is what a header's name may be (RFC 9110's token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// hopByHop are headers a proxy does not pass on, and Host, which names
// the host: a secret cannot go in them.
var hopByHop = map[string]bool{"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Host": true, "Proxy-Authorization": true, "Content-Length": true}

// secretPlace reads where a secret block's value goes: the header it
// names (Authorization by default), or the query parameter.
func (v *validator) secretPlace(b secretSchema) (header, query string) {
	const hint = `header = "X-Api-Key" (Authorization when left out), or query = "api_key" for a service that takes its key in the URL; not both`
	switch {
	case b.Header != nil && b.Query != nil:
		v.fail(b.Body, "header", "is set, and query too: a secret goes in one place", hint)
	case b.Query != nil:
		if *b.Query == "" || strings.ContainsAny(*b.Query, "&=#?% ") {
			v.fail(b.Body, "query", fmt.Sprintf("%q is not a query parameter's name", *b.Query), hint)
		}
		return "", *b.Query
	case b.Header != nil:
		h := textproto.CanonicalMIMEHeaderKey(*b.Header)
		if !headerName.MatchString(h) || hopByHop[h] {
			v.fail(b.Body, "header", fmt.Sprintf("%q cannot carry a secret", *b.Header), hint)
		}
		return h, ""
	}
	return egress.DefaultHeader, ""
}

func orEmpty(err error) string {
	if err == nil {
		return "is empty"
	}
	return err.Error()
}
