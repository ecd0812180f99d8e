package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/dashboard"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/server"
	"github.com/sandboxd/sandboxd/internal/state"
)

func TestMain(m *testing.M) { daemontest.Main(m, "bash") }

// connect is an MCP client connected in memory to the tools, which reach
// a daemon on the fake runtime through its socket, as `sandboxctl mcp`
// does.
func connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	cs, _ := connectWith(t, daemontest.Options{Languages: daemontest.Bash}, nil)
	return cs
}

// connectWith is connect to a daemon configured by o, with the client's
// options.
func connectWith(t *testing.T, o daemontest.Options, opts *mcp.ClientOptions) (*mcp.ClientSession, *daemon.Daemon) {
	t.Helper()
	d, _ := daemontest.NewWith(t, o)
	dash, err := dashboard.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dash.Listening(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "127.0.0.1:7070")
	socket := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.New(d, dash, hclog.NewNullLogger()), ConnContext: principal.ConnContext}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := New(client.New(socket), "test").Connect(ctx, serverEnd, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(ctx, clientEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, d
}

// A run_code call a policy holds for a person tells the agent so, as
// progress, and returns the output once approved.
func TestRunCodeSaysItWaitsForApproval(t *testing.T) {
	progress := make(chan string, 4)
	cs, d := connectWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: `policy "patterns" { mode = "ask" }`},
		&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		}})
	go func() {
		msg := <-progress
		id := strings.Fields(strings.TrimPrefix(msg, "waiting: approval "))[0]
		_, _ = d.Approvals.Decide(strings.TrimSuffix(id, ":"), true, state.Requester{Via: "socket", UID: new(uint32(1000))}, "")
		progress <- msg
	}()
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "echo ok\nexit 0\ncurl x | sh\n"}}
	params.SetProgressToken("t1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_code: %+v %v", res, err)
	}
	if msg := <-progress; !strings.HasPrefix(msg, "waiting: approval ap-") || !strings.Contains(msg, "policy patterns asks a person") {
		t.Errorf("progress: %q", msg)
	}
	// The approval says which agent asked: the MCP client, as it names
	// itself, from this process.
	if list := d.Approvals.List(""); len(list) != 1 || list[0].RequestedBy == nil || list[0].RequestedBy.Client != "mcp: test" || list[0].RequestedBy.PID != os.Getpid() {
		t.Errorf("who asked: %+v", *list[0].RequestedBy)
	}
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return res, out
}

// The tools an agent calls, through to a sandbox and back: languages,
// a run, a session's state across execs, and an error an agent can read.
func TestTools(t *testing.T) {
	cs := connect(t)
	if res, out := call(t, cs, "list_languages", nil); res.IsError || !strings.Contains(toJSON(out), `"bash"`) {
		t.Fatalf("list_languages: %+v %v", res, out)
	}
	if res, out := call(t, cs, "run_code", map[string]any{"language": "bash", "code": "echo hi; exit 4"}); res.IsError || out["stdout"] != "hi\n" || out["exit_code"] != float64(4) {
		t.Fatalf("run_code: %+v %v", res, out)
	}
	res, out := call(t, cs, "create_session", map[string]any{"language": "bash"})
	id, _ := out["session_id"].(string)
	if res.IsError || id == "" {
		t.Fatalf("create_session: %+v %v", res, out)
	}
	call(t, cs, "exec", map[string]any{"session_id": id, "command": "echo kept > f"})
	if res, out := call(t, cs, "exec", map[string]any{"session_id": id, "command": "cat f"}); res.IsError || out["stdout"] != "kept\n" {
		t.Fatalf("exec: %+v %v", res, out)
	}
	if res, out := call(t, cs, "preview_port", map[string]any{"session_id": id, "port": 8000}); res.IsError ||
		!strings.HasPrefix(toJSON(out["url"]), `"http://8000-`+id+`.localhost:7070/?sandboxd_preview=`) {
		t.Fatalf("preview_port: %+v %v", res, out)
	}
	// watch_files returns what a background program changes meanwhile,
	// at the first change when asked.
	call(t, cs, "exec", map[string]any{"session_id": id, "command": "(sleep 0.5; echo built > out.txt) >/dev/null 2>&1 &"})
	if res, out := call(t, cs, "watch_files", map[string]any{"session_id": id, "seconds": 20, "until_first": true}); res.IsError ||
		!strings.Contains(toJSON(out["events"]), `{"path":"out.txt","type":"create"}`) {
		t.Fatalf("watch_files: %+v %v", res, out)
	}
	res, _ = call(t, cs, "run_code", map[string]any{"language": "cobol", "code": "x"})
	if !res.IsError || len(res.Content) == 0 || !strings.Contains(toJSON(res.Content), "no language") {
		t.Fatalf("an unknown language: %+v", res)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The agent's reading: a resource of what the host offers, and per
// language a resource and a prompt with its instructions (the block's, or
// the shipped ones) and facts.
func TestInstructionsAsPromptsAndResources(t *testing.T) {
	langs := daemontest.Bash + `
language "sh" {
  plugin       = "bash"
  image        = "sandboxd/bash:latest"
  instructions = "Only echo here."
}`
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("ghp-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := fmt.Sprintf("secret \"github\" {\n  value_file = %q\n  hosts = [\"api.github.com:443\"]\n}", token)
	cs, _ := connectWith(t, daemontest.Options{Languages: langs, Extra: secret}, nil)
	ctx := context.Background()
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if got := strings.Join(uris, " "); !strings.Contains(got, "sandboxd://host") || !strings.Contains(got, "sandboxd://languages/bash") || !strings.Contains(got, "sandboxd://languages/sh") {
		t.Errorf("resources: %s", got)
	}
	read := func(uri string) string {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(r.Contents) != 1 {
			t.Fatalf("%s: %+v %v", uri, r, err)
		}
		return r.Contents[0].Text
	}
	if text := read("sandboxd://languages/bash"); !strings.Contains(text, "A POSIX shell") || !strings.Contains(text, "- Network: none") || !strings.Contains(text, "run_code` with language \"bash\"") {
		t.Errorf("the bash resource:\n%s", text)
	}
	if text := read("sandboxd://host"); !strings.Contains(text, "| bash |") || !strings.Contains(text, "| sh |") || !strings.Contains(text, "- github: api.github.com:443") {
		t.Errorf("the host resource:\n%s", text)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sh"})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("the sh prompt: %+v %v", p, err)
	}
	if text := p.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(text, "Only echo here.") || strings.Contains(text, "POSIX") {
		t.Errorf("the sh prompt, with the block's instructions:\n%s", text)
	}
}
