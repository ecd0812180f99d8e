package language

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Template is a Language described by data: where a request's code goes,
// which files are sources, and the argv of an optional compile step and of
// the run step. Every shipped plugin is one Template value, and the generic
// plugin builds one from an HCL language block, so a language needs no Go
// code at all.
//
// Placeholders in Compile and Run:
//
//	{sources}  every file whose extension is in Sources (a whole element
//	           that becomes several)
//	{entry}    the entry file, relative to the working directory
//	{stem}     the entry file without its extension
//	{out}      a path for a compiled program: /tmp/.sandboxd/prog
//	{outdir}   the directory of {out}, which the supervisor keeps in place
//	{class}    the entry's public class, with its package (Java)
//
// All but {sources} may be part of an element, e.g. "{outdir}/{stem}.js".
//
// The request's args follow the run step's argv.
type Template struct {
	Meta     Info
	MainFile string            // file the Code of a request goes to, e.g. "main.py"; "{class}.java" names it after the public class
	Sources  []string          // extensions of source files; default: Meta.Extensions
	Compile  []string          // argv of the compile step; none for interpreters
	Run      []string          // argv of the run step
	Env      map[string]string // environment of every step
}

var _ Language = (*Template)(nil)

// OutDir is where compiled programs go: a directory of /tmp, which allows
// execution, that the sandbox's supervisor makes (and makes again after a
// reset).
const OutDir = "/tmp/.sandboxd"

// WarmDir is where a warm process's Files are written (in OutDir, which
// the supervisor makes).
const WarmDir = OutDir + "/warm"

// Info implements Language.
func (l *Template) Info(context.Context) (Info, error) { return l.Meta, nil }

// Plan implements Language.
func (l *Template) Plan(_ context.Context, req PlanRequest) (Plan, error) {
	files, entry := req.Files, req.Entry
	var plan Plan
	if req.Code != "" {
		// Code is the entry point; any files are its companions.
		main := l.MainFile
		if strings.Contains(main, "{class}") {
			main = strings.ReplaceAll(main, "{class}", publicClass(string(req.Code), "Main"))
		}
		files = append([]File{{Path: main, Content: []byte(req.Code)}}, files...)
		plan.CodeFile = main
		if entry == "" {
			entry = main
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
	entryFile, ok := findFile(files, entry)
	if !ok {
		return Plan{}, fmt.Errorf("%w: entry %q is not among the files", ErrInvalidProgram, entry)
	}
	if strings.Contains(l.MainFile, "{class}") {
		// Java: javac wants a public class in a file of its name, whatever
		// name the file came with.
		var err error
		if files, plan.Renames, err = namedAfterClasses(files); err != nil {
			return Plan{}, err
		}
		if to, ok := plan.Renames[entryFile.Path]; ok {
			entryFile.Path = to
		}
	}
	outdir := OutDir
	vars := strings.NewReplacer(
		"{entry}", entryFile.Path,
		"{stem}", strings.TrimSuffix(entryFile.Path, path.Ext(entryFile.Path)),
		"{out}", outdir+"/prog",
		"{outdir}", outdir,
		"{class}", javaClass(entryFile),
	)
	exts := l.Sources
	if len(exts) == 0 {
		exts = l.Meta.Extensions
	}
	var sources []string
	for _, f := range files {
		if slices.Contains(exts, strings.TrimPrefix(path.Ext(f.Path), ".")) {
			sources = append(sources, f.Path)
		}
	}
	if len(l.Compile) > 0 && len(sources) == 0 {
		return Plan{}, fmt.Errorf("%w: no source files (%s)", ErrInvalidProgram, strings.Join(exts, ", "))
	}
	plan.Env = l.Env
	if len(l.Compile) > 0 {
		plan.Steps = append(plan.Steps, Step{Name: "compile", Argv: expand(l.Compile, vars, "{sources}", sources)})
	}
	plan.Steps = append(plan.Steps, Step{Name: "run", Argv: append(expand(l.Run, vars, "{sources}", sources), req.Args...)})
	return plan, nil
}

// expand fills in an argv template: list stands for an element that is
// exactly listName, vars for placeholders within elements.
func expand(argv []string, vars *strings.Replacer, listName string, list []string) []string {
	out := make([]string, 0, len(argv)+len(list))
	for _, a := range argv {
		if a == listName {
			out = append(out, list...)
		} else {
			out = append(out, vars.Replace(a))
		}
	}
	return out
}

func findFile(files []File, name string) (File, bool) {
	name = path.Clean(strings.TrimPrefix(name, "./"))
	for _, f := range files {
		if path.Clean(strings.TrimPrefix(f.Path, "./")) == name {
			return f, true
		}
	}
	return File{}, false
}

var (
	javaPublicClass = regexp.MustCompile(`(?m)^\s*public\s+(?:(?:final|abstract|strictfp)\s+)*(?:class|record|enum|interface)\s+([A-Za-z_$][\w$]*)`)
	javaPackage     = regexp.MustCompile(`(?m)^\s*package\s+([\w.]+)\s*;`)
)

// namedAfterClasses renames each Java file whose public class is not its
// name to that class's name, in the same directory.
func namedAfterClasses(files []File) ([]File, map[string]string, error) {
	var renames map[string]string
	out := make([]File, len(files))
	for i, f := range files {
		out[i] = f
		stem := strings.TrimSuffix(path.Base(f.Path), ".java")
		if path.Ext(f.Path) != ".java" {
			continue
		}
		class := publicClass(string(f.Content), stem)
		if class == stem {
			continue
		}
		to := path.Join(path.Dir(f.Path), class+".java")
		if _, taken := findFile(files, to); taken {
			return nil, nil, fmt.Errorf("%w: %s holds public class %s, and %s is another file", ErrInvalidProgram, f.Path, class, to)
		}
		if renames == nil {
			renames = map[string]string{}
		}
		renames[f.Path] = to
		out[i].Path = to
	}
	return out, renames, nil
}

// javaClass is the class to run for a Java entry file: its public class
// (any name, not only Main), with its package; else the file's name.
func javaClass(f File) string {
	name := publicClass(string(f.Content), strings.TrimSuffix(path.Base(f.Path), path.Ext(f.Path)))
	if m := javaPackage.FindStringSubmatch(stripJavaComments(string(f.Content))); m != nil {
		name = m[1] + "." + name
	}
	return name
}

// publicClass is the name of the public class of Java source, or def.
func publicClass(src, def string) string {
	if m := javaPublicClass.FindStringSubmatch(stripJavaComments(src)); m != nil {
		return m[1]
	}
	return def
}

var javaComments = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)

func stripJavaComments(src string) string { return javaComments.ReplaceAllString(src, "") }
