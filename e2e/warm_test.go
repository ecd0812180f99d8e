package e2e

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// warmAndCold is python, node, typescript, java, ruby, php, go, c, cpp and
// rust as shipped (warm
// runtimes on) and the same plugins with warm = false.
const warmAndCold = `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 2
  }
}
language "pycold" {
  plugin = "python"
  image  = "sandboxd/python:latest"
  warm   = false
  pool {
    min_idle = 2
  }
}
language "python3.11" {
  plugin = "python"
  image  = "sandboxd/python311:latest"
  pool {
    min_idle = 1
  }
}
language "py311cold" {
  plugin = "python"
  image  = "sandboxd/python311:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 1
  }
}
language "nodecold" {
  plugin = "node"
  image  = "sandboxd/node:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "typescript" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 1
  }
}
language "tscold" {
  plugin = "typescript"
  image  = "sandboxd/node:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "java" {
  image = "sandboxd/java:latest"
  pool {
    min_idle = 1
  }
  limits {
    memory = "1GiB"
    pids   = 256
  }
}
language "javacold" {
  plugin = "java"
  image  = "sandboxd/java:latest"
  warm   = false
  pool {
    min_idle = 1
  }
  limits {
    memory = "1GiB"
    pids   = 256
  }
}
language "ruby" {
  image = "sandboxd/ruby:latest"
  pool {
    min_idle = 1
  }
}
language "rubycold" {
  plugin = "ruby"
  image  = "sandboxd/ruby:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "php" {
  image = "sandboxd/php:latest"
  pool {
    min_idle = 1
  }
}
language "phpcold" {
  plugin = "php"
  image  = "sandboxd/php:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "go" {
  image = "sandboxd/go:latest"
  pool {
    min_idle = 1
  }
}
language "gocold" {
  plugin = "go"
  image  = "sandboxd/go:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "c" {
  image = "sandboxd/c:latest"
  pool {
    min_idle = 1
  }
}
language "ccold" {
  plugin = "c"
  image  = "sandboxd/c:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "cpp" {
  image = "sandboxd/c:latest"
  pool {
    min_idle = 1
  }
}
language "cppcold" {
  plugin = "cpp"
  image  = "sandboxd/c:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "rust" {
  image = "sandboxd/rust:latest"
  pool {
    min_idle = 1
  }
}
language "rustcold" {
  plugin = "rust"
  image  = "sandboxd/rust:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}
language "csharp" {
  image = "sandboxd/csharp:latest"
  pool {
    min_idle = 1
  }
}
language "cscold" {
  plugin = "csharp"
  image  = "sandboxd/csharp:latest"
  warm   = false
  pool {
    min_idle = 1
  }
}`

// address is an object's address in what a runtime prints; tempObject is
// a C compiler's temporary object file, named in a linker's errors.
var (
	address    = regexp.MustCompile(`0x[0-9a-f]{6,}`)
	tempObject = regexp.MustCompile(`/tmp/cc[0-9A-Za-z]{6}\.o`)
)

