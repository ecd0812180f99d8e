package policy

import (
	"path"
	"regexp"
	"sort"
	"strings"
)

// Source is a program file prepared for pattern rules: it knows which
// bytes are code rather than comment or string in the file's language, so
// a rule can ignore `eval(` written in a comment or a string, and it turns
// offsets into lines and columns.
type Source struct {
	Path  string
	Text  string
	code  []bool // code[i]: byte i is code
	lines []int  // offset of each line's start
}

// syntax is what a lexer needs to tell code from comments and strings.
type syntax struct {
	line   []string    // line comment openers
	block  [][2]string // block comment delimiters
	quotes []string    // string delimiters, longest first; a backslash escapes
	raw    []string    // string delimiters without escapes
	hashAt bool        // "#" opens a comment only at a word's start (shells)
}

var syntaxes = map[string]syntax{
	"python": {line: []string{"#"}, quotes: []string{`"""`, `'''`, `"`, `'`}},
	"js":     {line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: []string{"`", `"`, `'`}},
	"c":      {line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: []string{`"`, `'`}},
	"go":     {line: []string{"//"}, block: [][2]string{{"/*", "*/"}}, quotes: []string{`"`, `'`}, raw: []string{"`"}},
	"ruby":   {line: []string{"#"}, quotes: []string{`"`, `'`}},
	"php":    {line: []string{"//", "#"}, block: [][2]string{{"/*", "*/"}}, quotes: []string{`"`, `'`}},
	// Double-quoted shell text still runs $(...) and `...`: only single
	// quotes are plain strings.
	"shell": {line: []string{"#"}, raw: []string{`'`}, hashAt: true},
}

// Family is the lexical family of a language name, "" when unknown.
func Family(language string) string {
	switch language {
	case "python":
		return "python"
	case "node", "javascript", "typescript":
		return "js"
	case "c", "cpp", "java", "rust":
		return "c"
	case "go", "ruby", "php":
		return language
	case "bash", "sh", "shell":
		return "shell"
	}
	return ""
}

// NewSource prepares a file of the family (see Family); an unknown family
// counts every byte as code.
func NewSource(path, family string, content []byte) *Source {
	s := &Source{Path: path, Text: string(content), code: make([]bool, len(content)+1), lines: []int{0}}
	for i, c := range content {
		if c == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	syn, ok := syntaxes[family]
	if !ok {
		for i := range s.code {
			s.code[i] = true
		}
		return s
	}
	t := s.Text
	for i := 0; i < len(t); {
		if end := syn.skip(t, i); end > i {
			i = end
			continue
		}
		s.code[i] = true
		i++
	}
	s.code[len(t)] = true
	return s
}

// skip returns the end of the comment or string starting at i, or i.
func (syn syntax) skip(t string, i int) int {
	rest := t[i:]
	for _, open := range syn.line {
		if strings.HasPrefix(rest, open) && (!syn.hashAt || i == 0 || strings.ContainsRune(" \t\n;|&(", rune(t[i-1]))) {
			if n := strings.IndexByte(rest, '\n'); n >= 0 {
				return i + n
			}
			return len(t)
		}
	}
	for _, b := range syn.block {
		if strings.HasPrefix(rest, b[0]) {
			if n := strings.Index(rest[len(b[0]):], b[1]); n >= 0 {
				return i + len(b[0]) + n + len(b[1])
			}
			return len(t)
		}
	}
	for _, q := range syn.raw {
		if strings.HasPrefix(rest, q) {
			if n := strings.Index(rest[len(q):], q); n >= 0 {
				return i + len(q) + n + len(q)
			}
			return len(t)
		}
	}
	for _, q := range syn.quotes {
		if !strings.HasPrefix(rest, q) {
			continue
		}
		for j := i + len(q); j < len(t); j++ {
			switch {
			case t[j] == '\\':
				j++
			case strings.HasPrefix(t[j:], q):
				return j + len(q)
			case t[j] == '\n' && len(q) == 1 && q != "`":
				return j // an unterminated one-line string ends with its line
			}
		}
		return len(t)
	}
	return i
}

// IsCode tells whether the byte at offset is code.
func (s *Source) IsCode(offset int) bool {
	return offset >= 0 && offset < len(s.code) && s.code[offset]
}

// Position is the 1-based line and column (in bytes) of an offset.
func (s *Source) Position(offset int) (line, col int) {
	n := sort.Search(len(s.lines), func(i int) bool { return s.lines[i] > offset })
	return n, offset - s.lines[n-1] + 1
}

// Snippet is the line of an offset, trimmed and cut to 120 bytes.
func (s *Source) Snippet(offset int) string {
	line, _ := s.Position(offset)
	start := s.lines[line-1]
	end := strings.IndexByte(s.Text[start:], '\n')
	if end < 0 {
		end = len(s.Text) - start
	}
	text := strings.TrimSpace(s.Text[start : start+end])
	if len(text) > 120 {
		text = text[:117] + "..."
	}
	return text
}

// Find returns the matches of re as [start, end, submatch...] offsets.
// With codeOnly, only matches whose first group (the construct itself;
// the whole match when re has no group) starts in code.
func (s *Source) Find(re *regexp.Regexp, codeOnly bool) [][]int {
	var out [][]int
	for _, m := range re.FindAllStringSubmatchIndex(s.Text, -1) {
		at := m[0]
		if len(m) > 2 && m[2] >= 0 {
			at = m[2]
		}
		if !codeOnly || s.IsCode(at) {
			out = append(out, m)
		}
	}
	return out
}

// At is a finding of rule at offset, with its position and snippet.
func (s *Source) At(offset int, rule, severity, message string) Finding {
	line, col := s.Position(offset)
	return Finding{Rule: rule, Severity: severity, Message: message, File: s.Path, Line: line, Column: col, Snippet: s.Snippet(offset)}
}

// FamilyOfFile is the lexical family of a program file: by its extension,
// else the request's language (a file without one is in it).
func FamilyOfFile(name, language string) string {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".py":
		return "python"
	case ".js", ".mjs", ".cjs", ".ts":
		return "js"
	case ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".java", ".rs":
		return "c"
	case ".go":
		return "go"
	case ".rb":
		return "ruby"
	case ".php":
		return "php"
	case ".sh", ".bash":
		return "shell"
	case "":
		return Family(language)
	}
	return ""
}
