package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// program is one language's test programs: greet reads a name from stdin
// and prints "hello <name> ✓"; fail writes "oops" to stderr and exits 3;
// crash dies of a runtime error; broken does not compile (compiled
// languages only).
type program struct {
	lang, greet, fail, crash, broken string
}

// The programs of languages with a second version (sandboxd.hcl).
var (
	pythonProgram = program{"python", "print('hello', input(), '✓')", "import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)", "print(1 // 0)", ""}
	goProgram     = program{"go", "package main\nimport (\"bufio\"; \"fmt\"; \"os\")\nfunc main() { s := bufio.NewScanner(os.Stdin); s.Scan(); fmt.Println(\"hello\", s.Text(), \"✓\") }",
		"package main\nimport (\"fmt\"; \"os\")\nfunc main() { fmt.Fprintln(os.Stderr, \"oops\"); os.Exit(3) }",
		"package main\nfunc main() { var a []int; _ = a[3] }", "package main\nfunc main() { x := 1 }"}
)

// as is p for another language block of its plugin.
func (p program) as(lang string) program {
	p.lang = lang
	return p
}

var programs = []program{
	pythonProgram, pythonProgram.as("python3.11"),
	{"node", "const l = require('fs').readFileSync(0, 'utf8').trim(); console.log('hello ' + l + ' ✓')",
		"console.error('oops'); process.exit(3)", "null.x", ""},
	{"typescript", "const name: string = require('fs').readFileSync(0, 'utf8').trim();\nconsole.log(`hello ${name} ✓`);",
		"console.error('oops'); process.exit(3);", "const o: any = null; o.x;", "let x: number = ;"},
	goProgram, goProgram.as("go1.24"),
	{"java", "import java.util.Scanner;\npublic class Greeter { public static void main(String[] a) { System.out.println(\"hello \" + new Scanner(System.in).nextLine() + \" ✓\"); } }",
		"public class Fail { public static void main(String[] a) { System.err.println(\"oops\"); System.exit(3); } }",
		"public class Crash { public static void main(String[] a) { Object o = null; o.toString(); } }",
		"public class Broken { public static void main(String[] a) { int x = \"s\"; } }"},
	{"ruby", "puts \"hello #{gets.strip} ✓\"", "$stderr.puts 'oops'\nexit 3", "nil.upcase", ""},
	{"php", "<?php echo 'hello ' . trim(fgets(STDIN)) . \" ✓\\n\";", "<?php fwrite(STDERR, \"oops\\n\"); exit(3);", "<?php throw new Exception('boom');", ""},
	{"bash", "read name; echo \"hello $name ✓\"", "echo oops >&2; exit 3", "set -e; cat /no/such/file; echo unreachable", ""},
	{"c", "#include <stdio.h>\nint main(void) { char n[64]; scanf(\"%63s\", n); printf(\"hello %s ✓\\n\", n); return 0; }",
		"#include <stdio.h>\nint main(void) { fprintf(stderr, \"oops\\n\"); return 3; }",
		"#include <stdlib.h>\nint main(void) { abort(); }", "int main(void) { return x; }"},
	{"cpp", "#include <iostream>\n#include <string>\nint main() { std::string n; std::cin >> n; std::cout << \"hello \" << n << \" ✓\" << std::endl; }",
		"#include <iostream>\nint main() { std::cerr << \"oops\" << std::endl; return 3; }",
		"#include <stdexcept>\nint main() { throw std::runtime_error(\"boom\"); }", "int main() { undefined_call(); }"},
	{"rust", "use std::io::BufRead;\nfn main() { let l = std::io::stdin().lock().lines().next().unwrap().unwrap(); println!(\"hello {} ✓\", l); }",
		"fn main() { eprintln!(\"oops\"); std::process::exit(3); }",
		"fn main() { let v: Vec<i32> = Vec::new(); println!(\"{}\", v[3]); }", "fn main() { let x: i32 = \"s\"; }"},
	{"lua", "print('hello ' .. io.read('l') .. ' ✓')", "io.stderr:write('oops\\n') os.exit(3)", "error('boom')", ""},
	{"csharp", "using System;\nclass Greeter { static void Main() { Console.WriteLine($\"hello {Console.ReadLine()} ✓\"); } }",
		"using System;\nclass Fail { static void Main() { Console.Error.WriteLine(\"oops\"); Environment.Exit(3); } }",
		"class Crash { static void Main() { object o = null; o.ToString(); } }",
		"class Broken { static void Main() { int x = \"s\"; } }"},
}

// shippedLanguages is the language blocks of the repository's sandboxd.hcl:
// the tests run what users run.
func shippedLanguages(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "sandboxd.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), "\nlanguage ")
	if i < 0 {
		t.Fatal("sandboxd.hcl has no language blocks")
	}
	return string(data[i:])
}

// shippedBlock is one language block of the repository's sandboxd.hcl.
func shippedBlock(t *testing.T, name string) string {
	t.Helper()
	all := shippedLanguages(t)
	_, block, ok := strings.Cut(all, "\nlanguage \""+name+"\" {")
	end := strings.Index(block, "\n}\n")
	if !ok || end < 0 {
		t.Fatalf("sandboxd.hcl has no language %q block", name)
	}
	return "language \"" + name + "\" {" + block[:end+3]
}