// TestWarmMatchesCold runs programs that look hard at how they were
// started, once by a warm runtime and once started cold: what they print,
// their exit codes and signals must be the same.
func TestWarmMatchesCold(t *testing.T) {
	testutil.RequireDocker(t, "sandboxd/python311:latest")
	d := testutil.StartDaemon(t, testutil.Options{Languages: warmAndCold, Defaults: `timeout = "20s"`})
	c := d.Client()
	type program struct {
		name string
		req  api.RunRequest
		warm bool // a warm runtime can run it
	}
	py := func(name, code string) program {
		return program{name, api.RunRequest{Language: "python", Code: code}, true}
	}
	js := func(name, code string) program {
		return program{name, api.RunRequest{Language: "node", Code: code}, true}
	}
	ts := func(name, code string) program {
		return program{name, api.RunRequest{Language: "typescript", Code: code}, true}
	}
	pyFingerprint := `import sys, os, __main__
print(sys.argv, sys.orig_argv, __file__, __name__, __main__.__file__, sys.path, os.getcwd())
print(sorted(globals()), __loader__.name, __loader__.path, __spec__, __cached__, __doc__, __package__)
print(len(sys.modules), sorted(sys.modules), "sitecustomize" in sys.modules)
print(sorted((k, v) for k, v in os.environ.items() if k != "HOSTNAME"))
print(os.fstat(0).st_mode, os.isatty(0), sys.stdin.read(), sys.flags, sys.dont_write_bytecode, sys.path_importer_cache.keys())
print(sys.stdout.line_buffering, sys.stdout.encoding, sys.stderr.errors, sys.getfilesystemencoding())
print(os.getpgrp() == os.getpid(), os.getppid(), os.nice(0), open("/proc/self/oom_score_adj").read().strip())
`
	programs := []program{
		py("fingerprint", pyFingerprint),
		{"fingerprint with args and stdin", api.RunRequest{Language: "python", Code: pyFingerprint, Args: []string{"x", "--flag", "", "ü"}, Stdin: "line 1\nline 2\n"}, true},
		py("sys.exit", "import sys\nprint('out')\nsys.exit(3)"),
		py("exit with a message", "exit('bye')"),
		py("traceback", "def f():\n    raise ValueError('no')\nprint('before', flush=True)\nf()"),
		py("syntax error", "x = (1,\nprint(x)"),
		py("KeyboardInterrupt", "raise KeyboardInterrupt"),
		py("os._exit", "import os\nprint('lost?')\nos._exit(7)"),
		py("killed by a signal", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)"),
		py("warnings, atexit, threads", `import atexit, threading, time, warnings
warnings.warn("careful")
atexit.register(lambda: print("atexit ran"))
threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
print("main done")`),
		py("pickle a class of __main__", "import pickle\nclass P: pass\nprint(type(pickle.loads(pickle.dumps(P()))).__module__)"),
		py("interleaved output", "import sys\nfor i in range(50):\n    print(i, file=sys.stdout if i % 2 else sys.stderr)"),
		{"a request's environment", api.RunRequest{Language: "python", Code: "import os\nprint(os.environ['FOO'], 'PYTHONPATH' in os.environ)", Env: map[string]string{"FOO": "bar"}}, false},
		{"an entry of another name", api.RunRequest{Language: "python", Files: []api.File{{Path: "tool.py", Content: "import sys\nprint(__file__, sys.argv)"}}}, false},
		js("fingerprint", `const fs = require("fs");
console.log(process.argv.slice(1), process.argv0, process.execArgv, __filename, __dirname, require.main === module, process.cwd());
console.log(Object.keys(require.cache), module.paths, module.id, module.parent, process.title);
console.log(Object.entries(process.env).filter(([k]) => k !== "HOSTNAME").sort());
console.log(JSON.stringify(fs.readFileSync(0, "utf8")), fs.fstatSync(0).isFIFO(), process.stdin.isTTY);`),
		js("throw", "function f() { throw new Error('no') }\nconsole.log('before');\nf();"),
		js("process.exit", "console.log('out'); process.exit(4)"),
		js("syntax error", "let x = (1,\nconsole.log(x)"),
		js("killed by a signal", "process.kill(process.pid, 'SIGTERM')"),
		js("unhandled rejection", "Promise.reject(new Error('later'))"),
		{"node with a request's environment", api.RunRequest{Language: "node", Code: "console.log(process.env.FOO, process.env.NODE_OPTIONS)", Env: map[string]string{"FOO": "bar"}}, false},
		ts("typescript fingerprint", `const n: number = 42;
console.log(n, process.argv.slice(1), __filename, require.main === module, process.cwd(), Object.keys(require.cache), process.execArgv);
console.log(Object.entries(process.env).filter(([k]) => k !== "HOSTNAME").sort());`),
		ts("a type stripped, a throw", "function f(x: number): never { throw new Error('no ' + x) }\nf(1);"),
		ts("a syntax error", "let x: number = ;\nconsole.log(x)"),
		{"typescript with args", api.RunRequest{Language: "typescript", Code: "console.log(process.argv.slice(2))", Args: []string{"a", ""}}, true},
	}
	javaProgram := func(name, code string) program {
		return program{name, api.RunRequest{Language: "java", Code: code, Args: []string{"x"}}, true}
	}
	programs = append(programs,
		javaProgram("java", "import java.util.*;\npublic class Hello { public static void main(String[] a) { System.out.println(List.of(a) + \" \" + System.getProperty(\"user.dir\")); } }"),
		javaProgram("java compile errors", "public class Broken {\n  public static void main(String[] a) { int x = \"s\"; undefined(); }\n}"),
		javaProgram("java unchecked warning", "import java.util.*;\npublic class Raw { public static void main(String[] a) { List l = new ArrayList(); l.add(1); System.out.println(l); } }"),
		javaProgram("java throws", "public class Boom { public static void main(String[] a) { throw new IllegalStateException(\"no\"); } }"),
		program{"java file named otherwise", api.RunRequest{Language: "java", Files: []api.File{{Path: "test.java", Content: "public class HelloWorld { public static void main(String[] a) { System.out.println(\"OK\"); } }"}}}, true},
	)
	rb := func(name, code string) program {
		return program{name, api.RunRequest{Language: "ruby", Code: code, Args: []string{"x", ""}, Stdin: "in\\n"}, true}
	}
	programs = append(programs,
		rb("ruby fingerprint", `p [__FILE__, $0, $PROGRAM_NAME, __dir__, ARGV, Dir.pwd, $stdin.read, __method__, self.to_s, $LOADED_FEATURES.size]
p [ENV.to_h.reject { |k, _| k == "HOSTNAME" }.sort, Encoding.default_external, Encoding.default_internal, $VERBOSE, $DEBUG, defined?(DATA)]
p [Process.getpgrp == Process.pid, Process.ppid, Object.private_methods.sort - Object.new.private_methods, local_variables, global_variables.sort]
p [$stdout.sync, $stderr.sync, $stdout.tty?, $PROGRAM_NAME.frozen?, Gem.loaded_specs.keys.sort]`),
		rb("ruby raise", "def f\n  raise ArgumentError, 'no'\nend\nputs 'before'\n$stdout.flush\nf"),
		rb("ruby syntax error", "puts(1\nx = "),
		rb("ruby exit codes and at_exit", "at_exit { puts 'at_exit ran' }\nputs 'out'\nexit 3"),
		rb("ruby exit!", "puts 'lost?'\n$stdout.flush\nexit! 7"),
		rb("ruby abort", "abort 'bye'"),
		rb("ruby killed by a signal", "Process.kill('TERM', Process.pid)\nsleep 1"),
		rb("ruby Interrupt", "raise Interrupt"),
		rb("ruby BEGIN, DATA, return", "BEGIN { puts 'begin' }\nputs DATA.read\nreturn\nputs 'not here'\n__END__\ndata 1\ndata 2\n"),
		rb("ruby magic comments", "# frozen_string_literal: true\n# encoding: ascii-8bit\ns = 'x'\np [s.frozen?, s.encoding, __ENCODING__]"),
		rb("ruby threads and warnings", "warn 'careful'\nt = Thread.new { sleep 0.2; puts 'thread done' }\nputs 'main done'\nt.join\nThread.new { raise 'in a thread' }.join"),
		program{"ruby with a request's environment", api.RunRequest{Language: "ruby", Code: "puts ENV['FOO']", Env: map[string]string{"FOO": "bar"}}, false},
		program{"ruby entry of another name", api.RunRequest{Language: "ruby", Files: []api.File{{Path: "tool.rb", Content: "p [__FILE__, ARGV]"}}}, false},
	)
	php := func(name, code string) program {
		return program{name, api.RunRequest{Language: "php", Code: code, Stdin: "in\\n"}, true}
	}
	programs = append(programs,
		php("php fingerprint", `<?php
var_dump(__FILE__, __DIR__, __LINE__, $argv, $argc, getcwd(), get_included_files(), php_sapi_name(), stream_get_contents(STDIN));
$s = $_SERVER; unset($s['HOSTNAME'], $s['REQUEST_TIME'], $s['REQUEST_TIME_FLOAT']); ksort($s);
$e = getenv(); unset($e['HOSTNAME']); ksort($e);
var_dump($s, $e, $_ENV, array_keys(get_defined_vars()), debug_backtrace(), scandir('/proc/self/fd'));
var_dump(time() - $_SERVER['REQUEST_TIME'] <= 1, abs(microtime(true) - $_SERVER['REQUEST_TIME_FLOAT']) < 1);
var_dump(str_replace("\0", " ", file_get_contents('/proc/self/cmdline')), posix_getpgrp() === getmypid(), posix_getppid(), file_get_contents('/proc/self/oom_score_adj'));
var_dump(get_loaded_extensions(), ini_get_all(null, false), count(get_declared_classes()), count(get_defined_functions()['internal']), get_defined_constants(true)['user'] ?? null);
var_dump(shell_exec('env | grep -c -e LD_PRELOAD -e SANDBOXD_ || true'));`),
		php("php uncaught exception", "<?php\nfunction f() {\n  throw new RuntimeException('no');\n}\necho \"before\\n\";\nf();\n"),
		php("php parse error", "<?php\necho 1\n$x = ;\n"),
		php("php fatal error", "<?php\necho \"a\\n\";\nundefined_function();\n"),
		php("php warnings", "<?php\necho $undefined;\ntrigger_error('custom', E_USER_WARNING);\nfwrite(STDERR, \"err\\n\");\necho \"after\\n\";\n"),
		php("php exit codes and shutdown", "<?php\nregister_shutdown_function(function () { echo \"shutdown\\n\"; });\necho \"out\\n\";\nexit(3);\n"),
		php("php exit with a message", "<?php\nexit(\"bye\\n\");\n"),
		php("php killed by a signal", "<?php\nposix_kill(getmypid(), SIGTERM);\nsleep(1);\n"),
		php("php reads its own source", "#!/usr/bin/env php\n<?php\necho file_get_contents(__FILE__, false, null, __COMPILER_HALT_OFFSET__);\nvar_dump(filetype(__FILE__), filesize(__FILE__));\n__halt_compiler();data 1\ndata 2\n"),
		php("php forks", "<?php\n$p = pcntl_fork();\nif ($p === 0) { echo \"child\\n\"; exit(4); }\npcntl_waitpid($p, $status);\necho 'parent ', pcntl_wexitstatus($status), \"\\n\";\n"),
		program{"php runs past its deadline", api.RunRequest{Language: "php", Code: "<?php\necho \"spinning\\n\";\nwhile (true) {}\n", Timeout: api.Duration(time.Second)}, true},
		program{"php with arguments", api.RunRequest{Language: "php", Code: "<?php var_dump($argv);", Args: []string{"x", ""}}, false},
		program{"php with a request's environment", api.RunRequest{Language: "php", Code: "<?php echo getenv('FOO');", Env: map[string]string{"FOO": "bar"}}, false},
		program{"php entry of another name", api.RunRequest{Language: "php", Files: []api.File{{Path: "tool.php", Content: "<?php var_dump(__FILE__);"}}}, false},
	)
	goFiles := func(name string, files ...string) program {
		req := api.RunRequest{Language: "go", Args: []string{"x"}, Entry: "main.go"}
		for i := 0; i < len(files); i += 2 {
			req.Files = append(req.Files, api.File{Path: files[i], Content: files[i+1]})
		}
		return program{name, req, true}
	}
	goMain := func(name, code string) program { return goFiles(name, "main.go", code) }
	programs = append(programs,
		goMain("go fingerprint", `package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
)

func main() {
	info, ok := debug.ReadBuildInfo()
	fmt.Println(ok, info)
	_, file, line, _ := runtime.Caller(0)
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	fmt.Println(os.Args, runtime.GOROOT(), runtime.Version(), runtime.Compiler, file, line, exe, wd)
}
`),
		goMain("go memory bomb", "package main\n\nfunc main() {\n\tvar held [][]byte\n\tfor {\n\t\tb := make([]byte, 64<<20)\n\t\tfor i := range b {\n\t\t\tb[i] = 1\n\t\t}\n\t\theld = append(held, b)\n\t}\n}\n"),
		goMain("go panic", "package main\n\nfunc main() {\n\tvar m map[string]int\n\tm[\"a\"] = 1\n}\n"),
		goMain("go exit code", "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Fprintln(os.Stderr, \"bad\")\n\tos.Exit(3)\n}\n"),
		goMain("go compile errors", "package main\n\nimport \"os\"\n\nfunc main() {\n\tx := 1\n\tfmt.Println(y)\n}\n"),
		goMain("go syntax error", "package main\n\nfunc main() {\n\tfor {\n}\n"),
		goMain("go import outside std", "package main\n\nimport \"github.com/example/nothere\"\n\nfunc main() { nothere.Do() }\n"),
		goMain("go cgo", "package main\n\nimport \"C\"\n\nfunc main() {}\n"),
		goMain("go not main", "package lib\n\nfunc F() {}\n"),
		goFiles("go two files", "main.go", "package main\n\nfunc main() { hello() }\n", "util.go", "package main\n\nimport \"fmt\"\n\nfunc hello() { fmt.Println(\"hello from util\") }\n"),
		goFiles("go build constraints", "main.go", "package main\n\nfunc main() { hello() }\n",
			"gen.go", "//go:build ignore\n\npackage main\n\nimport \"fmt\"\n\nfunc hello() { fmt.Println(\"ignored?\") }\n",
			"os_windows.go", "package main\n\nfunc hello() {}\n"),
		goFiles("go embed", "main.go", "package main\n\nimport (\n\t_ \"embed\"\n\t\"fmt\"\n)\n\n//go:embed hello.txt\nvar s string\n\nfunc main() { fmt.Print(s) }\n", "hello.txt", "embedded\n"),
		goFiles("go test file", "main.go", "package main\n\nfunc main() {}\n", "main_test.go", "package main\n"),
		goFiles("go subdirectory", "main.go", "package main\n\nfunc main() {}\n", "sub/x.go", "package sub\n"),
		program{"go with a request's environment", api.RunRequest{Language: "go", Code: "package main\n\nfunc main() {}\n", Env: map[string]string{"GOFLAGS": "-ldflags=-X=main.x=1"}}, false},
	)
	compiled := func(lang, name, code string) program {
		return program{name, api.RunRequest{Language: lang, Code: code}, true}
	}
	programs = append(programs,
		compiled("c", "c hello", "#include <stdio.h>\n\nint main(void) {\n\tputs(\"hello\");\n\treturn 3;\n}\n"),
		compiled("c", "c warning", "int main(void) {\n\tputs(\"implicitly declared\");\n}\n"),
		compiled("c", "c compile error", "int main(void) {\n\treturn x\n}\n"),
		compiled("c", "c link error", "void missing(void);\n\nint main(void) {\n\tmissing();\n}\n"),
		compiled("c", "c math", "#include <math.h>\n#include <stdio.h>\n\nint main(void) {\n\tvolatile double x = 2;\n\tprintf(\"%.3f\\n\", sqrt(x));\n}\n"),
		compiled("cpp", "cpp hello", "#include <iostream>\n\nint main() {\n\tstd::cout << \"hello\" << std::endl;\n}\n"),
		compiled("cpp", "cpp exception", "#include <bits/stdc++.h>\n\nint main() {\n\tstd::vector<int> v;\n\treturn v.at(3);\n}\n"),
		compiled("cpp", "cpp compile error", "#include <string>\n\nint main() {\n\tstd::string s = 1;\n}\n"),
		compiled("cpp", "cpp link error", "struct S { static int n; };\n\nint main() {\n\treturn S::n;\n}\n"),
		compiled("rust", "rust hello", "fn main() {\n    let unused = 1;\n    println!(\"hello\");\n    std::process::exit(3);\n}\n"),
		compiled("rust", "rust panic", "fn main() {\n    let v: Vec<i32> = Vec::new();\n    println!(\"{}\", v[3]);\n}\n"),
		compiled("rust", "rust compile error", "fn main() {\n    let x: i32 = \"no\";\n}\n"),
		compiled("csharp", "csharp hello with a warning", "using System;\nclass P {\n  static int Main(string[] a) {\n    int unused;\n    Console.WriteLine(\"hello ✓ \" + a.Length + \" \" + Environment.CommandLine);\n    return 3;\n  }\n}\n"),
		compiled("csharp", "csharp compile errors", "class P {\n  static void Main() {\n    int x = \"no\";\n    y();\n  }\n}\n"),
		compiled("csharp", "csharp exception", "class P {\n  static void Main() {\n    object o = null;\n    o.ToString();\n  }\n}\n"),
		program{"csharp with files and args", api.RunRequest{Language: "csharp", Entry: "App.cs", Args: []string{"x", "ü"}, Files: []api.File{
			{Path: "App.cs", Content: "class App { static void Main(string[] a) { System.Console.WriteLine(Util.Join(a)); } }"},
			{Path: "Util.cs", Content: "static class Util { public static string Join(string[] a) { return string.Join(\"|\", a); } }"},
		}}, true},
	)
	// Python 3.13 (a second version, its own image) as python 3.11.
	for _, p := range programs {
		if p.req.Language == "python" && p.warm {
			p.name, p.req.Language = "3.11 "+p.name, "python3.11"
			programs = append(programs, p)
		}
	}
	cold := map[string]string{"python": "pycold", "python3.11": "py311cold", "node": "nodecold", "typescript": "tscold", "java": "javacold", "ruby": "rubycold", "php": "phpcold", "go": "gocold", "c": "ccold", "cpp": "cppcold", "rust": "rustcold", "csharp": "cscold"}
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			warmRes := run(t, c, p.req)
			p.req.Language = cold[p.req.Language]
			coldRes := run(t, c, p.req)
			if warmRes.Warm != p.warm || coldRes.Warm {
				t.Errorf("warm %v (want %v), cold %v", warmRes.Warm, p.warm, coldRes.Warm)
			}
			got := func(r *api.RunResult) string {
				out := fmt.Sprintf("exit %d signal %q timed out %v\n--- stdout\n%s\n--- stderr\n%s", r.ExitCode, r.Signal, r.TimedOut, r.Stdout, r.Stderr)
				out = tempObject.ReplaceAllString(out, "/tmp/cc….o")
				return address.ReplaceAllString(out, "0x…") // where an object is differs from run to run
			}
			if w, c := got(warmRes), got(coldRes); w != c {
				t.Errorf("warm and cold differ:\n=== warm\n%s\n=== cold\n%s", w, c)
			}
		})
	}

	// A script of another name runs cold once; the pool's runtimes are
	// then started for its name, and a run they take shows what a cold run
	// of it shows.
	renamed := []api.RunRequest{
		{Language: "python", Files: []api.File{{Path: "analysis.py", Content: pyFingerprint}}, Args: []string{"x"}},
		{Language: "node", Files: []api.File{{Path: "quiz.js", Content: "console.log(process.argv.slice(1), __filename, require.main === module);\nthrow new Error('no')"}}},
		{Language: "typescript", Files: []api.File{{Path: "quiz.ts", Content: "const n: number = 1;\nconsole.log(n, process.argv.slice(1), __filename)"}}},
		{Language: "ruby", Files: []api.File{{Path: "tool.rb", Content: "p [__FILE__, $0, ARGV]\nraise 'no'"}}, Args: []string{"a"}},
	}
	for _, req := range renamed {
		t.Run("renamed "+req.Files[0].Path, func(t *testing.T) {
			var warmRes *api.RunResult
			for range 10 {
				if res := run(t, c, req); res.Warm {
					warmRes = res
					break
				}
				time.Sleep(300 * time.Millisecond) // room for a container to be recycled and warmed for the name
			}
			if warmRes == nil {
				t.Fatalf("no run of %s ran warm", req.Files[0].Path)
			}
			req.Language = cold[req.Language]
			coldRes := run(t, c, req)
			out := func(r *api.RunResult) string {
				return address.ReplaceAllString(fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s", r.ExitCode, r.Stdout, r.Stderr), "0x…")
			}
			if w, c := out(warmRes), out(coldRes); w != c {
				t.Errorf("warm and cold differ:\n=== warm\n%s\n=== cold\n%s", w, c)
			}
		})
	}

	// In a session each program gets a fresh runtime, started while the
	// last result is read: nothing carries over.
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	warmExecs := 0
	for i := range 6 {
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: fmt.Sprintf("print(globals().get('x'))\nx = %d", i)})
		if err != nil || res.Stdout != "None\n" || res.ExitCode != 0 {
			t.Fatalf("exec %d: %v %+v", i, err, res)
		}
		if res.Warm {
			warmExecs++
		}
	}
	if warmExecs == 0 {
		t.Errorf("no session exec ran warm")
	}
	// php's runtime opens its script only when the run arrives: each exec
	// of a session runs the program it sent, never the last one.
	id = newSession(t, c, api.SessionRequest{Language: "php"})
	warmExecs = 0
	for i := range 4 {
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: fmt.Sprintf("<?php echo %d, ' ', filetype(__FILE__);", i)})
		if want := fmt.Sprintf("%d file", i); err != nil || res.Stdout != want || res.ExitCode != 0 {
			t.Fatalf("php exec %d: %v %+v (want %q)", i, err, res, want)
		}
		if res.Warm {
			warmExecs++
		}
		time.Sleep(100 * time.Millisecond) // room for the next runtime to start
	}
	if warmExecs == 0 {
		t.Errorf("no php session exec ran warm")
	}
	// A session with an environment of its own: its first program misses
	// the pool's runtime (started for none), the next ones have theirs.
	id = newSession(t, c, api.SessionRequest{Language: "python", Env: map[string]string{"STAGE": "test"}})
	warmExecs = 0
	for i := range 6 {
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: "import os\nprint(os.environ['STAGE'], 'PYTHONPATH' in os.environ)"})
		if err != nil || res.Stdout != "test False\n" {
			t.Fatalf("exec %d: %v %+v", i, err, res)
		}
		if res.Warm {
			warmExecs++
		}
		time.Sleep(100 * time.Millisecond) // room for the next runtime to start
	}
	if warmExecs == 0 {
		t.Errorf("no exec of a session with an environment ran warm")
	}
	pools, err := c.Pools(ctx(t))
	if err != nil || !pools["python"].Warm || pools["python"].WarmHits == 0 || pools["pycold"].Warm || pools["pycold"].WarmHits != 0 {
		t.Errorf("pools: %+v %v", pools, err)
	}
}
