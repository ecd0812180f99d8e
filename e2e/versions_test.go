package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// Two versions of one language side by side, as sandboxd.hcl ships them:
// python (3.13, trixie) keeps .py files, python3.11 (bookworm) is asked
// for by name, and has its own warm runtimes, contexts and tools.
func TestLanguageVersions(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/python311:latest")
	d := testutil.StartDaemon(t, testutil.Options{Languages: shippedBlock(t, "python") + "\n" + shippedBlock(t, "python3.11"), Defaults: `timeout = "30s"`})
	c := d.Client()

	var rows []string
	listed := func() bool { // once each image has said its version
		out, _, _ := d.Ctl("", "languages")
		rows = nil
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "python") {
				rows = append(rows, strings.Join(strings.Fields(line)[:3], " "))
			}
		}
		return len(rows) == 2 && strings.HasPrefix(rows[0], "python Python 3.13.") && strings.HasPrefix(rows[1], "python3.11 Python 3.11.")
	}
	waitFor(t, "sandboxctl languages listing both versions", listed)

	script := writeFile(t, "which.py", "import sys\nprint(sys.version_info[:2], __file__)")
	if out, errOut, code := d.Ctl("", "run", script); code != 0 || out != "(3, 13) /workspace/which.py\n" {
		t.Errorf("a .py file runs under the default python: %q %q", out, errOut)
	}
	if out, errOut, code := d.Ctl("", "run", "--lang", "python3.11", script); code != 0 || out != "(3, 11) /workspace/which.py\n" {
		t.Errorf("--lang python3.11: %q %q", out, errOut)
	}
	waitFor(t, "python3.11's warm runtime", func() bool {
		res, err := c.Run(context.Background(), api.RunRequest{Language: "python3.11", Code: "import sys; print(sys.version_info.minor)"})
		return err == nil && res.Warm && res.Stdout == "11\n"
	})

	id := newSession(t, c, api.SessionRequest{Language: "python3.11"})
	if res := cell(t, c, id, "main", "import sys, pandas\nx = 41\nsys.version_info.minor", 0); plain(res) != "11" {
		t.Fatalf("a python3.11 context: %q %q", plain(res), res.Stderr)
	}
	if res := cell(t, c, id, "main", "x + 1", 0); plain(res) != "42" {
		t.Errorf("the context's state: %q %q", plain(res), res.Stderr)
	}
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"sh", "-c", "python3 -m pytest --version && git --version"}})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout+res.Stderr, "pytest") {
		t.Errorf("python3.11's tools: %v %+v", err, res)
	}
}

