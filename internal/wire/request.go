// Package wire is where the API's types (package api) meet sandboxd's
// own, both ways:
//
//   - in: what a client sends becomes what the daemon runs, checked once:
//     a program (its files, code, entry, args, env and stdin) or a session
//     command, in the one shape the daemon keeps it in (plugins/program
//     files), and the limits and deadline it will run with. It owns the
//     bounds of a request beyond the operator's ceilings and the rule of
//     which timeout wins;
//   - out: the records sandboxd keeps (package state) as clients read
//     them (records.go), and errors as the wire's codes (ErrorOf).
//
// It runs nothing and keeps no state.
package wire

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/plugins/program"
)

// Bounds of a request, beyond the operator's limits. A program's files
// travel to the supervisor in one protocol line (supervisor.MaxLine, as
// base64): maxProgramBytes keeps them well inside it. Env values are
// bounded as the kernel bounds one argument string (MAX_ARG_STRLEN), and
// args and env together as execve's room for them.
const (
	maxFiles        = 1000
	maxArgs         = 1000
	maxEnv          = 1000
	maxPathLen      = 4096
	maxArgBytes     = 1 << 20
	maxEnvValue     = 128 << 10
	maxEnvBytes     = 1 << 20
	maxProgramBytes = 32 << 20
)

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

// Input is what every execution is given besides its program.
type Input struct {
	Args          []string
	Env           map[string]string
	Stdin         string
	StdinEncoding string
}

// DecodeProgram checks a program sent as code or files, with its input.
func DecodeProgram(code string, files []api.File, entry string, in Input) (Program, error) {
	p := Program{Code: code, Args: in.Args, Env: in.Env}
	if code == "" && len(files) == 0 {
		return p, errdefs.Errorf(errdefs.Invalid, "send the program as \"code\" or as \"files\"")
	}
	stdin, aerr := DecodeInput(in)
	if aerr != nil {
		return p, aerr
	}
	p.Stdin = stdin
	if len(files) > maxFiles {
		return p, errdefs.Errorf(errdefs.Invalid, "%d files: at most %d", len(files), maxFiles)
	}
	size := len(code)
	for i, f := range files {
		name, err := CleanPath(f.Path)
		if err != nil {
			return p, errdefs.Errorf(errdefs.Invalid, "files[%d].path: %v", i, err)
		}
		data, err := api.DecodeBytes(f.Content, f.Encoding)
		if err != nil {
			return p, errdefs.Errorf(errdefs.Invalid, "files[%d] (%s): %v", i, name, err)
		}
		if f.Mode > 0o777 {
			return p, errdefs.Errorf(errdefs.Invalid, "files[%d].mode %o: only permission bits (at most 0777)", i, f.Mode)
		}
		if size += len(data); size > maxProgramBytes {
			return p, errdefs.Errorf(errdefs.TooLarge, "the program's code and files pass %d bytes: send large data as a session file (PUT) or as stdin", maxProgramBytes)
		}
		p.Files = append(p.Files, program.File{Path: name, Content: data, Mode: f.Mode})
	}
	if size > maxProgramBytes {
		return p, errdefs.Errorf(errdefs.TooLarge, "the program's code is %d bytes, over %d: send large data as a session file (PUT) or as stdin", size, maxProgramBytes)
	}
	if entry != "" {
		clean, err := CleanPath(entry)
		if err != nil {
			return p, errdefs.Errorf(errdefs.Invalid, "entry: %v", err)
		}
		p.Entry = clean
	}
	return p, nil
}

// DecodeInput checks what a program or command is given (arguments and
// environment) and decodes its stdin.
func DecodeInput(in Input) ([]byte, error) {
	if aerr := CheckEnv(in.Env); aerr != nil {
		return nil, aerr
	}
	if len(in.Args) > maxArgs {
		return nil, errdefs.Errorf(errdefs.Invalid, "%d args: at most %d", len(in.Args), maxArgs)
	}
	size := 0
	for _, a := range in.Args {
		size += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errdefs.Errorf(errdefs.Invalid, "args may not contain NUL bytes")
		}
	}
	if size > maxArgBytes {
		return nil, errdefs.Errorf(errdefs.TooLarge, "args total %d bytes: at most %d", size, maxArgBytes)
	}
	data, err := api.DecodeBytes(in.Stdin, in.StdinEncoding)
	if err != nil {
		return nil, errdefs.Errorf(errdefs.Invalid, "stdin: %v", err)
	}
	return data, nil
}

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
