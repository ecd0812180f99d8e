// Package request holds the bounds of what a client asks for, in
// sandboxd's own types, checked once: the limits a run or a session gets
// under the operator's ceilings (and which timeout wins), environment
// maps, and paths inside the workspace. internal/wire decodes the API's
// requests into these; it runs nothing and keeps no state.
package request

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/plugins/program"
)

// Bounds of a request's environment and paths, beyond the operator's
// limits. Env values are bounded as the kernel bounds one argument string
// (MAX_ARG_STRLEN), and the env in all as execve's room for it.
const (
	maxEnv      = 1000
	maxPathLen  = 4096
	maxEnvValue = 128 << 10
	maxEnvBytes = 1 << 20
)

// CheckEnv checks an environment map's names and values.
func CheckEnv(env map[string]string) error {
	if len(env) > maxEnv {
		return errdefs.Errorf(errdefs.Invalid, "%d env entries: at most %d", len(env), maxEnv)
	}
	size := 0
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return errdefs.Errorf(errdefs.Invalid, "env %q: names are non-empty without '=' or NUL, values without NUL", k)
		}
		if len(k)+1+len(v) > maxEnvValue {
			return errdefs.Errorf(errdefs.TooLarge, "env %q is %d bytes: at most %d per entry; pass data in a file or on stdin", k, len(k)+1+len(v), maxEnvValue)
		}
		size += len(k) + 1 + len(v)
	}
	if size > maxEnvBytes {
		return errdefs.Errorf(errdefs.TooLarge, "env totals %d bytes: at most %d", size, maxEnvBytes)
	}
	return nil
}

// CleanPath accepts a relative path that stays inside the workspace.
func CleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty")
	case len(p) > maxPathLen:
		return "", fmt.Errorf("longer than %d bytes", maxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New("contains a NUL byte")
	case path.IsAbs(p):
		return "", fmt.Errorf("%q is absolute: paths are relative to /workspace", p)
	}
	clean := path.Clean(p)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q leaves the workspace", p)
	}
	return clean, nil
}

// Program is a request's program, decoded and checked. Code, when set,
// goes where the language plugin's plan says; Files go where they say.
type Program struct {
	Code  string
	Files []program.File
	Entry string
	Args  []string
	Env   map[string]string
	Stdin []byte
}

// WithCode is the program's files as they will be written, entry point
// first: Code at codeFile (the plan's), then the files sent.
func (p Program) WithCode(codeFile string) []program.File {
	if p.Code == "" {
		return p.Files
	}
	return append([]program.File{{Path: codeFile, Content: []byte(p.Code)}}, p.Files...)
}
