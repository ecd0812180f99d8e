package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// envFlags are a program's environment as docker run takes it: -e
// KEY=VALUE, and --env-file FILE of such lines. A KEY alone takes its value
// from sandboxctl's own environment, and is left out where that has none;
// -e wins over a file, a later file over an earlier one.
type envFlags struct{ pairs, files []string }

func (e *envFlags) add(f *pflag.FlagSet, usage string) {
	f.StringArrayVarP(&e.pairs, "env", "e", nil, usage+" (repeatable); KEY alone takes its value from your environment")
	f.StringArrayVar(&e.files, "env-file", nil, "a file of KEY=VALUE lines, as docker run reads one: # starts a comment line (repeatable)")
}

// set says whether any flag was given.
func (e *envFlags) set() bool { return len(e.pairs)+len(e.files) > 0 }

// env is the environment the flags give, nil for none.
func (e *envFlags) env() (map[string]string, error) {
	if !e.set() {
		return nil, nil
	}
	env := map[string]string{}
	for _, name := range e.files {
		if err := readEnvFile(env, name); err != nil {
			return nil, err
		}
	}
	for _, kv := range e.pairs {
		if err := setEnv(env, kv, ""); err != nil {
			return nil, fail("--env %q: %v", kv, err)
		}
	}
	return env, nil
}

// maxEnvFile bounds an env file, as the daemon bounds a request's
// environment.
const maxEnvFile = 1 << 20

// readEnvFile sets in env the variables of the file name: a KEY=VALUE or
// KEY line each; blank lines and lines that begin with # are skipped, and
// white space before a line and a byte order mark before the first.
func readEnvFile(env map[string]string, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fail("--env-file: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
	if err != nil {
		return fail("--env-file %s: %v", name, err)
	}
	if len(data) > maxEnvFile {
		return fail("--env-file %s: over %d bytes (1 MiB), the most a program's environment may hold", name, maxEnvFile)
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	for n, line := range strings.Split(string(data), "\n") {
		if !utf8.ValidString(line) {
			return fail("--env-file %s, line %d: not UTF-8 text", name, n+1)
		}
		line = strings.TrimSuffix(strings.TrimLeftFunc(line, unicode.IsSpace), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := setEnv(env, line, " \t"); err != nil {
			return fail("--env-file %s, line %d: %v", name, n+1, err)
		}
	}
	return nil
}

// setEnv sets KEY=VALUE in env, or KEY to its value in ours, if it has
// one (a KEY ours lacks keeps the image's value, where docker would unset
// it: a request can only set variables). A name may hold none of badInName.
func setEnv(env map[string]string, kv, badInName string) error {
	k, v, hasValue := strings.Cut(kv, "=")
	switch {
	case k == "":
		return errors.New("no name: use KEY=VALUE")
	case strings.ContainsAny(k, badInName):
		return fmt.Errorf("the name %q has white space: use KEY=VALUE", k)
	case !hasValue:
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
		return nil
	}
	env[k] = v
	return nil
}
