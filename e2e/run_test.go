// Package e2e tests sandboxd end to end: real daemon, real plugins, real
// Docker engine, real sandboxctl. Nothing here is faked.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, c *client.Client, req api.RunRequest) *api.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.Run(ctx, req)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// TestOneShot covers sandboxctl run and POST /v1/run on one daemon.
func TestOneShot(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{})
	c := d.Client()

	t.Run("python hello through sandboxctl", func(t *testing.T) {
		out, errOut, code := d.Ctl("", "run", writeFile(t, "hello.py", "print('hello from python')\n"))
		if code != 0 || out != "hello from python\n" {
			t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("node hello through sandboxctl", func(t *testing.T) {
		out, errOut, code := d.Ctl("", "run", writeFile(t, "app.js", "console.log('hello from node')\n"))
		if code != 0 || out != "hello from node\n" {
			t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("exit code and stderr mirror the program", func(t *testing.T) {
		out, errOut, code := d.Ctl("", "run", writeFile(t, "x.py", "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n"))
		if code != 3 || out != "out\n" || errOut != "err\n" {
			t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("stdin from a file and from -", func(t *testing.T) {
		prog := writeFile(t, "up.py", "import sys\nsys.stdout.write(sys.stdin.read().upper())\n")
		out, _, code := d.Ctl("", "run", "--stdin", writeFile(t, "in.txt", "abc\n"), prog)
		if code != 0 || out != "ABC\n" {
			t.Fatalf("--stdin FILE: code %d, stdout %q", code, out)
		}
		out, _, code = d.Ctl("xyz", "run", "--stdin", "-", prog)
		if code != 0 || out != "XYZ" {
			t.Fatalf("--stdin -: code %d, stdout %q", code, out)
		}
	})
	t.Run("environment from -e and --env-file, as docker run takes them", func(t *testing.T) {
		t.Setenv("SANDBOXCTL_TEST_HOST", "from the shell")
		prog := writeFile(t, "env.py", "import os\nfor k in ('A', 'B', 'C', 'SANDBOXCTL_TEST_HOST'):\n    print(k, os.environ.get(k))\n")
		envFile := writeFile(t, "vars.env", "# the project's settings\nA=from the file\nB=b=1\n")
		out, errOut, code := d.Ctl("", "run", "--env-file", envFile, "-e", "A=from a flag", "-e", "C", "-e", "SANDBOXCTL_TEST_HOST", prog)
		if want := "A from a flag\nB b=1\nC None\nSANDBOXCTL_TEST_HOST from the shell\n"; code != 0 || out != want {
			t.Fatalf("code %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
		}
		_, errOut, code = d.Ctl("", "run", "-e", "=x", prog)
		if code != 125 || !strings.Contains(errOut, "use KEY=VALUE") {
			t.Fatalf("-e =x: code %d, stderr %q", code, errOut)
		}
	})
	t.Run("program from stdin with --lang and arguments", func(t *testing.T) {
		out, _, code := d.Ctl("console.log(process.argv.slice(2).join('+'))", "run", "--lang", "js", "-", "--", "a", "b c")
		if code != 0 || out != "a+b c\n" {
			t.Fatalf("code %d, stdout %q", code, out)
		}
	})
	t.Run("timeout exits 124 and kills everything", func(t *testing.T) {
		start := time.Now()
		_, errOut, code := d.Ctl("", "run", "--timeout", "1s", writeFile(t, "loop.py", "while True: pass\n"))
		if code != 124 || !strings.Contains(errOut, "sandboxctl: timed out") {
			t.Fatalf("code %d, stderr %q", code, errOut)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("took %s for a 1s deadline", el)
		}
	})
	t.Run("memory kill exits 137", func(t *testing.T) {
		_, errOut, code := d.Ctl("", "run", "--memory", "64m", writeFile(t, "mem.py", "x = bytearray(300 << 20)\nprint('survived')\n"))
		if code != 137 || !strings.Contains(errOut, "out of memory") {
			t.Fatalf("code %d, stderr %q", code, errOut)
		}
	})
	t.Run("--json prints the result", func(t *testing.T) {
		out, _, code := d.Ctl("", "run", "--json", writeFile(t, "j.py", "print(42)\n"))
		if code != 0 || !strings.Contains(out, `"stdout": "42\n"`) || !strings.Contains(out, `"exit_code": 0`) {
			t.Fatalf("code %d, stdout %s", code, out)
		}
	})
	t.Run("bad requests exit 125 with a reason", func(t *testing.T) {
		for _, args := range [][]string{
			{"run", writeFile(t, "x.cobol", "x")},
			{"run", writeFile(t, "noext", "x")},
			{"run", "--memory", "lots", writeFile(t, "a.py", "1")},
			{"run", "--timeout", "1h", writeFile(t, "b.py", "1")},
			{"run", "/does/not/exist.py"},
		} {
			_, errOut, code := d.Ctl("", args...)
			if code != 125 || !strings.HasPrefix(errOut, "sandboxctl: ") {
				t.Errorf("%v: code %d, stderr %q", args, code, errOut)
			}
		}
	})
	t.Run("curl-style JSON over the socket", func(t *testing.T) {
		status, body := rawPost(t, d.Socket, "/v1/run", `{"language":"python","code":"print(1)"}`, "")
		if status != 200 || !strings.Contains(body, `"stdout": "1\n"`) {
			t.Fatalf("%d %s", status, body)
		}
		for _, tc := range []struct{ body, code string }{
			{`{"language":"python","code":`, api.CodeInvalidRequest},
			{`{"language":"python","code":"1","bogus":true}`, api.CodeInvalidRequest},
			{`{"language":"cobol","code":"x"}`, api.CodeUnknownLanguage},
			{`{"language":"python"}`, api.CodeInvalidRequest},
			{`{"language":"python","code":"1","timeout":"forever"}`, api.CodeInvalidRequest},
			{`{"language":"python","files":[{"path":"../x.py","content":"1"}],"entry":"../x.py"}`, api.CodeInvalidRequest},
			{``, api.CodeInvalidRequest},
		} {
			status, body := rawPost(t, d.Socket, "/v1/run", tc.body, "")
			if status != 400 || !strings.Contains(body, `"code": "`+tc.code+`"`) {
				t.Errorf("%s: %d %s", tc.body, status, body)
			}
		}
	})
	t.Run("ndjson streams output as it happens", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var times []time.Time
		var got []string
		res, err := c.RunStream(ctx, api.RunRequest{Language: "python",
			Code: "import time\nfor i in range(3):\n    print(i)\n    time.sleep(0.4)\n"},
			func(ev api.Event) {
				if ev.Type == api.EventStdout && strings.TrimSpace(ev.Data) != "" {
					times = append(times, time.Now())
					got = append(got, strings.TrimSpace(ev.Data))
				}
			})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != "0,1,2" || res.Stdout != "0\n1\n2\n" {
			t.Fatalf("events %v, result %q", got, res.Stdout)
		}
		if gap := times[2].Sub(times[0]); gap < 600*time.Millisecond {
			t.Fatalf("events arrived together (%s apart): not streamed", gap)
		}
	})
	t.Run("sandboxctl run prints each line as it comes", func(t *testing.T) {
		prog := writeFile(t, "tick.py", "import time\nfor i in range(3):\n    print('tick', i)\n    time.sleep(1)\n")
		cmd := exec.Command(filepath.Join(d.Bin, "sandboxctl"), "--socket", d.Socket, "run", prog)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		var arrivals []time.Time
		for lines.Scan() {
			arrivals = append(arrivals, time.Now())
		}
		if err := cmd.Wait(); err != nil || len(arrivals) != 3 {
			t.Fatalf("exit %v, %d lines", err, len(arrivals))
		}
		if gap := arrivals[2].Sub(arrivals[0]); gap < 1500*time.Millisecond {
			t.Fatalf("lines arrived together (%s apart): not printed live", gap)
		}
	})
	t.Run("binary output is base64, never mangled", func(t *testing.T) {
		res := run(t, c, api.RunRequest{Language: "python", Code: "import sys\nsys.stdout.buffer.write(bytes(range(256)))\n"})
		b, err := base64.StdEncoding.DecodeString(res.Stdout)
		if res.StdoutEncoding != api.EncodingBase64 || err != nil || len(b) != 256 || b[255] != 255 {
			t.Fatalf("encoding %q, %d bytes, err %v", res.StdoutEncoding, len(b), err)
		}
		res = run(t, c, api.RunRequest{Language: "python", Code: "print('héllo ✓ 世界')"})
		if res.StdoutEncoding != "" || res.Stdout != "héllo ✓ 世界\n" {
			t.Fatalf("unicode: %q (%s)", res.Stdout, res.StdoutEncoding)
		}
	})
	t.Run("output flood is capped and flagged", func(t *testing.T) {
		res := run(t, c, api.RunRequest{Language: "python", Code: "import sys\nsys.stdout.write('x' * (8 << 20))\n",
			Limits: &api.Limits{OutputLimit: 64 << 10}})
		if !res.Truncated || len(res.Stdout) != 64<<10 || res.StdoutBytes != 8<<20 || res.ExitCode != 0 {
			t.Fatalf("truncated %v, kept %d, counted %d, exit %d", res.Truncated, len(res.Stdout), res.StdoutBytes, res.ExitCode)
		}
	})
	t.Run("multi-file program with an entry", func(t *testing.T) {
		res := run(t, c, api.RunRequest{Language: "python", Entry: "app/main.py", Files: []api.File{
			{Path: "app/main.py", Content: "import helper\nprint(helper.twice(21))\n"},
			{Path: "app/helper.py", Content: "def twice(x):\n    return 2 * x\n"},
		}})
		if res.ExitCode != 0 || res.Stdout != "42\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
	t.Run("preinstalled packages", func(t *testing.T) {
		res := run(t, c, api.RunRequest{Language: "python", Code: "import numpy, pandas, requests\nprint(int(numpy.arange(4).sum()), len(pandas.DataFrame({'a': [1, 2]})))\n"})
		if res.ExitCode != 0 || res.Stdout != "6 2\n" {
			t.Fatalf("python: %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		res = run(t, c, api.RunRequest{Language: "node", Code: "const ts = require('typescript'); console.log(ts.version.split('.')[0], ts.transpile('let x: number = 1'))"})
		if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "5 ") || !strings.Contains(res.Stdout, "var x = 1;") {
			t.Fatalf("node: %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
	t.Run("history records executions", func(t *testing.T) {
		res := run(t, c, api.RunRequest{Language: "node", Code: "process.exit(7)"})
		waitFor(t, "the execution in history", func() bool {
			list, err := c.Executions(context.Background(), 50, api.ExecutionFilter{Language: "node"})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range list {
				if e.ID == res.ID && e.ExitCode == 7 && e.Limits.Memory > 0 {
					return true
				}
			}
			return false
		})
		out, _, code := d.Ctl("", "history", "--lang", "node")
		if code != 0 || !strings.Contains(out, res.ID) {
			t.Fatalf("sandboxctl history: %d\n%s", code, out)
		}
	})
	t.Run("status, languages, pools, plugins", func(t *testing.T) {
		out, _, code := d.Ctl("", "status")
		if code != 0 || !strings.Contains(out, ": ok") {
			t.Fatalf("status %d: %s", code, out)
		}
		out, _, code = d.Ctl("", "languages")
		if code != 0 || !strings.Contains(out, "python") || !strings.Contains(out, "sandboxd/node:latest") {
			t.Fatalf("languages %d: %s", code, out)
		}
		out, _, code = d.Ctl("", "pools")
		if code != 0 || !strings.Contains(out, "IDLE") || !strings.Contains(out, "node") {
			t.Fatalf("pools %d: %s", code, out)
		}
		out, _, code = d.Ctl("", "plugins")
		if code != 0 || !strings.Contains(out, "sandbox-lang-python") {
			t.Fatalf("plugins %d: %s", code, out)
		}
	})
	t.Run("concurrent runs are isolated", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				res, err := c.Run(context.Background(), api.RunRequest{Language: "python",
					Code: "import os\nopen('mine','w').write(str(os.getpid()))\nprint(len(os.listdir('.')))\n"})
				if err != nil {
					errs <- err.Error()
				} else if res.Stdout != "3\n" { // main.py, mine and outputs: nothing from another run
					errs <- "workspace shared: " + res.Stdout
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
}

func rawPost(t *testing.T, socket, path, body, accept string) (int, string) {
	t.Helper()
	return rawRequest(t, socket, http.MethodPost, path, body, accept)
}

// unixHTTP is an HTTP client of the daemon's socket.
func unixHTTP(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
}

// rawRequest sends one request to the daemon's socket, without the client.
func rawRequest(t *testing.T, socket, method, path, body, accept string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	status, text, _ := send(t, socket, req)
	return status, text
}

// rawResponse is rawRequest's answer with its header.
func rawResponse(t *testing.T, socket, method, path, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
	return send(t, socket, req)
}

func send(t *testing.T, socket string, req *http.Request) (int, string, http.Header) {
	t.Helper()
	resp, err := unixHTTP(socket).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), resp.Header
}
