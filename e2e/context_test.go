package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// cell runs code in a session's context.
func cell(t *testing.T, c *client.Client, id, name, code string, timeout time.Duration) *api.RunResult {
	t.Helper()
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Context: name, Code: code, Timeout: api.Duration(timeout)})
	if err != nil {
		t.Fatalf("cell %q: %v", code, err)
	}
	return res
}

// plain is the final value's text.
func plain(res *api.RunResult) string {
	for _, d := range res.Display {
		if d.MIME == "text/plain" && d.Main {
			return d.Data
		}
	}
	return ""
}

func mimes(res *api.RunResult) string {
	var m []string
	for _, d := range res.Display {
		m = append(m, d.MIME)
	}
	return strings.Join(m, ",")
}

// TestContexts: a session's long-lived interpreters keep their state from
// exec to exec, show final values, and are restarted (saying so) when a
// deadline, a crash or memory ends them.
func TestContexts(t *testing.T) {
	// A minute per cell: a kernel's start and pandas' import took over
	// 10 s beside the other e2e tests on a 2-core machine.
	d := testutil.StartDaemon(t, testutil.Options{Defaults: `timeout = "1m"`, Languages: testutil.DefaultLanguages + `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 0
    max      = 2
  }
}
language "typescript" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 0
    max      = 1
  }
}
language "r" {
  image = "sandboxd/code-interpreter:latest"
  pool {
    min_idle = 0
    max      = 1
  }
}
language "java" {
  image = "sandboxd/java:latest"
  pool {
    min_idle = 0
    max      = 1
  }
}
language "code-interpreter" {
  plugin   = "python"
  image    = "sandboxd/code-interpreter:latest"
  contexts = ["js", "typescript", "r", "java", "bash"]
  pool {
    min_idle = 0
    max      = 1
  }
}`})
	c := d.Client()

	t.Run("python", func(t *testing.T) {
		t.Parallel()
		id := newSession(t, c, api.SessionRequest{Language: "python", Limits: &api.Limits{Memory: 256 << 20}})
		res := cell(t, c, id, "main", "import pandas as pd\nf = open('notes.txt', 'w')\nx = 21\nprint('hello')\nx * 2", 0)
		if res.ExitCode != 0 || res.Stdout != "hello\n" || plain(res) != "42" || res.Context == nil || !res.Context.Started {
			t.Fatalf("first cell: %+v", res)
		}
		res = cell(t, c, id, "main", "x += 1\nf.write('kept open'); f.flush()\ndf = pd.DataFrame({'a': [1, 2]})\ndf", 0)
		if plain(res) == "" || !strings.Contains(mimes(res), "text/html") || res.Context.Started {
			t.Errorf("a DataFrame: %s %+v", mimes(res), res.Context)
		}
		if res := cell(t, c, id, "main", "x, open('notes.txt').read()", 0); plain(res) != "(22, 'kept open')" {
			t.Errorf("state kept: %q %q", plain(res), res.Stderr)
		}
		// A cell's env is its own, and what it starts has it too.
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Context: "main", Code: "import os, subprocess\nos.environ['HOME'], subprocess.run(['sh', '-c', 'echo $HOME'], capture_output=True, text=True).stdout",
			Env: map[string]string{"HOME": "/cell"}})
		if err != nil || plain(res) != "('/cell', '/cell\\n')" {
			t.Errorf("a cell's env: %v %q %q", err, plain(res), res.Stderr)
		}
		if res := cell(t, c, id, "main", "os.environ['HOME'] != '/cell'", 0); plain(res) != "True" {
			t.Errorf("the next cell's env: %q", plain(res))
		}
		// IPython's shell escapes, as agents write them: the output
		// goes to the cell's, {name} and $name are the cell's variables,
		// x = !cmd captures the lines.
		res = cell(t, c, id, "main", "n = 'sh'\n!echo from {n} $n; echo err >&2\nlines = !printf 'a\\nb\\n'\nfor i in range(2):\n    !echo {i}\nlines", 0)
		if res.Stdout != "from sh sh\n0\n1\n" || res.Stderr != "err\n" || plain(res) != "['a', 'b']" {
			t.Errorf("shell escapes: %q %q %q", res.Stdout, res.Stderr, plain(res))
		}
		if res := cell(t, c, id, "main", "%cd /tmp\nimport os\nos.getcwd()", 0); plain(res) != "'/tmp'" || res.Stdout != "/tmp\n" {
			t.Errorf("%%cd: %q %q %q", res.Stdout, res.Stderr, plain(res))
		}
		if res := cell(t, c, id, "main", "%cd /workspace\ns = '''\n!not a command\n'''\ns", 0); plain(res) != `'\n!not a command\n'` {
			t.Errorf("a string's line that starts with !: %q %q", plain(res), res.Stderr)
		}
		// Another context is another namespace.
		if res := cell(t, c, id, "other", "'x' in globals()", 0); plain(res) != "False" || !res.Context.Started {
			t.Errorf("a second context: %q", plain(res))
		}
		res = cell(t, c, id, "main", "def f():\n    return 1/0\nf()", 0)
		if res.ExitCode != 1 || !strings.Contains(res.Stderr, `File "<main cell 9>", line 2, in f`) || !strings.Contains(res.Stderr, "ZeroDivisionError") ||
			strings.Contains(res.Stderr, "kernel") {
			t.Errorf("an exception: exit %d %q", res.ExitCode, res.Stderr)
		}
		if res := cell(t, c, id, "main", "import sys; sys.exit(3)", 0); res.ExitCode != 3 || res.Context.Lost != "" {
			t.Errorf("sys.exit: %d %+v", res.ExitCode, res.Context)
		}
		if res := cell(t, c, id, "main", "x", 0); plain(res) != "22" {
			t.Errorf("after sys.exit the state stays: %q %q", plain(res), res.Stderr)
		}
		// Output is capped as for any exec, and the context goes on.
		res, err = c.Exec(ctx(t), id, api.ExecRequest{Context: "main", Code: "print('y' * 5000000)\nx", Limits: &api.Limits{OutputLimit: 1000}})
		if err != nil || !res.Truncated || len(res.Stdout) != 1000 || res.StdoutBytes != 5000001 || plain(res) != "22" {
			t.Errorf("output cap: %v %d %d %v", err, len(res.Stdout), res.StdoutBytes, res.Truncated)
		}
		list, err := c.Contexts(ctx(t), id)
		if err != nil || len(list.Contexts) != 2 {
			t.Fatalf("contexts: %v %+v", err, list)
		}

		// A deadline ends the interpreter: the result says the state is gone.
		res = cell(t, c, id, "main", "import time\nprint('before', flush=True)\ntime.sleep(30)", time.Second)
		if !res.TimedOut || res.ExitCode != 137 || res.Stdout != "before\n" || !strings.Contains(res.Context.Lost, "killed at the deadline") ||
			res.Usage.CPUUserMS < 0 || res.Usage.CPUSysMS < 0 {
			t.Errorf("deadline: %+v", res)
		}
		res = cell(t, c, id, "main", "'x' in globals()", 0)
		if plain(res) != "False" || !res.Context.Started {
			t.Errorf("after the deadline: %q %+v", plain(res), res.Context)
		}
		// The deadline's kill ends this context's interpreter and what it
		// started, not the other context (TestContextsRunApart).
		if res := cell(t, c, id, "other", "1", 0); res.Context.Started || res.Context.Lost != "" {
			t.Errorf("the other context after the deadline: %+v", res.Context)
		}
		// A crash, and memory.
		if res := cell(t, c, id, "main", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", 0); res.Signal != "SIGSEGV" ||
			!strings.Contains(res.Context.Lost, "ended by SIGSEGV") {
			t.Errorf("crash: %+v", res)
		}
		res = cell(t, c, id, "main", "b = []\nwhile True: b.append(bytearray(1 << 20))", 0)
		if !res.OOMKilled || !strings.Contains(res.Context.Lost, "killed for memory") {
			t.Errorf("memory: %+v", res)
		}
		// Restart and end.
		cell(t, c, id, "main", "y = 1", 0)
		k, err := c.RestartContext(ctx(t), id, "main")
		if err != nil || k.Name != "main" || k.Executions != 1 {
			t.Errorf("restart: %v %+v", err, k)
		}
		if res := cell(t, c, id, "main", "'y' in globals()", 0); plain(res) != "False" {
			t.Errorf("after restart: %q", plain(res))
		}
		if err := c.EndContext(ctx(t), id, "main"); err != nil {
			t.Error(err)
		}
		if err := c.EndContext(ctx(t), id, "main"); apiCode(err) != api.CodeNotFound {
			t.Errorf("ending it twice: %v", err)
		}
		if res := cell(t, c, id, "main", "1", 0); !res.Context.Started || res.Context.Lost != "" {
			t.Errorf("after an end, a fresh start that lost nothing unasked: %+v", res.Context)
		}
		// A reset ends them all, quietly.
		if _, err := c.ResetSession(ctx(t), id); err != nil {
			t.Fatal(err)
		}
		if list, _ := c.Contexts(ctx(t), id); len(list.Contexts) != 0 {
			t.Errorf("contexts after a reset: %+v", list)
		}
	})

	t.Run("figures and outputs", func(t *testing.T) {
		t.Parallel()
		id := newSession(t, c, api.SessionRequest{Language: "python"})
		res := cell(t, c, id, "main", "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.savefig('outputs/plot.png')\nplt.show()\nopen('outputs/data.csv', 'w').write('a,b\\n1,2\\n')", 0)
		if res.ExitCode != 0 || mimes(res) != "image/png,"+api.ChartMIME+",text/plain,text/plain" || res.Stderr != "" {
			t.Errorf("a figure: exit %d, %s, stderr %q", res.ExitCode, mimes(res), res.Stderr)
		}
		// What it charts, as data (E2B's extractor in the image).
		var chart struct {
			Type, Title string
			Elements    []struct{ Points [][2]float64 }
		}
		if len(res.Display) > 1 {
			if err := json.Unmarshal([]byte(res.Display[1].Data), &chart); err != nil || chart.Type != "line" || chart.Title != "t" ||
				len(chart.Elements) != 1 || fmt.Sprint(chart.Elements[0].Points) != "[[0 1] [1 3] [2 2]]" {
				t.Errorf("the chart: %v %s", err, res.Display[1].Data)
			}
		}
		if png := res.Display[0].Data; !strings.HasPrefix(png, "iVBORw0KGgo") || len(png) < 1000 {
			t.Errorf("not a PNG: %.40q", png)
		}
		got := map[string]string{}
		for _, o := range res.Outputs {
			got[o.Path] = o.MIME
		}
		if len(got) != 2 || got["outputs/plot.png"] != "image/png" || !strings.HasPrefix(got["outputs/data.csv"], "text/csv") {
			t.Errorf("outputs: %+v", res.Outputs)
		}
		// Unchanged files are not listed again; a command's new ones are.
		// A link planted in outputs is reported as nothing and never followed.
		res = sh(t, c, id, "echo x > outputs/new.txt; ln -s / outputs/root; ln -s /etc/passwd outputs/passwd; mkdir -p outputs/d/e; echo y > outputs/d/e/deep.txt")
		var paths []string
		for _, o := range res.Outputs {
			paths = append(paths, o.Path)
		}
		if strings.Join(paths, " ") != "outputs/new.txt outputs/d/e/deep.txt" && strings.Join(paths, " ") != "outputs/d/e/deep.txt outputs/new.txt" {
			t.Errorf("outputs of a command: %v", paths)
		}
		// outputs itself a link out of the workspace: nothing is listed.
		res = sh(t, c, id, "rm -rf outputs && ln -s /etc outputs && echo z > /tmp/z")
		if len(res.Outputs) != 0 {
			t.Errorf("outputs through a link: %+v", res.Outputs)
		}
	})

	t.Run("hostile", func(t *testing.T) {
		t.Parallel()
		id := newSession(t, c, api.SessionRequest{Language: "python"})
		// A forged end mark and a forged reply do not end the cell early;
		// a closed stdout does not hang it.
		res := cell(t, c, id, "main", "import os, sys\nos.write(1, b'a\\x00\\x1esandboxd:end\\x1e\\x00b')\nos.write(4, b'{\"name\": \"x\", \"exit_code\": 9}\\n')\nprint('after')\n7", 0)
		if res.ExitCode != 0 || plain(res) != "7" || !strings.Contains(res.Stdout, "after") {
			t.Errorf("forgeries: %+v", res)
		}
		res = cell(t, c, id, "main", "import os\nos.close(1)\n8", 5*time.Second)
		if res.TimedOut || plain(res) != "8" {
			t.Errorf("closed stdout: %+v", res)
		}
		res = cell(t, c, id, "main", "import os\nos.close(4)\n9", 5*time.Second)
		if res.TimedOut || !strings.Contains(res.Context.Lost, "the interpreter was ended by SIGKILL") {
			t.Errorf("closed reply descriptor: %+v", res)
		}
		if res := cell(t, c, id, "main", "10", 0); plain(res) != "10" {
			t.Errorf("after the hostile cells: %+v", res)
		}
	})

	t.Run("node", func(t *testing.T) {
		t.Parallel()
		id := newSession(t, c, api.SessionRequest{Language: "node"})
		res := cell(t, c, id, "js", "const fs = require('fs'); let n = 40; console.log('hi'); n + 2", 0)
		if res.ExitCode != 0 || res.Stdout != "hi\n" || plain(res) != "42" {
			t.Fatalf("first cell: %+v", res)
		}
		if res := cell(t, c, id, "js", "n++; ({n, list: [1, 2]})", 0); plain(res) != "{ n: 41, list: [ 1, 2 ] }" {
			t.Errorf("state: %q %q", plain(res), res.Stderr)
		}
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Context: "js", Code: "[process.env.GREETING, require('child_process').execSync('echo $GREETING').toString()]",
			Env: map[string]string{"GREETING": "hi"}})
		if err != nil || plain(res) != "[ 'hi', 'hi\\n' ]" {
			t.Errorf("a cell's env: %v %q %q", err, plain(res), res.Stderr)
		}
		if res := cell(t, c, id, "js", "process.env.GREETING === undefined", 0); plain(res) != "true" {
			t.Errorf("the next cell's env: %q", plain(res))
		}
		if res := cell(t, c, id, "js", "await new Promise(r => setTimeout(() => r(n + 1), 50))", 0); plain(res) != "42" {
			t.Errorf("top-level await: %q %q", plain(res), res.Stderr)
		}
		res = cell(t, c, id, "js", "null.x", 0)
		if res.ExitCode != 1 || !strings.Contains(res.Stderr, "<js cell 6>:1") || !strings.Contains(res.Stderr, "TypeError") || strings.Contains(res.Stderr, "[eval]") {
			t.Errorf("an exception: %q", res.Stderr)
		}
		if res := cell(t, c, id, "js", "process.exit(3)", 0); res.ExitCode != 3 || !strings.Contains(res.Context.Lost, "exited with status 3") {
			t.Errorf("process.exit: %+v", res)
		}
	})

	t.Run("bash", func(t *testing.T) {
		t.Parallel()
		id := newSession(t, c, api.SessionRequest{Language: "bash"})
		res := cell(t, c, id, "sh", "x=41; cd /tmp; f() { echo \"f $1\"; }; alias hi='echo hi'; declare -a arr=(a b)", 0)
		if res.ExitCode != 0 || res.Stdout != "" || res.Stderr != "" || !res.Context.Started {
			t.Fatalf("first cell: %+v", res)
		}
		if res := cell(t, c, id, "sh", "echo $((x + 1)) $PWD ${arr[1]}; f a; hi; cat", 0); res.Stdout != "42 /tmp b\nf a\nhi\n" {
			t.Errorf("state: %q %q", res.Stdout, res.Stderr)
		}
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Context: "sh", Code: "echo $GREETING; sh -c 'echo $GREETING'", Env: map[string]string{"GREETING": "it's me", "x": "cell"}})
		if err != nil || res.Stdout != "it's me\nit's me\n" {
			t.Errorf("a cell's env: %v %q %q", err, res.Stdout, res.Stderr)
		}
		if res := cell(t, c, id, "sh", "echo ${GREETING-unset} $x", 0); res.Stdout != "unset 41\n" {
			t.Errorf("the next cell's env: %q", res.Stdout)
		}
		// A failing command fails the cell; an error that would end a
		// script ends the cell alone, as at a prompt.
		if res := cell(t, c, id, "sh", "false", 0); res.ExitCode != 1 || res.Context.Lost != "" {
			t.Errorf("false: %+v", res)
		}
		if res := cell(t, c, id, "sh", "set -u; echo $nope; echo after", 0); res.ExitCode == 0 || !strings.Contains(res.Stderr, "nope: unbound variable") || strings.Contains(res.Stdout, "after") {
			t.Errorf("set -u: %+v", res)
		}
		if res := cell(t, c, id, "sh", "set +u; break; echo $x", 0); res.Stdout != "41\n" || res.Context.Lost != "" {
			t.Errorf("after set -u, and break outside a loop: %+v", res)
		}
		if res := cell(t, c, id, "sh", "exit 3", 0); res.ExitCode != 3 || !strings.Contains(res.Context.Lost, "exited with status 3") {
			t.Errorf("exit: %+v", res.Context)
		}
		if res := cell(t, c, id, "sh", "echo ${x-gone}", 0); res.Stdout != "gone\n" || !res.Context.Started {
			t.Errorf("after exit: %q %+v", res.Stdout, res.Context)
		}
	})

	t.Run("several languages", func(t *testing.T) {
		t.Parallel()
		id := newSession(t, c, api.SessionRequest{Language: "code-interpreter"})
		exec := func(name, lang, code string) *api.RunResult {
			t.Helper()
			res, err := c.Exec(ctx(t), id, api.ExecRequest{Context: name, Language: lang, Code: code})
			if err != nil {
				t.Fatalf("%s cell %q: %v", lang, code, err)
			}
			return res
		}
		if res := exec("py", "", "open('shared.txt', 'w').write('from python')\nx = 1"); res.ExitCode != 0 {
			t.Fatalf("python: %+v", res)
		}
		res := exec("js", "javascript", "import { readFileSync } from 'fs'\nimport * as path from 'node:path'\nconsole.log(readFileSync('shared.txt', 'utf8'))")
		if res.ExitCode != 0 || res.Stdout != "from python\n" || res.Language != "node" {
			t.Errorf("javascript, with imports: %+v", res)
		}
		if res := exec("js", "node", "path.join('a', typeof readFileSync)"); plain(res) != "'a/function'" {
			t.Errorf("imports kept: %q %q", plain(res), res.Stderr)
		}
		if res := exec("ts", "ts", "enum Colour { Red, Green }\nconst n: number = 41\nn + Colour.Green"); plain(res) != "42" || res.Stderr != "" {
			t.Errorf("typescript: %q %q", plain(res), res.Stderr)
		}
		if res := exec("sh", "bash", "cat shared.txt; node -e 'console.log(1 + 1)'"); res.Stdout != "from python2\n" {
			t.Errorf("bash: %q %q", res.Stdout, res.Stderr)
		}
		// R: each visible value shown as R prints it, the last the cell's;
		// an error ends the cell, not the session.
		res = exec("r", "r", "x <- readLines('shared.txt'); cat(x, '\\n'); nchar(x); toupper(x)")
		if res.ExitCode != 0 || res.Stdout != "from python \n" || mimes(res) != "text/plain,text/plain" || plain(res) != `[1] "FROM PYTHON"` {
			t.Errorf("r: %q %q %+v", res.Stdout, res.Stderr, res.Display)
		}
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Context: "r", Code: "Sys.getenv('WHO')", Env: map[string]string{"WHO": "cell"}})
		if err != nil || plain(res) != `[1] "cell"` {
			t.Errorf("an R cell's env: %v %+v", err, res)
		}
		if res := exec("r", "", "stop('boom')"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "Error: boom") || res.Context.Lost != "" {
			t.Errorf("an R error: %+v", res)
		}
		if res := exec("r", "", "c(Sys.getenv('WHO', 'gone'), x)"); plain(res) != `[1] "gone"        "from python"` {
			t.Errorf("after the error and the env: %q %q", plain(res), res.Stderr)
		}
		// The image mounts the workspace at /home/user (its
		// io.sandboxd.workspace label) and links /workspace there: the
		// interpreters work in /home/user, as E2B's clients expect.
		for lang, want := range map[string]string{"py": "'/home/user'", "js": "'/home/user'", "r": `[1] "/home/user"`} {
			code := map[string]string{"py": "import os; os.getcwd()", "js": "process.cwd()", "r": "getwd()"}[lang]
			if res := exec(lang, "", code); plain(res) != want {
				t.Errorf("%s's working directory: %q %q", lang, plain(res), res.Stderr)
			}
		}
		// Java: JShell, whose cells' env is system properties (as E2B's
		// Java kernel has it: the JVM cannot change its own environment).
		res = exec("java", "java", "int n = 41;\nSystem.out.println(Files.readString(Path.of(\"shared.txt\")));\nn + 1")
		if res.ExitCode != 0 || res.Stdout != "from python\n" || plain(res) != "42" || res.Language != "java" {
			t.Errorf("java: %q %q %q %+v", res.Stdout, res.Stderr, plain(res), res.Context)
		}
		res, err = c.Exec(ctx(t), id, api.ExecRequest{Context: "java", Code: "System.getProperty(\"WHO\") + \" \" + System.getProperty(\"user.dir\")", Env: map[string]string{"WHO": "cell"}})
		if err != nil || plain(res) != "cell /home/user" {
			t.Errorf("a Java cell's env and directory: %v %+v", err, res)
		}
		if res := exec("java", "", "n / 0"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "java.lang.ArithmeticException: / by zero") || res.Context.Lost != "" {
			t.Errorf("a Java exception: %+v", res)
		}
		if res := exec("java", "", "String.valueOf(System.getProperty(\"WHO\")) + n"); plain(res) != "null41" {
			t.Errorf("after the exception and the env: %q %q", plain(res), res.Stderr)
		}
		// A literal past the class file's limit leaves JShell unable to
		// compile: the context ends, and starts afresh.
		if res := exec("java", "", "String big = \""+strings.Repeat("z", 70000)+"\";"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "constant string too long") || res.Context.Lost == "" {
			t.Errorf("a literal too long: %d %q", res.ExitCode, res.Stderr)
		}
		if res := exec("java", "", "1 + 1"); plain(res) != "2" || !res.Context.Started {
			t.Errorf("after JShell broke: %q %q %+v", plain(res), res.Stderr, res.Context)
		}
		if res := exec("java", "", "int q = 1; void f() {"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "ends in the middle") {
			t.Errorf("an unfinished cell: %d %q", res.ExitCode, res.Stderr)
		}
		if res := exec("sh", "", "pwd -P; echo $HOME; ls /workspace/shared.txt /home/user/shared.txt"); res.Stdout != "/home/user\n/home/user\n/home/user/shared.txt\n/workspace/shared.txt\n" {
			t.Errorf("bash's working directory: %q %q", res.Stdout, res.Stderr)
		}
		if res, err := c.Run(ctx(t), api.RunRequest{Language: "code-interpreter", Code: "import os; print(os.getcwd(), open('/workspace/a', 'w').write('x'), 'a' in os.listdir('/home/user'))"}); err != nil || res.Stdout != "/home/user 1 True\n" {
			t.Errorf("a run: %v %+v", err, res)
		}
		// A context runs the language it was started for: an exec that
		// names none runs in it, one that names another is refused. The
		// session's own language goes by its plugin's names too.
		if res := exec("js", "", "[21 * 2]"); plain(res) != "[ 42 ]" {
			t.Errorf("a node context named alone: %q %q", plain(res), res.Stderr)
		}
		if res, err := c.Exec(ctx(t), id, api.ExecRequest{Context: "js", Language: "python", Code: "1 + 1"}); err != nil || res.ExitCode != 126 || !strings.Contains(res.Error, "context js runs node") {
			t.Errorf("python in a node context: %v %+v", err, res)
		}
		if res := exec("py", "python", "x + 1"); plain(res) != "2" {
			t.Errorf("the session's own language by its plugin's name: %q %q", plain(res), res.Stderr)
		}
		list, err := c.Contexts(ctx(t), id)
		langs := map[string]string{}
		for _, k := range list.Contexts {
			langs[k.Name] = k.Language
		}
		if err != nil || fmt.Sprint(langs) != "map[java:java js:node py:code-interpreter r:r sh:bash ts:typescript]" {
			t.Errorf("contexts: %v %v", err, langs)
		}
		// A restart keeps the context's language, one that ended too.
		if k, err := c.RestartContext(ctx(t), id, "ts"); err != nil || k.Language != "typescript" {
			t.Errorf("restart: %v %+v", err, k)
		}
		if res := exec("sh", "", "exit 0"); !strings.Contains(res.Context.Lost, "exited") {
			t.Errorf("exit: %+v", res.Context)
		}
		if k, err := c.RestartContext(ctx(t), id, "sh"); err != nil || k.Language != "bash" {
			t.Errorf("restart of a context that ended: %v %+v", err, k)
		}
		if res := exec("ts", "typescript", "typeof n"); plain(res) != "'undefined'" {
			t.Errorf("after the restart: %q %q", plain(res), res.Stderr)
		}
	})

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		py := newSession(t, c, api.SessionRequest{Language: "python"})
		for _, req := range []api.ExecRequest{{Context: "../x", Code: "1"}, {Context: "main", Argv: []string{"ls"}},
			{Context: "main", Language: "node", Code: "1"}, {Language: "python", Code: "1"}} {
			if _, err := c.Exec(ctx(t), py, req); apiCode(err) != api.CodeInvalidRequest {
				t.Errorf("%+v: %v", req, err)
			}
		}
		if _, err := c.Contexts(context.Background(), "nosuchsession"); apiCode(err) != api.CodeNotFound {
			t.Errorf("contexts of no session: %v", err)
		}
	})
}

