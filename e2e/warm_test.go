package e2e

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// warmAndCold is python, node, typescript, java and ruby as shipped (warm
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
}`

// address is an object's address in what a runtime prints.
var address = regexp.MustCompile(`0x[0-9a-f]{6,}`)

// TestWarmMatchesCold runs programs that look hard at how they were
// started, once by a warm runtime and once started cold: what they print,
// their exit codes and signals must be the same.
func TestWarmMatchesCold(t *testing.T) {
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
	cold := map[string]string{"python": "pycold", "node": "nodecold", "typescript": "tscold", "java": "javacold", "ruby": "rubycold"}
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
				return address.ReplaceAllString(out, "0x…") // where an object is differs from run to run
			}
			if w, c := got(warmRes), got(coldRes); w != c {
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
