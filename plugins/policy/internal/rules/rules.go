// Package rules holds the pattern rules of the shipped policy plugins: per
// language, the dangerous constructs worth a finding, matched only in code
// (not comments or strings) where the lexer of plugins/policy tells them
// apart, and with go/parser for Go.
package rules

import (
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/plugins/policy"
)

// rule is a pattern whose first group is the construct reported.
type rule struct {
	name, severity, message string
	re                      *regexp.Regexp
	// check, when set, confirms a match (e.g. a call's arguments).
	check func(s *policy.Source, m []int) bool
}

const (
	warning  = policy.SeverityWarning
	errorSev = policy.SeverityError
	critical = policy.SeverityCritical
)

var byFamily = map[string][]rule{
	"python": {
		{"python.eval", warning, "eval()/exec() run arbitrary code", regexp.MustCompile(`(?:^|[^\w.])((?:eval|exec)\s*\()`), nil},
		{"python.dunder_import", warning, "__import__() imports a module named at run time", regexp.MustCompile(`\b(__import__\s*\()`), nil},
		{"python.os_system", warning, "runs a shell command", regexp.MustCompile(`\b(os\.(?:system|popen|exec[lv]p?e?|spawn[lv]p?e?)\s*\()`), nil},
		{"python.subprocess_shell", warning, "subprocess with shell=True runs its argument through a shell", regexp.MustCompile(`\b(subprocess\.\w+\s*\()`), callHas(regexp.MustCompile(`\bshell\s*=\s*True\b`))},
		{"python.pickle", warning, "unpickling runs code the data chooses", regexp.MustCompile(`\b((?:c?[Pp]ickle|marshal|dill|shelve)\.(?:loads?|open|Unpickler)\s*\()`), nil},
	},
	"js": {
		{"js.eval", warning, "eval() runs arbitrary code", regexp.MustCompile(`(?:^|[^\w.$])(eval\s*\()`), nil},
		{"js.function_constructor", warning, "the Function constructor compiles code from a string", regexp.MustCompile(`\b((?:new\s+)?Function\s*\()`), nil},
		{"js.child_process", warning, "child_process runs commands", regexp.MustCompile(`\b((?:require|import)\s*\(\s*['"](?:node:)?child_process['"]|from\s+['"](?:node:)?child_process['"])`), nil},
		{"js.vm", warning, "the vm module compiles code from strings", regexp.MustCompile(`\b((?:require|import)\s*\(\s*['"](?:node:)?vm['"]|from\s+['"](?:node:)?vm['"])`), nil},
	},
	"shell": Shell,
	"ruby": {
		{"ruby.eval", warning, "eval runs arbitrary code", regexp.MustCompile(`(?:^|[^\w.])((?:instance_|class_|module_)?eval\b)`), nil},
		{"ruby.system", warning, "runs a shell command", regexp.MustCompile(`(?:^|[^\w.])((?:system|exec|spawn|IO\.popen|Open3\.\w+|%x)[\s(\[{'"])`), nil},
		{"ruby.backticks", warning, "backticks run a shell command", regexp.MustCompile("(`)"), nil},
	},
	"php": {
		{"php.eval", warning, "eval() runs arbitrary code", regexp.MustCompile(`\b(eval\s*\()`), nil},
		{"php.exec", warning, "runs a shell command", regexp.MustCompile(`\b((?:exec|shell_exec|system|passthru|popen|proc_open|pcntl_exec)\s*\()`), nil},
		{"php.backticks", warning, "backticks run a shell command", regexp.MustCompile("(`)"), nil},
	},
}

// Shell is the shell rules; the commands policy applies them to session
// commands too.
var Shell = []rule{
	{"shell.rm_rf_root", critical, "deletes the whole filesystem", regexp.MustCompile(`\b(rm\s+(?:-[-\w]+\s+)*(?:-\w*[rR]\w*|--recursive)\s+(?:-[-\w]+\s+)*(?:/|/\*|~/?|\$HOME/?)(?:\s|;|&|\||$))`), nil},
	{"shell.curl_pipe_sh", errorSev, "pipes a download into a shell", regexp.MustCompile(`\b((?:curl|wget)\b[^|\n;]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b)`), nil},
	{"shell.fork_bomb", critical, "a fork bomb", regexp.MustCompile(`((:|\w+)\s*\(\)\s*\{\s*(:|\w+)\s*\|\s*(:|\w+)\s*&\s*\}\s*;?\s*(:|\w+))`), sameNames},
}

// Scan reports the rules of the family over a file.
func Scan(s *policy.Source, family string) []policy.Finding {
	if family == "go" {
		return scanGo(s)
	}
	return Apply(s, byFamily[family])
}

// Apply reports the rules over a file.
func Apply(s *policy.Source, rules []rule) []policy.Finding {
	var out []policy.Finding
	for _, r := range rules {
		for _, m := range s.Find(r.re, true) {
			if r.check == nil || r.check(s, m) {
				out = append(out, s.At(m[2], r.name, r.severity, r.message))
			}
		}
	}
	return out
}

// callHas confirms a call whose arguments (in code, up to the matching
// parenthesis) match re.
func callHas(re *regexp.Regexp) func(*policy.Source, []int) bool {
	return func(s *policy.Source, m []int) bool {
		depth, start := 1, m[3]
		for i := start; i < len(s.Text); i++ {
			if !s.IsCode(i) {
				continue
			}
			switch s.Text[i] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return re.Match(codeOnly(s, start, i))
				}
			}
		}
		return false
	}
}

// codeOnly is text[start:end] with comments and strings blanked.
func codeOnly(s *policy.Source, start, end int) []byte {
	b := []byte(s.Text[start:end])
	for i := range b {
		if !s.IsCode(start + i) {
			b[i] = ' '
		}
	}
	return b
}

// sameNames confirms `f() { f | f & }; f`: one name throughout.
func sameNames(s *policy.Source, m []int) bool {
	name := s.Text[m[4]:m[5]]
	for g := 3; g <= 5; g++ {
		if s.Text[m[2*g]:m[2*g+1]] != name {
			return false
		}
	}
	return true
}

// goImports are the Go imports worth a finding.
var goImports = map[string]string{
	"os/exec": "runs commands",
	"syscall": "makes raw system calls",
	"unsafe":  "bypasses Go's memory safety",
	"plugin":  "loads code at run time",
}

// scanGo parses Go source (no findings when it does not parse: the
// compile step will say why) and reports risky imports.
func scanGo(s *policy.Source) []policy.Finding {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, s.Path, s.Text, parser.ImportsOnly)
	if err != nil {
		return nil
	}
	var out []policy.Finding
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if why, ok := goImports[p]; ok {
			out = append(out, s.At(fset.Position(imp.Path.Pos()).Offset, "go.import_"+strings.ReplaceAll(p, "/", "_"), warning, "imports "+p+": "+why))
		}
	}
	return out
}