// A session's contexts are apart, as a notebook's kernels are: a cell
// cut at its deadline, or by its client going away, ends its own
// context, not another's state nor the session's servers; and a cell
// that waits runs beside file transfers and other contexts' cells, each
// of which it waits on here (run one after another, it never ends).
func TestContextsRunApart(t *testing.T) { ociRuntimes(t, testContextsRunApart) }

func testContextsRunApart(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{})
	exec := func(ctx context.Context, name, code string, timeout time.Duration) (*api.RunResult, error) {
		return c.Exec(ctx, id, api.ExecRequest{Code: code, Context: name, Timeout: api.Duration(timeout)})
	}
	if _, err := exec(ctx(t), "a", "x = 41", 0); err != nil {
		t.Fatal(err)
	}
	sh(t, c, id, "setsid sleep 600 >/dev/null 2>&1 < /dev/null & echo $! > server.pid")
	intact := func(after string) {
		t.Helper()
		r, err := exec(ctx(t), "a", "x + 1", 0)
		if err != nil || len(r.Display) == 0 || r.Display[len(r.Display)-1].Data != "42" || r.Context.Lost != "" {
			t.Fatalf("context a after %s: %+v %v", after, r, err)
		}
		if res := sh(t, c, id, "kill -0 $(cat server.pid) && echo alive"); res.Stdout != "alive\n" {
			t.Fatalf("the session's server after %s: %+v", after, res)
		}
	}
	r, err := exec(ctx(t), "b", "import time\ntime.sleep(600)", 2*time.Second)
	if err != nil || !r.TimedOut || r.Context == nil || r.Context.Lost == "" {
		t.Fatalf("a cell past its deadline: %+v %v", r, err)
	}
	intact("another context's deadline")
	gone, cancel := context.WithTimeout(ctx(t), 2*time.Second)
	_, err = exec(gone, "b", "import time\ntime.sleep(600)", 10*time.Second)
	cancel()
	if err == nil {
		t.Fatal("a cell whose client went away answered")
	}
	intact("another context's client going away")

	// b waits for a file a transfer brings, then for one a's cell writes.
	done := make(chan error, 1)
	go func() {
		r, err := exec(ctx(t), "b", "import os, time\nfor name in ('sent', 'written'):\n    while not os.path.exists(name):\n        time.sleep(0.05)\nprint('both')", 10*time.Second)
		if err == nil && r.Stdout != "both\n" {
			err = fmt.Errorf("%+v", r)
		}
		done <- err
	}()
	if _, err := c.PutFile(ctx(t), id, "sent", strings.NewReader("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec(ctx(t), "a", "open('written', 'w').close()", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting cell: %v", err)
	}
}