// TestLanguages runs every shipped language (and the HCL-only one) through
// the real engine: hello world with stdin and unicode, exit code and
// stderr, a runtime error, and a compile error apart from a crash.
func TestLanguages(t *testing.T) {
	images := []string{"python", "node", "go", "java", "ruby", "php", "bash", "c", "rust", "lua", "csharp", "python311", "go124"}
	for i, img := range images {
		images[i] = "sandboxd/" + img + ":latest"
	}
	testutil.RequireDocker(t, images...)
	d := testutil.StartDaemon(t, testutil.Options{Languages: shippedLanguages(t), Defaults: `timeout = "30s"`})
	c := d.Client()
	for _, p := range programs {
		t.Run(p.lang, func(t *testing.T) {
			t.Parallel()
			res := run(t, c, api.RunRequest{Language: p.lang, Code: p.greet, Stdin: "wörld\n"})
			if res.ExitCode != 0 || res.Stdout != "hello wörld ✓\n" {
				t.Errorf("greet: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			res = run(t, c, api.RunRequest{Language: p.lang, Code: p.fail})
			if res.ExitCode != 3 || res.Stderr != "oops\n" || res.Stage != "" {
				t.Errorf("fail: exit %d stage %q stderr %q", res.ExitCode, res.Stage, res.Stderr)
			}
			res = run(t, c, api.RunRequest{Language: p.lang, Code: p.crash})
			if res.ExitCode == 0 || res.Stage != "" || res.Stderr == "" && res.Signal == "" || res.TimedOut {
				t.Errorf("crash: exit %d signal %q stage %q stderr %q", res.ExitCode, res.Signal, res.Stage, res.Stderr)
			}
			if p.broken == "" {
				return
			}
			res = run(t, c, api.RunRequest{Language: p.lang, Code: p.broken})
			if res.ExitCode == 0 || res.Stage != "compile" || len(res.Steps) != 1 || res.Steps[0].Name != "compile" || res.Steps[0].Stderr == "" {
				t.Errorf("broken: exit %d stage %q steps %+v stderr %q", res.ExitCode, res.Stage, res.Steps, res.Stderr)
			}
		})
	}
	t.Run("multi-file programs with an entry and args", func(t *testing.T) {
		res := run(t, c, api.RunRequest{Language: "go", Entry: "main.go", Args: []string{"x", "y"}, Files: []api.File{
			{Path: "main.go", Content: "package main\nimport (\"fmt\"; \"os\")\nfunc main() { fmt.Println(greeting(), os.Args[1:]) }"},
			{Path: "util.go", Content: "package main\nfunc greeting() string { return \"from util\" }"},
		}})
		if res.Stdout != "from util [x y]\n" || len(res.Steps) != 2 || res.Steps[1].Name != "run" {
			t.Fatalf("go: %+v", res)
		}
		res = run(t, c, api.RunRequest{Language: "java", Entry: "app/Main.java", Files: []api.File{
			{Path: "app/Main.java", Content: "package app;\npublic class Main { public static void main(String[] a) { System.out.println(lib.Util.twice(21)); } }"},
			{Path: "lib/Util.java", Content: "package lib;\npublic class Util { public static int twice(int x) { return 2 * x; } }"},
		}})
		if res.Stdout != "42\n" {
			t.Fatalf("java: %+v", res)
		}
		res = run(t, c, api.RunRequest{Language: "c", Entry: "main.c", Files: []api.File{
			{Path: "main.c", Content: "#include \"sq.h\"\n#include <stdio.h>\nint main(void) { printf(\"%d\\n\", sq(7)); return 0; }"},
			{Path: "sq.h", Content: "int sq(int);"},
			{Path: "sq.c", Content: "int sq(int x) { return x * x; }"},
		}})
		if res.Stdout != "49\n" {
			t.Fatalf("c: %+v", res)
		}
	})
	t.Run("by extension through sandboxctl", func(t *testing.T) {
		for name, code := range map[string]string{"a.rs": "fn main() { println!(\"rs\"); }", "b.cc": "#include <cstdio>\nint main() { std::puts(\"cc\"); }",
			"c.ts": "console.log('ts' as string)", "d.sh": "echo sh", "e.lua": "print('lua')", "f.mjs": "console.log('mjs')",
			"h.cs": "class H { static void Main() { System.Console.WriteLine(\"cs\"); } }",
			// Piston's Java test: a public class not named after its file.
			"g.java": "public class HelloWorld {\n    public static void main(String[] args) {\n        System.out.println(\"java\");\n    }\n}"} {
			out, errOut, code := d.Ctl("", "run", writeFile(t, name, code))
			if want := strings.TrimPrefix(filepath.Ext(name), ".") + "\n"; code != 0 || out != want {
				t.Errorf("%s: exit %d stdout %q stderr %q", name, code, out, errOut)
			}
		}
	})
}
