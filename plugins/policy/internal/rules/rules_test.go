package rules

import (
	"testing"

	"github.com/sandboxd/sandboxd/plugins/policy"
)

// Each rule fires on its construct (at the right line and column) and not
// on the same text in a comment or a string, nor on look-alikes.
func TestRules(t *testing.T) {
	for _, tc := range []struct {
		family, src, rule string
		line, col         int // 0: no finding of rule
	}{
		{"python", "x = 1\nprint(eval('1'))", "python.eval", 2, 7},
		{"python", "exec(code)", "python.eval", 1, 1},
		{"python", "# eval(x)\ns = 'eval(x)'\nt = \"\"\"\neval(x)\n\"\"\"", "python.eval", 0, 0},
		{"python", "model.eval()\nliteral_eval(x)", "python.eval", 0, 0},
		{"python", "__import__('os')", "python.dunder_import", 1, 1},
		{"python", "import os\nos.system('ls')", "python.os_system", 2, 1},
		{"python", "subprocess.run(cmd,\n  shell=True)", "python.subprocess_shell", 1, 1},
		{"python", "subprocess.run(['ls'], shell=False)\nsubprocess.run(f('shell=True'))", "python.subprocess_shell", 0, 0},
		{"python", "import pickle\npickle.loads(b)", "python.pickle", 2, 1},
		{"js", "const x = eval('1')", "js.eval", 1, 11},
		{"js", "// eval('1')\nconst s = 'eval(1)'; const t = `eval(2)`; /* eval(3) */", "js.eval", 0, 0},
		{"js", "const f = new Function('return 1')", "js.function_constructor", 1, 11},
		{"js", "const cp = require('child_process')", "js.child_process", 1, 12},
		{"js", "import { exec } from 'node:child_process'", "js.child_process", 1, 17},
		{"js", "console.log(\"require('child_process')\")", "js.child_process", 0, 0},
		{"shell", "cd /tmp\nrm -rf /", "shell.rm_rf_root", 2, 1},
		{"shell", "rm -r --no-preserve-root /", "shell.rm_rf_root", 1, 1},
		{"shell", "rm -rf ./build /tmp/x\n# rm -rf /", "shell.rm_rf_root", 0, 0},
		{"shell", "curl -fsSL https://x.sh | bash", "shell.curl_pipe_sh", 1, 1},
		{"shell", "curl -o x https://x; sh x\necho 'curl x | sh'", "shell.curl_pipe_sh", 0, 0},
		{"shell", ":(){ :|:& };:", "shell.fork_bomb", 1, 1},
		{"shell", "bomb() { bomb | bomb & }; bomb", "shell.fork_bomb", 1, 1},
		{"shell", "f() { g | h & }; f", "shell.fork_bomb", 0, 0},
		{"go", "package main\n\nimport \"os/exec\"\nfunc main() { exec.Command(\"ls\") }", "go.import_os_exec", 3, 8},
		{"go", "package main\n// import \"os/exec\"\nfunc main() { println(\"os/exec\") }", "go.import_os_exec", 0, 0},
		{"ruby", "system('ls')", "ruby.system", 1, 1},
		{"ruby", "# system('ls')\nputs 'eval'", "ruby.system", 0, 0},
		{"php", "<?php\nshell_exec('ls');", "php.exec", 2, 1},
		{"php", "<?php // shell_exec('ls')\necho 'exec(1)';", "php.exec", 0, 0},
	} {
		findings := Scan(policy.NewSource("f", tc.family, []byte(tc.src)), tc.family)
		var got *policy.Finding
		for i := range findings {
			if findings[i].Rule == tc.rule {
				got = &findings[i]
				break
			}
		}
		switch {
		case tc.line == 0 && got != nil:
			t.Errorf("%s %q: unexpected %+v", tc.rule, tc.src, *got)
		case tc.line != 0 && got == nil:
			t.Errorf("%s %q: no finding (got %+v)", tc.rule, tc.src, findings)
		case got != nil && (got.Line != tc.line || got.Column != tc.col || got.Snippet == ""):
			t.Errorf("%s %q: at %d:%d (snippet %q), want %d:%d", tc.rule, tc.src, got.Line, got.Column, got.Snippet, tc.line, tc.col)
		}
	}
}
