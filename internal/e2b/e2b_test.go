package e2b

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/e2b/envd"
	"github.com/sandboxd/sandboxd/internal/e2b/envd/envdconnect"
)

// These tests drive the listener on the fake runtime (the real supervisor
// in the test's process, programs as the test's own): the bookkeeping of
// keys, processes, uploads and watches, without Docker. e2e/e2b_test.go
// runs E2B's SDKs against the real thing.

func TestMain(m *testing.M) { daemontest.Main(m, "bash") }

const keyA, keyB = "e2b_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "e2b_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

type fixture struct {
	t   *testing.T
	srv *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: `policy "commands" {}`})
	h, err := New(d, config.E2B{Listen: "127.0.0.1:0", APIKeys: []string{keyA, keyB},
		Templates: map[string]config.E2BTemplate{
			"base":   {Language: "bash", Env: map[string]string{"FROM_TEMPLATE": "yes"}},
			"served": {Language: "bash", Limits: &config.Limits{Memory: 64 << 20}, Start: []string{"sh", "-c", "echo up > started.txt; exec sleep 60"}},
			"denied": {Language: "bash", Start: []string{"reboot"}},
		}}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return &fixture{t: t, srv: srv}
}

// call makes a control call with key; it returns the status and body.
func (f *fixture) call(key, method, path, body string) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-API-KEY", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *fixture) create(key string) sandboxInfo {
	f.t.Helper()
	status, body := f.call(key, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":60,"metadata":{"k":"v"}}`)
	var in sandboxInfo
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &in) != nil {
		f.t.Fatalf("create: %d %s", status, body)
	}
	return in
}

// agent is a sandbox's agent as the SDKs address it.
type agent struct {
	f       *fixture
	id, tok string
	proc    envdconnect.ProcessClient
	fs      envdconnect.FilesystemClient
}

func (f *fixture) agent(in sandboxInfo) *agent {
	a := &agent{f: f, id: in.SandboxID, tok: in.EnvdAccessToken}
	opts := []connect.ClientOption{connect.WithProtoJSON(), connect.WithInterceptors(a)}
	a.proc = envdconnect.NewProcessClient(http.DefaultClient, f.srv.URL, opts...)
	a.fs = envdconnect.NewFilesystemClient(http.DefaultClient, f.srv.URL, opts...)
	return a
}

// The agent's headers on every call, as the SDKs set them.
func (a *agent) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		a.headers(req.Header())
		return next(ctx, req)
	}
}

func (a *agent) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		a.headers(conn.RequestHeader())
		return conn
	}
}

func (a *agent) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (a *agent) headers(h http.Header) {
	h.Set("E2b-Sandbox-Id", a.id)
	h.Set("E2b-Sandbox-Port", envdPort)
	h.Set("X-Access-Token", a.tok)
}

// http makes a plain call to the agent.
func (a *agent) http(method, path, contentType string, body io.Reader, header ...string) (int, string) {
	a.f.t.Helper()
	req, _ := http.NewRequest(method, a.f.srv.URL+path, body)
	a.headers(req.Header)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestKeysSeeTheirOwnSandboxes(t *testing.T) {
	f := newFixture(t)
	if status, _ := f.call("e2b_not_configured_000000", "GET", "/v2/sandboxes", ""); status != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d", status)
	}
	mine := f.create(keyA)
	if mine.EnvdAccessToken == "" || mine.EnvdVersion != EnvdVersion || mine.State != "running" {
		t.Fatalf("created: %+v", mine)
	}
	_, body := f.call(keyB, "GET", "/v2/sandboxes", "")
	if strings.Contains(body, mine.SandboxID) {
		t.Fatalf("another key lists it: %s", body)
	}
	for _, c := range [][2]string{{"GET", "/sandboxes/" + mine.SandboxID}, {"DELETE", "/sandboxes/" + mine.SandboxID}, {"POST", "/sandboxes/" + mine.SandboxID + "/timeout"}} {
		if status, _ := f.call(keyB, c[0], c[1], `{"timeout":10}`); status != http.StatusNotFound {
			t.Fatalf("another key's %s %s: %d", c[0], c[1], status)
		}
	}
	_, body = f.call(keyA, "GET", "/v2/sandboxes?metadata="+"k%3Dv", "")
	if !strings.Contains(body, mine.SandboxID) {
		t.Fatalf("not listed by its metadata: %s", body)
	}
	if _, body = f.call(keyA, "GET", "/v2/sandboxes?metadata=k%3Dother", ""); strings.Contains(body, mine.SandboxID) {
		t.Fatalf("listed by metadata it has not: %s", body)
	}
	if status, body := f.call(keyA, "POST", "/v2/sandboxes", `{"templateID":"nope"}`); status != http.StatusNotFound || !strings.Contains(body, "base") {
		t.Fatalf("an unknown template: %d %s (should name the ones there are)", status, body)
	}
	if status, _ := f.call(keyA, "DELETE", "/sandboxes/"+mine.SandboxID, ""); status != http.StatusNoContent {
		t.Fatalf("kill: %d", status)
	}
	if status, _ := f.agent(mine).http("GET", "/health", "", nil); status != http.StatusBadGateway {
		t.Fatalf("a killed sandbox's agent: %d", status)
	}
}

