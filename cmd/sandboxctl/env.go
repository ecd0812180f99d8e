package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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

// env is the environment the flags give, nil for none.
func (e *envFlags) env() (map[string]string, error) {
	if len(e.pairs) == 0 && len(e.files) == 0 {
		return nil, nil
	}
	env := map[string]string{}
	for _, name := range e.files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fail("--env-file: %v", err)
		}
		if !utf8.Valid(data) {
			return nil, fail("--env-file %s: not UTF-8 text", name)
		}
		lines := bufio.NewScanner(bytes.NewReader(data))
		lines.Buffer(nil, len(data)+1)
		for n := 1; lines.Scan(); n++ {
			line := strings.TrimLeftFunc(lines.Text(), unicode.IsSpace)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if err := setEnv(env, strings.TrimSuffix(line, "\r")); err != nil {
				return nil, fail("--env-file %s, line %d: %v", name, n, err)
			}
		}
	}
	for _, kv := range e.pairs {
		if err := setEnv(env, kv); err != nil {
			return nil, fail("--env %q: %v", kv, err)
		}
	}
	return env, nil
}

// setEnv sets KEY=VALUE in env, or KEY to its value in ours, if it has one.
func setEnv(env map[string]string, kv string) error {
	k, v, hasValue := strings.Cut(kv, "=")
	switch {
	case k == "":
		return errors.New("no name: use KEY=VALUE")
	case strings.ContainsFunc(k, unicode.IsSpace):
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
