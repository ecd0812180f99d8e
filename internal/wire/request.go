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
	"strings"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
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
	maxArgBytes     = 1 << 20
	maxProgramBytes = 32 << 20
)

// Input is what every execution is given besides its program.
type Input struct {
	Args          []string
	Env           map[string]string
	Stdin         string
	StdinEncoding string
}

// DecodeProgram checks a program sent as code or files, with its input.
func DecodeProgram(code string, files []api.File, entry string, in Input) (request.Program, error) {
	p := request.Program{Code: code, Args: in.Args, Env: in.Env}
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
		name, err := request.CleanPath(f.Path)
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
		clean, err := request.CleanPath(entry)
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
	if aerr := request.CheckEnv(in.Env); aerr != nil {
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
