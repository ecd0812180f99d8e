package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The environment flags read as docker run reads -e and --env-file.
func TestEnvFlags(t *testing.T) {
	t.Setenv("FROM_HOST", "host value")
	os.Unsetenv("NOT_SET")
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := file("first.env", "# a comment\n\nA=1\n  B=two words  \nC=x=y\r\nFROM_HOST\nNOT_SET\nEMPTY=\nQUOTED=\"kept\"\n")
	second := file("second.env", "A=from the second file\n")
	for _, tc := range []struct {
		name      string
		flags     envFlags
		want      map[string]string
		errorSays string
	}{
		{name: "none", flags: envFlags{}},
		{name: "pairs", flags: envFlags{pairs: []string{"X=1", "Y=a=b", "Z="}}, want: map[string]string{"X": "1", "Y": "a=b", "Z": ""}},
		{name: "a name alone", flags: envFlags{pairs: []string{"FROM_HOST", "NOT_SET"}}, want: map[string]string{"FROM_HOST": "host value"}},
		{name: "a file", flags: envFlags{files: []string{first}}, want: map[string]string{
			"A": "1", "B": "two words  ", "C": "x=y", "FROM_HOST": "host value", "EMPTY": "", "QUOTED": `"kept"`}},
		{name: "-e over files, the later file over the earlier", flags: envFlags{files: []string{first, second}, pairs: []string{"C=flag"}}, want: map[string]string{
			"A": "from the second file", "B": "two words  ", "C": "flag", "FROM_HOST": "host value", "EMPTY": "", "QUOTED": `"kept"`}},
		{name: "no name", flags: envFlags{pairs: []string{"=1"}}, errorSays: "no name"},
		{name: "white space in a name", flags: envFlags{files: []string{file("space.env", "OK=1\nA B=1\n")}}, errorSays: "line 2: the name \"A B\" has white space"},
		{name: "a byte order mark", flags: envFlags{files: []string{file("bom.env", "\uFEFF# saved by Notepad\nA=1\n")}}, want: map[string]string{"A": "1"}},
		{name: "a file too large", flags: envFlags{files: []string{file("large.env", "A="+strings.Repeat("x", 1<<20))}}, errorSays: "over 1048576 bytes"},
		{name: "a missing file", flags: envFlags{files: []string{filepath.Join(dir, "missing")}}, errorSays: "no such file"},
		{name: "not text", flags: envFlags{files: []string{file("binary.env", "A=1\nB=\xff\xfe\n")}}, errorSays: "line 2: not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.flags.env()
			if tc.errorSays != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorSays) {
					t.Fatalf("error %v, want one that says %q", err, tc.errorSays)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
