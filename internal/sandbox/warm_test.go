package sandbox

import (
	"slices"
	"testing"

	"github.com/sandboxd/sandboxd/internal/languages"
	"github.com/sandboxd/sandboxd/plugins/language"
)

func TestLearnScript(t *testing.T) {
	l := &kind{Language: &languages.Language{Info: language.Info{Warm: []language.Warm{
		{Command: []string{"python3", "main.py"}, Stands: []string{"python3", "main.py"}},
		{Command: []string{"sh", "-c", "exec php main.php"}, Stands: []string{"php", "main.php"}, Exact: true},
		{Command: []string{"java", "Hook.java"}, Stands: []string{"javac", "-J-Xfoo"}},
	}}}}
	stands := func() []string { return l.named(0, l.Info.Warm[0]).Stands }
	for _, tc := range []struct {
		argv   []string
		warm   bool
		stands []string // the python runtime's, after the run
	}{
		{[]string{"python3", "main.py"}, true, []string{"python3", "main.py"}},
		{[]string{"python3", "analysis.py", "x"}, true, []string{"python3", "analysis.py"}},
		{[]string{"python3", "analysis.py"}, true, []string{"python3", "analysis.py"}},
		{[]string{"python3", "sub/tool.py"}, false, []string{"python3", "analysis.py"}},    // another directory
		{[]string{"python3", "-c.py"}, false, []string{"python3", "analysis.py"}},          // an option
		{[]string{"python3", "notes.txt"}, false, []string{"python3", "analysis.py"}},      // another extension
		{[]string{"php", "quiz.php"}, false, []string{"python3", "analysis.py"}},           // argv fixed at start
		{[]string{"javac", "-J-Xfoo", "A.java"}, true, []string{"python3", "analysis.py"}}, // a command, not a script
		{[]string{"python3", "main.py"}, true, []string{"python3", "main.py"}},
	} {
		if got := l.learnScript(tc.argv); got != tc.warm {
			t.Errorf("learnScript(%q) = %v, want %v", tc.argv, got, tc.warm)
		}
		if got := stands(); !slices.Equal(got, tc.stands) {
			t.Errorf("after %q the runtime stands in for %q, want %q", tc.argv, got, tc.stands)
		}
	}
	l.learnScript([]string{"python3", "quiz.py"})
	if w := l.named(0, l.Info.Warm[0]); !slices.Equal(w.Command, []string{"python3", "quiz.py"}) || !l.warmStands([]string{"python3", "main.py"}) {
		t.Errorf("renamed runtime: %+v", w)
	}
	if w := l.named(1, l.Info.Warm[1]); w.Command[2] != "exec php main.php" {
		t.Errorf("an exact runtime was renamed: %+v", w)
	}
}