// start starts a command and returns its stream once the start event came.
func (a *agent) start(ctx context.Context, req *envd.StartRequest) (*connect.ServerStreamForClient[envd.StartResponse], uint32) {
	a.f.t.Helper()
	st, err := a.proc.Start(ctx, connect.NewRequest(req))
	if err != nil {
		a.f.t.Fatal(err)
	}
	if !st.Receive() || st.Msg().GetEvent().GetStart() == nil {
		a.f.t.Fatalf("no start event: %v %v", st.Msg(), st.Err())
	}
	return st, st.Msg().GetEvent().GetStart().GetPid()
}

// drain reads a stream to its end event: the output and how it ended.
func drain[T interface{ GetEvent() *envd.ProcessEvent }](t *testing.T, recv func() bool, msg func() T, errf func() error) (string, *envd.ProcessEvent_EndEvent) {
	t.Helper()
	var out strings.Builder
	for recv() {
		ev := msg().GetEvent()
		out.Write(ev.GetData().GetStdout())
		out.Write(ev.GetData().GetStderr())
		if end := ev.GetEnd(); end != nil {
			return out.String(), end
		}
	}
	t.Fatalf("the stream ended without an end event: %v (output %q)", errf(), out.String())
	return "", nil
}

func TestProcessesStdinFollowersAndKill(t *testing.T) {
	f := newFixture(t)
	a := f.agent(f.create(keyA))
	ctx := context.Background()
	sh := func(script string) *envd.ProcessConfig {
		return &envd.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", script}, Envs: map[string]string{"FROM_CALL": "too"}}
	}

	st, _ := a.start(ctx, &envd.StartRequest{Process: sh(`echo "$FROM_TEMPLATE $FROM_CALL"; exit 4`)})
	out, end := drain(t, st.Receive, st.Msg, st.Err)
	if out != "yes too\n" || end.GetExitCode() != 4 || !end.GetExited() || end.GetStatus() != "exit status 4" {
		t.Fatalf("output %q, end %v", out, end)
	}

	yes := true
	st, pid := a.start(ctx, &envd.StartRequest{Process: sh("cat"), Stdin: &yes})
	sel := &envd.ProcessSelector{Selector: &envd.ProcessSelector_Pid{Pid: pid}}
	for _, s := range []string{"one\n", "two\n"} {
		if _, err := a.proc.SendInput(ctx, connect.NewRequest(&envd.SendInputRequest{Process: sel, Input: &envd.ProcessInput{Input: &envd.ProcessInput_Stdin{Stdin: []byte(s)}}})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.proc.CloseStdin(ctx, connect.NewRequest(&envd.CloseStdinRequest{Process: sel})); err != nil {
		t.Fatal(err)
	}
	if out, end := drain(t, st.Receive, st.Msg, st.Err); out != "one\ntwo\n" || end.GetExitCode() != 0 {
		t.Fatalf("cat: %q %v", out, end)
	}

	tag := "server"
	bg, pid := a.start(ctx, &envd.StartRequest{Process: sh("echo up; sleep 60"), Tag: &tag})
	follower, err := a.proc.Connect(ctx, connect.NewRequest(&envd.ConnectRequest{Process: &envd.ProcessSelector{Selector: &envd.ProcessSelector_Tag{Tag: tag}}}))
	if err != nil || !follower.Receive() || follower.Msg().GetEvent().GetStart().GetPid() != pid {
		t.Fatalf("connect by tag: %v %v", err, follower.Err())
	}
	list, err := a.proc.List(ctx, connect.NewRequest(&envd.ListRequest{}))
	if err != nil || len(list.Msg.GetProcesses()) != 1 || list.Msg.GetProcesses()[0].GetTag() != tag {
		t.Fatalf("list: %v %v", list, err)
	}
	if _, err := a.proc.SendSignal(ctx, connect.NewRequest(&envd.SendSignalRequest{Process: &envd.ProcessSelector{Selector: &envd.ProcessSelector_Pid{Pid: pid}}, Signal: envd.Signal_SIGNAL_SIGKILL})); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*connect.ServerStreamForClient[envd.StartResponse]{bg} {
		if _, end := drain(t, s.Receive, s.Msg, s.Err); end.GetExited() {
			t.Fatalf("a killed process exited on its own: %v", end)
		}
	}
	if _, end := drain(t, follower.Receive, follower.Msg, follower.Err); end.GetExited() {
		t.Fatalf("the follower saw: %v", end)
	}
	_, err = a.proc.SendSignal(ctx, connect.NewRequest(&envd.SendSignalRequest{Process: &envd.ProcessSelector{Selector: &envd.ProcessSelector_Pid{Pid: pid}}}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("signalling a process that ended: %v", err)
	}

	// The call's deadline is the process's.
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	st, _ = a.start(dctx, &envd.StartRequest{Process: sh("sleep 60")})
	for st.Receive() {
	}
	if connect.CodeOf(st.Err()) != connect.CodeDeadlineExceeded {
		t.Fatalf("past its deadline: %v", st.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, _ := a.proc.List(ctx, connect.NewRequest(&envd.ListRequest{}))
		if len(list.Msg.GetProcesses()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running past its call's deadline: %v", list.Msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestADeniedProcessNeverStarts(t *testing.T) {
	f := newFixture(t)
	a := f.agent(f.create(keyA))
	st, err := a.proc.Start(context.Background(), connect.NewRequest(&envd.StartRequest{Process: &envd.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", "reboot"}}}))
	if err == nil {
		for st.Receive() {
			if st.Msg().GetEvent().GetStart() != nil {
				t.Fatal("a denied command started")
			}
		}
		err = st.Err()
	}
	if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "policy_denied") {
		t.Fatalf("denied: %v", err)
	}
}

func TestUploadsLandWhereTheyAreNamed(t *testing.T) {
	f := newFixture(t)
	a := f.agent(f.create(keyA))
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	for name, data := range map[string]string{"/home/user/deep/dir/a.txt": "alpha", "rel/b.txt": "beta"} {
		w, _ := mw.CreateFormFile("file", name)
		_, _ = w.Write([]byte(data))
	}
	_ = mw.Close()
	status, body := a.http("POST", "/files", mw.FormDataContentType(), &form)
	var written []writeInfo
	if status != http.StatusOK || json.Unmarshal([]byte(body), &written) != nil || len(written) != 2 {
		t.Fatalf("multipart upload: %d %s", status, body)
	}
	paths := []string{written[0].Path, written[1].Path}
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"/home/user/deep/dir/a.txt", "/home/user/rel/b.txt"}) {
		t.Fatalf("written: %v", paths)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("gamma"))
	_ = zw.Close()
	if status, body := a.http("POST", "/files?path=/workspace/c.txt", "application/octet-stream", &gz, "Content-Encoding", "gzip"); status != http.StatusOK || !strings.Contains(body, `"/workspace/c.txt"`) {
		t.Fatalf("gzip upload: %d %s", status, body)
	}
	for p, want := range map[string]string{"deep/dir/a.txt": "alpha", "/home/user/rel/b.txt": "beta", "/workspace/c.txt": "gamma"} {
		if status, body := a.http("GET", "/files?path="+p, "", nil); status != http.StatusOK || body != want {
			t.Fatalf("read %s: %d %q", p, status, body)
		}
	}
	if status, _ := a.http("GET", "/files?path=/home/user/deep", "", nil); status != http.StatusBadRequest {
		t.Fatalf("reading a directory: %d", status)
	}
	list, err := a.fs.ListDir(context.Background(), connect.NewRequest(&envd.ListDirRequest{Path: "/home/user", Depth: 3}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list.Msg.GetEntries() {
		got = append(got, e.GetPath())
	}
	if !slices.Contains(got, "/home/user/deep/dir/a.txt") || slices.Contains(got, "/home/user") {
		t.Fatalf("listing to depth 3: %v", got)
	}
}

func TestPolledWatcherSeesChanges(t *testing.T) {
	f := newFixture(t)
	a := f.agent(f.create(keyA))
	ctx := context.Background()
	if _, err := a.fs.MakeDir(ctx, connect.NewRequest(&envd.MakeDirRequest{Path: "w"})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.fs.MakeDir(ctx, connect.NewRequest(&envd.MakeDirRequest{Path: "w"})); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("making it again: %v", err)
	}
	w, err := a.fs.CreateWatcher(ctx, connect.NewRequest(&envd.CreateWatcherRequest{Path: "/home/user/w"}))
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := a.http("POST", "/files?path=w/new.txt", "application/octet-stream", strings.NewReader("x")); status != http.StatusOK {
		t.Fatal("upload")
	}
	var seen []string
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(seen, "EVENT_TYPE_CREATE new.txt") {
		if time.Now().After(deadline) {
			t.Fatalf("events: %v", seen)
		}
		evs, err := a.fs.GetWatcherEvents(ctx, connect.NewRequest(&envd.GetWatcherEventsRequest{WatcherId: w.Msg.GetWatcherId()}))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Msg.GetEvents() {
			seen = append(seen, ev.GetType().String()+" "+ev.GetName())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := a.fs.RemoveWatcher(ctx, connect.NewRequest(&envd.RemoveWatcherRequest{WatcherId: w.Msg.GetWatcherId()})); err != nil {
		t.Fatal(err)
	}
	_, err = a.fs.GetWatcherEvents(ctx, connect.NewRequest(&envd.GetWatcherEventsRequest{WatcherId: w.Msg.GetWatcherId()}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("a removed watcher: %v", err)
	}
}

func TestTemplatesStartAndNarrow(t *testing.T) {
	f := newFixture(t)
	status, body := f.call(keyA, "POST", "/v2/sandboxes", `{"templateID":"served"}`)
	var in sandboxInfo
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &in) != nil || in.MemoryMB != 64 {
		t.Fatalf("create from a template with limits: %d %s", status, body)
	}
	a := f.agent(in)
	list, err := a.proc.List(context.Background(), connect.NewRequest(&envd.ListRequest{}))
	if err != nil || len(list.Msg.GetProcesses()) != 1 || list.Msg.GetProcesses()[0].GetTag() != startTag {
		t.Fatalf("the start command among the processes: %v %v", list, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if status, body := a.http("GET", "/files?path=started.txt", "", nil); status == http.StatusOK && body == "up\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the start command did not run")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status, body := f.call(keyA, "POST", "/v2/sandboxes", `{"templateID":"denied"}`); status != http.StatusForbidden || !strings.Contains(body, "policy_denied") {
		t.Fatalf("a start command the policies deny: %d %s", status, body)
	}
	if _, body := f.call(keyA, "GET", "/v2/sandboxes", ""); strings.Count(body, "sandboxID") != 1 {
		t.Fatalf("the denied template's sandbox is left: %s", body)
	}
}

func TestResultsGroupAsTheInterpreterDoes(t *testing.T) {
	figure := api.Display{MIME: "image/png", Data: "fig"}
	got := results([]api.Display{figure, {MIME: "image/png", Data: "val", Main: true}, {MIME: "text/html", Data: "<b>", Main: true}, {MIME: "text/plain", Data: "v", Main: true}})
	if len(got) != 2 || got[0]["png"] != "fig" || got[0]["is_main_result"] != false ||
		got[1]["png"] != "val" || got[1]["html"] != "<b>" || got[1]["text"] != "v" || got[1]["is_main_result"] != true {
		t.Fatalf("a figure, then a value with a PNG of its own: %v", got)
	}
	if got := results([]api.Display{figure}); len(got) != 1 || got[0]["is_main_result"] != false {
		t.Fatalf("a figure alone: %v", got)
	}
	// A kernel that marks its final value: a figure with its text, then
	// a value of other types than the figure's.
	got = results([]api.Display{figure, {MIME: "text/plain", Data: "<Figure>"}, {MIME: "text/plain", Data: "'x'", Main: true}})
	if len(got) != 2 || got[0]["png"] != "fig" || got[0]["text"] != "<Figure>" || got[0]["is_main_result"] != false ||
		got[1]["text"] != "x" || got[1]["is_main_result"] != true {
		t.Fatalf("a figure with its text, then a string: %v", got)
	}
	if got := results([]api.Display{figure, {MIME: "text/plain", Data: "<Figure>"}, figure, {MIME: "text/plain", Data: "<Figure>"}}); len(got) != 2 || got[1]["is_main_result"] != false {
		t.Fatalf("two figures and no value: %v", got)
	}
	chart := api.Display{MIME: api.ChartMIME, Data: `{"type":"line"}`}
	got = results([]api.Display{figure, chart, {MIME: "text/plain", Data: "<Figure>"}})
	if len(got) != 1 || got[0]["is_main_result"] != false || got[0]["chart"] == nil || got[0]["text"] != "<Figure>" {
		t.Fatalf("a figure with its chart and no value: %v", got)
	}
	e := cellError(&api.RunResult{ExitCode: 1, Stderr: "Traceback (most recent call last):\n  File \"<cell>\", line 1\nKeyError: 'x'\n"})
	if e["name"] != "KeyError" || e["value"] != "'x'" {
		t.Fatalf("error: %v", e)
	}
	e = cellError(&api.RunResult{ExitCode: 1, Stderr: "ReferenceError: nope is not defined\n    at <cell>:1:1\n    at run (kernel.js:40:5)\n"})
	if e["name"] != "ReferenceError" || e["value"] != "nope is not defined" {
		t.Fatalf("a JavaScript error: %v", e)
	}
	if e := cellError(&api.RunResult{ExitCode: 2}); e["name"] != "Error" || !strings.Contains(e["value"].(string), "2") {
		t.Fatalf("an exit without a traceback: %v", e)
	}
}

// A holder of one sandbox's token cannot make sandboxd read more than a
// message's bound: a 21 MiB JSON body, or a 63 KiB gzip body that
// inflates to 64 MiB, ends resource_exhausted naming the limit.
func TestAgentMessagesAreBounded(t *testing.T) {
	f := newFixture(t)
	a := f.agent(f.create(keyA))
	path := envdconnect.FilesystemStatProcedure
	huge := `{"path":"` + strings.Repeat("a", 21<<20) + `"}`
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	io.WriteString(zw, `{"path":"`)
	io.WriteString(zw, strings.Repeat("a", 64<<20))
	io.WriteString(zw, `"}`)
	zw.Close()
	for name, body := range map[string][]string{"21 MiB of JSON": {huge, ""}, "a gzip bomb": {bomb.String(), "gzip"}} {
		header := []string{"Connect-Protocol-Version", "1"}
		if body[1] != "" {
			header = append(header, "Content-Encoding", body[1])
		}
		status, got := a.http("POST", path, "application/json", strings.NewReader(body[0]), header...)
		if !strings.Contains(got, "resource_exhausted") || !strings.Contains(got, "4194304") {
			t.Errorf("%s: %d %.300s", name, status, got)
		}
	}
	if _, err := a.fs.Stat(context.Background(), connect.NewRequest(&envd.StatRequest{Path: "."})); err != nil {
		t.Errorf("an ordinary call after them: %v", err)
	}
}

func TestPathsAsEnvdTakesThem(t *testing.T) {
	for _, c := range []struct{ in, rel, back string }{
		{"/home/user/a.txt", "a.txt", "/home/user/a.txt"},
		{"/workspace/a.txt", "a.txt", "/workspace/a.txt"},
		{"a.txt", "a.txt", "/home/user/a.txt"},
		{"/home/user", "", "/home/user"},
		{"/tmp/repo/.git", "/tmp/repo/.git", "/tmp/repo/.git"},
		{"/tmp", "/tmp", "/tmp"},
		{"/tmpx", "", ""},
		{"/etc/passwd", "", ""},
	} {
		rel, err := workspacePath(c.in)
		if (err == nil) != (c.back != "") || rel != c.rel {
			t.Errorf("workspacePath(%q) = %q, %v; want %q", c.in, rel, err, c.rel)
			continue
		}
		if err == nil {
			if back := clientPath(rootOf(c.in), rel); back != c.back {
				t.Errorf("clientPath of %q: %q, want %q", c.in, back, c.back)
			}
		}
	}
}

// A sandbox made to pause at its timeout pauses then, and a call to its
// agent wakes it when it was made to resume on traffic; what E2B's API
// refuses is refused.
func TestLifecyclePausesAtTheTimeout(t *testing.T) {
	f := newFixture(t)
	for _, body := range []string{
		`{"templateID":"base","autoPause":true,"autoPauseMemory":false,"autoResume":{"enabled":true}}`,
		`{"templateID":"base","autoResume":{"enabled":true}}`,
		`{"templateID":"base","autoPauseMemory":true}`,
	} {
		if status, got := f.call(keyA, "POST", "/v2/sandboxes", body); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, status, got)
		}
	}
	status, body := f.call(keyA, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":1,"autoPause":true,"autoResume":{"enabled":true}}`)
	var in sandboxInfo
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &in) != nil || in.Lifecycle != (lifecycleInfo{OnTimeout: "pause", AutoResume: true}) ||
		time.Until(in.EndAt) > 2*time.Second {
		t.Fatalf("create: %d %s", status, body)
	}
	state := func() sandboxInfo {
		_, body := f.call(keyA, "GET", "/sandboxes/"+in.SandboxID, "")
		var got sandboxInfo
		_ = json.Unmarshal([]byte(body), &got)
		return got
	}
	// A hibernation (the fake runtime cannot freeze) took over 10 s
	// beside other tests on a loaded machine.
	for deadline := time.Now().Add(time.Minute); state().State != "paused"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not paused at its timeout: %+v", state())
		}
	}
	if status, body := f.call(keyA, "POST", "/sandboxes/"+in.SandboxID+"/timeout", `{"timeout":60}`); status != http.StatusConflict {
		t.Errorf("a paused sandbox's timeout moved: %d %s", status, body)
	}
	if status, body := f.call(keyA, "POST", "/sandboxes/"+in.SandboxID+"/connect", `{"timeout":99999999}`); status != http.StatusBadRequest {
		t.Errorf("connect with a timeout past max_ttl: %d %s", status, body)
	}
	if status, _ := f.agent(in).http("GET", "/health", "", nil); status/100 != 2 {
		t.Fatalf("a call to the agent of a sandbox that resumes on traffic: %d", status)
	}
	if got := state(); got.State != "running" || time.Until(got.EndAt) < 500*time.Millisecond {
		t.Fatalf("woken by a call, with its timeout again: %+v", got)
	}

	// A watch open does not keep a pause without memory from happening.
	status, body = f.call(keyA, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":1,"autoPause":true,"autoPauseMemory":false}`)
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &in) != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.agent(in).fs.CreateWatcher(ctx, connect.NewRequest(&envd.CreateWatcherRequest{Path: "/home/user"})); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); state().State != "paused"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not paused at its timeout, a watch open: %+v", state())
		}
	}
}
