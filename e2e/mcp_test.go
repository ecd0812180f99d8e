package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

// mcpAnswer is what the MCP inspector's CLI prints for tools/list and
// tools/call.
type mcpAnswer struct {
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema struct {
			Type string `json:"type"`
		} `json:"inputSchema"`
	} `json:"tools"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
	// resources/list, resources/read, prompts/list and prompts/get
	Resources []struct {
		URI string `json:"uri"`
	} `json:"resources"`
	Contents []struct {
		Text string `json:"text"`
	} `json:"contents"`
	Prompts []struct {
		Name string `json:"name"`
	} `json:"prompts"`
	Messages []struct {
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
}

// mcpResult is the structured result of the execution tools.
type mcpResult struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	TimedOut  bool   `json:"timed_out"`
	OOMKilled bool   `json:"oom_killed"`
	Truncated bool   `json:"truncated"`
	Findings  []struct {
		Severity, Rule, Message, Where string
	} `json:"findings"`
	SessionID string `json:"session_id"`
	Content   string `json:"content"`
	Allowed   bool   `json:"allowed"`
	Display   []struct {
		MIME string `json:"mime"`
		Data string `json:"data"`
	} `json:"display"`
	ContextLost string `json:"context_lost"`
	Outputs     []struct {
		Path, MIME string
	} `json:"outputs"`
	Entries []struct {
		Path, Type string
	} `json:"entries"`
	Languages []struct {
		Name  string `json:"name"`
		Ready bool   `json:"ready"`
	} `json:"languages"`
}

// mcpCall makes one MCP call to `sandboxctl mcp` on d with the MCP
// inspector's CLI, in a process of its own as an agent's host starts it.
func mcpCall(t *testing.T, inspector string, d *testutil.Daemon, method string, args ...string) mcpAnswer {
	t.Helper()
	argv := append([]string{"--cli", "-e", "SANDBOXD_SOCKET=" + d.Socket, filepath.Join(d.Bin, "sandboxctl"), "mcp", "--method", method}, args...)
	cmd := exec.Command(inspector, argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var a mcpAnswer
	if jerr := json.Unmarshal(out, &a); jerr != nil {
		t.Fatalf("mcp-inspector %s: %v (%v)\nstdout: %s\nstderr: %s", method, err, jerr, out, stderr.String())
	}
	return a
}

// TestMCP drives `sandboxctl mcp` with a real MCP client from the npm
// registry (the MCP inspector's CLI), one process per call as an agent's
// host would start it, through a whole agent's flow.
func TestMCP(t *testing.T) {
	inspector := testutil.NPMTool(t, "node_modules/.bin/mcp-inspector")
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly, Extra: `
policy "limits" {}
policy "patterns" {}
policy "commands" {}
`})

	call := func(t *testing.T, method string, args ...string) mcpAnswer {
		t.Helper()
		return mcpCall(t, inspector, d, method, args...)
	}
	tool := func(t *testing.T, name string, args ...string) (mcpResult, mcpAnswer) {
		t.Helper()
		argv := []string{"--tool-name", name}
		for _, a := range args {
			argv = append(argv, "--tool-arg", a)
		}
		a := call(t, "tools/call", argv...)
		var r mcpResult
		if !a.IsError {
			if err := json.Unmarshal(a.Structured, &r); err != nil {
				t.Fatalf("%s: structured content %s: %v", name, a.Structured, err)
			}
		}
		return r, a
	}
	errorText := func(a mcpAnswer) string {
		if !a.IsError || len(a.Content) == 0 {
			return ""
		}
		return a.Content[0].Text
	}

	t.Run("tools", func(t *testing.T) {
		a := call(t, "tools/list")
		var names []string
		for _, tl := range a.Tools {
			names = append(names, tl.Name)
			if len(tl.Description) < 40 || tl.InputSchema.Type != "object" {
				t.Errorf("tool %s: description %q, schema %+v", tl.Name, tl.Description, tl.InputSchema)
			}
		}
		for _, want := range []string{"list_languages", "run_code", "validate_code", "create_session", "list_sessions",
			"exec", "reset_session", "close_session", "write_file", "read_file", "list_files"} {
			if !slices.Contains(names, want) {
				t.Errorf("no tool %s in %v", want, names)
			}
		}
		r, _ := tool(t, "list_languages")
		if len(r.Languages) != 2 || r.Languages[0].Name != "python" || !r.Languages[0].Ready {
			t.Errorf("languages %+v", r.Languages)
		}
	})

	// What the agent reads before it runs anything: the host, and each
	// language's instructions and facts, as resources and prompts.
	t.Run("instructions", func(t *testing.T) {
		var uris []string
		for _, r := range call(t, "resources/list").Resources {
			uris = append(uris, r.URI)
		}
		if !slices.Contains(uris, "sandboxd://host") || !slices.Contains(uris, "sandboxd://languages/python") {
			t.Errorf("resources: %v", uris)
		}
		if a := call(t, "resources/read", "--uri", "sandboxd://languages/python"); len(a.Contents) != 1 || !strings.Contains(a.Contents[0].Text, "Python 3 for computation") {
			t.Errorf("the python resource: %+v", a.Contents)
		}
		var prompts []string
		for _, p := range call(t, "prompts/list").Prompts {
			prompts = append(prompts, p.Name)
		}
		if !slices.Contains(prompts, "python") || !slices.Contains(prompts, "bash") {
			t.Errorf("prompts: %v", prompts)
		}
		if a := call(t, "prompts/get", "--prompt-name", "bash"); len(a.Messages) != 1 || !strings.Contains(a.Messages[0].Content.Text, "- Network: none") {
			t.Errorf("the bash prompt: %+v", a.Messages)
		}
	})

	t.Run("run_code", func(t *testing.T) {
		r, a := tool(t, "run_code", "language=python", "code=import sys; print('hi'); print('oops', file=sys.stderr); sys.exit(3)")
		if a.IsError || r.ExitCode != 3 || r.Stdout != "hi\n" || r.Stderr != "oops\n" || r.TimedOut {
			t.Errorf("%+v %+v", r, a)
		}
		// The text content carries the same result for clients that only
		// show text.
		if len(a.Content) != 1 || !strings.Contains(a.Content[0].Text, `"exit_code":3`) {
			t.Errorf("content %+v", a.Content)
		}
		r, _ = tool(t, "run_code", "language=py", "code=import time; time.sleep(30)", "timeout_seconds=1")
		if !r.TimedOut {
			t.Errorf("sleep: %+v", r)
		}
		r, _ = tool(t, "run_code", "language=python", "code=print('x' * 5_000_000)")
		if !r.Truncated || len(r.Stdout) >= 5_000_000 {
			t.Errorf("flood: truncated %v, %d bytes", r.Truncated, len(r.Stdout))
		}
		r, _ = tool(t, "run_code", "language=python", "code=print(eval('6*7'))")
		if r.Stdout != "42\n" || len(r.Findings) != 1 || r.Findings[0].Rule != "patterns/python.eval" || r.Findings[0].Where != "main.py:1:7" {
			t.Errorf("warning: %+v", r)
		}
		_, a = tool(t, "run_code", "language=python", "code=print(1)", "timeout_seconds=3600")
		if text := errorText(a); !strings.Contains(text, "denied by policy limits") || !strings.Contains(text, "error limits/limits.timeout") {
			t.Errorf("denial: %+v", a)
		}
		_, a = tool(t, "run_code", "language=cobol", "code=x")
		if text := errorText(a); !strings.Contains(text, "cobol") {
			t.Errorf("unknown language: %+v", a)
		}
	})

	t.Run("validate_code", func(t *testing.T) {
		r, a := tool(t, "validate_code", "language=python", "code=exec(input())")
		if a.IsError || !r.Allowed || len(r.Findings) != 1 || r.Findings[0].Severity != "warning" {
			t.Errorf("%+v %+v", r, a)
		}
		r, _ = tool(t, "validate_code", "language=python", `argv=["mkfs.ext4", "/dev/sda"]`)
		if r.Allowed || len(r.Findings) == 0 || r.Findings[0].Rule != "commands/commands.denied" {
			t.Errorf("argv: %+v", r)
		}
	})

	t.Run("sessions and files", func(t *testing.T) {
		s, a := tool(t, "create_session", "language=python")
		id := s.SessionID
		if a.IsError || id == "" {
			t.Fatalf("%+v", a)
		}
		if _, a := tool(t, "write_file", "session_id="+id, "path=data/in.txt", "content=three\nlines\nhere\n"); a.IsError {
			t.Fatalf("write_file: %+v", a)
		}
		if _, a := tool(t, "write_file", "session_id="+id, "path=count.py", "content=import sys\nn = len(open(sys.argv[1]).readlines())\nopen('out.txt', 'w').write(str(n))\nprint(n)\n"); a.IsError {
			t.Fatalf("write_file: %+v", a)
		}
		r, _ := tool(t, "exec", "session_id="+id, `argv=["python3", "count.py", "data/in.txt"]`)
		if r.ExitCode != 0 || r.Stdout != "3\n" {
			t.Errorf("exec argv: %+v", r)
		}
		r, _ = tool(t, "exec", "session_id="+id, "command=cat out.txt; echo; ls data | wc -l; echo x > outputs/report.md")
		if r.Stdout != "3\n1\n" || len(r.Outputs) != 1 || r.Outputs[0].Path != "outputs/report.md" || r.Outputs[0].MIME != "text/markdown; charset=utf-8" {
			t.Errorf("exec command: %+v", r)
		}
		r, _ = tool(t, "exec", "session_id="+id, "code=import os; print(sorted(os.listdir('.')))")
		if !strings.Contains(r.Stdout, "'count.py'") {
			t.Errorf("exec code: %+v", r)
		}
		// A context keeps its state; what it shows comes back as display,
		// images as image content.
		tool(t, "exec", "session_id="+id, "context=main", "code=x = 6")
		r, _ = tool(t, "exec", "session_id="+id, "context=main", "code=x * 7")
		if len(r.Display) != 1 || r.Display[0].MIME != "text/plain" || r.Display[0].Data != "42" {
			t.Errorf("context: %+v", r)
		}
		png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
		_, a = tool(t, "exec", "session_id="+id, "context=main", "code=import base64\nclass Dot:\n    def _repr_png_(self): return base64.b64decode('"+png+"')\nDot()")
		if len(a.Content) != 2 || a.Content[1].Type != "image" || a.Content[1].MIMEType != "image/png" || a.Content[1].Data != png {
			t.Errorf("image content: %+v", a.Content)
		}
		r, _ = tool(t, "read_file", "session_id="+id, "path=out.txt")
		if r.Content != "3" {
			t.Errorf("read_file: %+v", r)
		}
		r, _ = tool(t, "list_files", "session_id="+id, "recursive=true")
		var paths []string
		for _, e := range r.Entries {
			paths = append(paths, e.Type+":"+e.Path)
		}
		for _, want := range []string{"file:count.py", "dir:data", "file:data/in.txt", "file:out.txt"} {
			if !slices.Contains(paths, want) {
				t.Errorf("list_files lacks %s: %v", want, paths)
			}
		}
		_, a = tool(t, "exec", "session_id="+id, `argv=["reboot"]`)
		if text := errorText(a); !strings.Contains(text, "commands/commands.denied") {
			t.Errorf("denied exec: %+v", a)
		}
		_, a = tool(t, "exec", "session_id="+id)
		if text := errorText(a); !strings.Contains(text, "exactly one of command, argv or code") {
			t.Errorf("no command: %+v", a)
		}
		_, a = tool(t, "read_file", "session_id="+id, "path=../../etc/passwd")
		if !a.IsError {
			t.Errorf("read outside the workspace: %+v", a)
		}
		if _, a := tool(t, "reset_session", "session_id="+id); a.IsError {
			t.Fatalf("reset: %+v", a)
		}
		r, _ = tool(t, "list_files", "session_id="+id)
		if slices.ContainsFunc(r.Entries, func(e struct{ Path, Type string }) bool { return e.Path == "out.txt" }) {
			t.Errorf("files after reset: %+v", r.Entries)
		}
		var closed struct{ Closed bool }
		if _, a := tool(t, "close_session", "session_id="+id); a.IsError || json.Unmarshal(a.Structured, &closed) != nil || !closed.Closed {
			t.Errorf("close: %+v", a)
		}
		_, a = tool(t, "exec", "session_id="+id, "command=ls")
		if text := errorText(a); !strings.Contains(text, "no session") {
			t.Errorf("exec after close: %+v", a)
		}
	})
}