// TestCurrentToolchains runs, in each shipped language, a program written
// with what its toolchain's current release brought (Debian 13's, the
// newest Go, Node.js 24 LTS): code written this year builds and runs as
// written.
func TestCurrentToolchains(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/python:latest", "sandboxd/node:latest", "sandboxd/go:latest", "sandboxd/go124:latest",
		"sandboxd/java:latest", "sandboxd/ruby:latest", "sandboxd/php:latest", "sandboxd/c:latest", "sandboxd/rust:latest")
	d := testutil.StartDaemon(t, testutil.Options{Languages: shippedLanguages(t), Defaults: `timeout = "60s"`})
	c := d.Client()
	// Go 1.22's range over int, 1.21's min and slices, 1.23's iterators.
	modernGo := "package main\n\nimport (\n\t\"fmt\"\n\t\"maps\"\n\t\"slices\"\n)\n\nfunc main() {\n\ts := 0\n\tfor i := range 4 {\n\t\ts += i\n\t}\n\tfmt.Println(s, min(3, 1), slices.Sorted(maps.Keys(map[string]int{\"b\": 1, \"a\": 2})))\n}\n"
	for _, tc := range []struct{ lang, code, want string }{
		// 3.12's type parameter syntax, 3.13's copy.replace.
		{"python", "import copy, dataclasses, sys\n@dataclasses.dataclass\nclass P:\n    x: int\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\nprint(sys.version_info[:2] >= (3, 13), copy.replace(P(1), x=first([2, 3])))", "True P(x=2)\n"},
		// Node 20's toSorted, 21's Object.groupBy, 22's Promise.withResolvers.
		{"node", "console.log([3, 1, 2].toSorted().join(','), Object.keys(Object.groupBy([1, 2], x => x % 2 ? 'odd' : 'even')).join(','), typeof Promise.withResolvers)", "1,2,3 odd,even function\n"},
		// TypeScript 4.9's satisfies, 5.0's const type parameters.
		{"typescript", "const c = { r: 1 } satisfies Record<string, number>;\nfunction f<const T extends readonly unknown[]>(x: T): T { return x; }\nconsole.log(c.r, f(['a', 'b'] as const).length);", "1 2\n"},
		{"go", modernGo, "6 1 [a b]\n"},
		{"go1.24", modernGo, "6 1 [a b]\n"},
		// Java 21's record patterns and pattern matching for switch.
		{"java", "public class Main {\n  record Point(int x, int y) {}\n  static String show(Object o) {\n    return switch (o) {\n      case Point(int x, int y) when x == y -> \"diagonal \" + x;\n      case Point(int x, int y) -> x + \",\" + y;\n      default -> \"other\";\n    };\n  }\n  public static void main(String[] a) { System.out.println(show(new Point(2, 2)) + \" \" + show(new Point(1, 2))); }\n}\n", "diagonal 2 1,2\n"},
		// Ruby 3.2's Data, 3.1's anonymous block and hash shorthand.
		{"ruby", "P = Data.define(:x, :y)\nx = 1\ny = 2\np P.new(x:, y:)", "#<data P x=1, y=2>\n"},
		// PHP 8.4's array_find and property hooks.
		{"php", "<?php\nclass C { public string $name { set => strtoupper($value); } }\n$c = new C; $c->name = 'ok';\necho array_find([1, 5, 9], fn($v) => $v > 3), ' ', $c->name, \"\\n\";", "5 OK\n"},
		// C++20's <format> (GCC 13 on) and ranges.
		{"cpp", "#include <format>\n#include <iostream>\n#include <ranges>\n#include <vector>\nint main() {\n  std::vector<int> v{1, 2, 3, 4};\n  auto even = v | std::views::filter([](int x) { return x % 2 == 0; });\n  std::cout << std::format(\"{} {}\", std::ranges::distance(even), 42) << std::endl;\n}\n", "2 42\n"},
		// Rust 1.65's let-else, 1.80's LazyLock, the 2021 edition's closures.
		{"rust", "use std::sync::LazyLock;\nstatic N: LazyLock<u32> = LazyLock::new(|| 41);\nfn main() {\n    let Some(x) = Some(*N + 1) else { return };\n    println!(\"{x}\");\n}\n", "42\n"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			t.Parallel()
			res := run(t, c, api.RunRequest{Language: tc.lang, Code: tc.code})
			if res.ExitCode != 0 || res.Stdout != tc.want {
				t.Errorf("exit %d stage %q stdout %q stderr %q, want %q", res.ExitCode, res.Stage, res.Stdout, res.Stderr, tc.want)
			}
		})
	}
	// The go languages' warm build takes the path baked into their images
	// (plugins/lang/internal/bashwarm/gobuild.sh), which links without
	// DWARF; a go build it fell back to (the baked settings no longer the
	// go command's) links with it.
	baked := "package main\n\nimport (\n\t\"debug/elf\"\n\t\"fmt\"\n)\n\nfunc main() {\n\tf, err := elf.Open(\"/proc/self/exe\")\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tif f.Section(\".debug_info\") == nil {\n\t\tfmt.Println(\"baked\")\n\t} else {\n\t\tfmt.Println(\"go build\")\n\t}\n}\n"
	for _, lang := range []string{"go", "go1.24"} {
		waitForWithin(t, lang+"'s warm build on its baked path", time.Minute, func() bool {
			res, err := c.Run(context.Background(), api.RunRequest{Language: lang, Code: baked})
			return err == nil && res.Warm && res.Stdout == "baked\n"
		})
	}
}
