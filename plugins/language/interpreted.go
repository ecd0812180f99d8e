package language

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// Interpreted is a Language for interpreters that run one source file:
// python3 main.py, node main.js, ruby main.rb. Shipped plugins are one value
// of it; the generic HCL-driven plugin builds one from a config block.
type Interpreted struct {
	Meta        Info
	MainFile    string            // file the Code of a request is written to, e.g. "main.py"
	Interpreter []string          // argv before the entry file, e.g. ["python3"]
	Env         map[string]string // extra environment for every step
}

var _ Language = (*Interpreted)(nil)

// Info implements Language.
func (l *Interpreted) Info(context.Context) (Info, error) { return l.Meta, nil }

// Plan implements Language.
func (l *Interpreted) Plan(_ context.Context, req PlanRequest) (Plan, error) {
	files, entry := req.Files, req.Entry
	if req.Code != "" {
		// Code is the entry point; any files are its companions.
		files = append([]File{{Path: l.MainFile, Content: []byte(req.Code)}}, files...)
		if entry == "" {
			entry = l.MainFile
		}
	}
	switch {
	case len(files) == 0:
		return Plan{}, fmt.Errorf("%w: send code or files", ErrInvalidProgram)
	case entry == "" && len(files) == 1:
		entry = files[0].Path
	case entry == "":
		return Plan{}, fmt.Errorf("%w: %d files and no entry: name the file to run in \"entry\"", ErrInvalidProgram, len(files))
	}
	if !hasFile(files, entry) {
		return Plan{}, fmt.Errorf("%w: entry %q is not among the files", ErrInvalidProgram, entry)
	}
	argv := append(append([]string{}, l.Interpreter...), entry)
	return Plan{
		Files: files,
		Steps: []Step{{Name: "run", Argv: append(argv, req.Args...)}},
		Env:   l.Env,
	}, nil
}

func hasFile(files []File, name string) bool {
	name = path.Clean(strings.TrimPrefix(name, "./"))
	for _, f := range files {
		if path.Clean(strings.TrimPrefix(f.Path, "./")) == name {
			return true
		}
	}
	return false
}
