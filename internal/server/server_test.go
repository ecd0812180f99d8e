package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
	"github.com/sandboxd/sandboxd/internal/dashboard"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/internal/stats"
	"github.com/sandboxd/sandboxd/runtime/fake"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// newServer is the API on a daemon on the fake runtime (no Docker).
func newServer(t *testing.T) (*httptest.Server, *fake.Runtime) {
	t.Helper()
	return newServerWith(t, daemontest.Options{Languages: daemontest.Bash})
}

// newServerWith is newServer with the daemon's options.
func newServerWith(t *testing.T, o daemontest.Options) (*httptest.Server, *fake.Runtime) {
	t.Helper()
	d, rt := daemontest.NewWith(t, o)
	dash, err := dashboard.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(d, dash, hclog.NewNullLogger()))
	t.Cleanup(srv.Close)
	return srv, rt
}

func post(t *testing.T, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp, b.String()
}

// Every error leaves the API as its status and code, decided in one
// place (internal/wire's table); a run answers its result.
func TestErrorsMapToStatusAndCode(t *testing.T) {
	srv, _ := newServer(t)
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/run", `{"language":"cobol","code":"x"}`, 400, api.CodeUnknownLanguage},
		{"POST", "/v1/run", `{"language":"bash","code":"x","nope":1}`, 400, api.CodeInvalidRequest},
		{"POST", "/v1/run", `{"language":`, 400, api.CodeInvalidRequest},
		{"GET", "/v1/sessions/s-none", "", 404, api.CodeNotFound},
		{"GET", "/v1/nowhere", "", 404, api.CodeNotFound},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body api.ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || err != nil || body.Error.Code != c.code || body.Error.Message == "" {
			t.Errorf("%s %s %s: %d %+v %v, want %d %s", c.method, c.path, c.body, resp.StatusCode, body, err, c.status, c.code)
		}
	}
	resp, body := post(t, srv.URL+"/v1/run", `{"language":"bash","code":"echo hi; exit 2"}`)
	var res api.RunResult
	if err := json.Unmarshal([]byte(body), &res); resp.StatusCode != 200 || err != nil || res.Stdout != "hi\n" || res.ExitCode != 2 {
		t.Errorf("a run: %d %s", resp.StatusCode, body)
	}
}

// A run streamed as NDJSON: its output as events, then the result.
func TestRunStreams(t *testing.T) {
	srv, _ := newServer(t)
	resp, body := post(t, srv.URL+"/v1/run", `{"language":"bash","code":"echo one; echo two >&2"}`, "Accept", "application/x-ndjson")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	var last struct {
		Type   string         `json:"type"`
		Result *api.RunResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "result" || last.Result == nil || last.Result.Stdout != "one\n" {
		t.Fatalf("the last event is not the result: %s", body)
	}
	if !strings.Contains(body, `"type":"stdout"`) || !strings.Contains(body, `"type":"stderr"`) {
		t.Errorf("no output events: %s", body)
	}
}

// Health is 200 ok with the engine up, and 503 degraded within 5 s of
// it stopping (the engine's probe is at most 2 s old).
func TestHealthStatus(t *testing.T) {
	srv, rt := newServer(t)
	health := func() (int, api.Health) {
		resp, err := http.Get(srv.URL + "/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h api.Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, h
	}
	if code, h := health(); code != 200 || h.Status != "ok" || !h.Docker.OK {
		t.Fatalf("health: %d %+v", code, h)
	}
	rt.Stop()
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		code, h := health()
		if code == 503 && h.Status == "degraded" && !h.Docker.OK && h.Docker.Error != "" {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("health 5 s after the engine stopped: %d %+v", code, h)
		}
	}
}

// An image being built answers 503 with Retry-After.
func TestImageBuildingSaysWhenToRetry(t *testing.T) {
	w := httptest.NewRecorder()
	writeError(w, &api.Error{Code: api.CodeImageBuilding, Message: "building"})
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "15" {
		t.Fatalf("%d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
}

// A watch streams what changes in a session's workspace as NDJSON, ready
// first; a client that stops reading costs the sandbox nothing but the
// events it misses, said as an overflow.
func TestWatchStreamsChanges(t *testing.T) {
	srv, _ := newServer(t)
	resp, body := post(t, srv.URL+"/v1/sessions", `{"language":"bash"}`)
	var sess api.Session
	if err := json.Unmarshal([]byte(body), &sess); resp.StatusCode != 201 || err != nil {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	watch := func(ctx context.Context, path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/sessions/"+sess.ID+"/watch?recursive=true&path="+path, nil)
		return http.DefaultClient.Do(req)
	}
	if resp, err := watch(context.Background(), "missing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("watching a directory that is not there: %v %v", resp, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := watch(ctx, "")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.ContentTypeNDJSON {
		t.Fatalf("watch: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var seen []string
	exec := func(script string) {
		go func() {
			r, err := http.Post(srv.URL+"/v1/sessions/"+sess.ID+"/exec", "application/json", strings.NewReader(`{"argv":["sh","-c","`+script+`"]}`))
			if err == nil {
				r.Body.Close()
			}
		}()
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev api.FileEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev.Type+" "+ev.Path)
		switch {
		case ev.Type == api.FileEventReady:
			exec("mkdir -p d/e && echo early > d/e/early")
		case ev.Type == "create" && ev.Path == "d/e/early":
			// A new directory's watch is set once its creation is told.
			exec("echo x > d/f && rm d/f")
		}
		if ev.Type == "remove" && ev.Path == "d/f" {
			break
		}
	}
	if seen[0] != "ready " || !slices.Contains(seen, "create d") || !slices.Contains(seen, "write d/f") {
		t.Fatalf("seen %v (%v)", seen, sc.Err())
	}
}

// An image build streamed: the builds' lines as progress events, then
// the result, each image's entry in the wire's form.
func TestImageBuildStreams(t *testing.T) {
	images := t.TempDir()
	if err := os.MkdirAll(filepath.Join(images, "bash"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(images, "bash", "Dockerfile"), []byte("FROM fake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := newServerWith(t, daemontest.Options{Languages: daemontest.Bash, ImagesDir: images})
	resp, body := post(t, srv.URL+"/v1/images/build", `{"languages":["bash"]}`, "Accept", "application/x-ndjson")
	lines := strings.Split(strings.TrimSpace(body), "\n")
	var first, last api.ImageBuildEvent
	if resp.StatusCode != 200 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
	if first.Type != "progress" || first.Image != "sandboxd/bash:latest" || first.Line != "Step 1/1 : FROM fake" {
		t.Errorf("the first event: %+v", first)
	}
	if last.Type != api.EventResult || last.Result == nil || len(last.Result.Images) != 1 {
		t.Fatalf("the last event: %s", body)
	}
	if b := last.Result.Images[0]; b.Language != "bash" || b.Image != "sandboxd/bash:latest" || b.Error != "" || b.Note != "" || b.DurationMS <= 0 {
		t.Errorf("the image's entry: %+v", b)
	}
}

// Every GET answers its declared status with a body that decodes, no
// field unknown, into the API type the route table declares: what the
// daemon keeps goes out only as internal/wire maps it (onWire refuses
// anything else with a 500).
func TestAnswersAreTheDeclaredAPITypes(t *testing.T) {
	srv, _ := newServer(t)
	created := func(path, body string) string {
		t.Helper()
		resp, out := post(t, srv.URL+path, body, "Content-Type", "application/json")
		var v struct{ ID string }
		if resp.StatusCode != 201 || json.Unmarshal([]byte(out), &v) != nil || v.ID == "" {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
		}
		return v.ID
	}
	session := created("/v1/sessions", `{"language":"bash"}`)
	ids := map[string]string{
		"/v1/sessions/":  session,
		"/v1/projects/":  created("/v1/projects", `{"name":"data"}`),
		"/v1/snapshots/": created("/v1/sessions/"+session+"/snapshot", `{"name":"before"}`),
	}
	checked := 0
	for _, r := range routes() {
		method, path, _ := strings.Cut(r.pattern, " ")
		if method != "GET" || r.result.json == nil {
			continue
		}
		if strings.Contains(path, "/desktop") {
			continue // a screen needs an X server: e2e's TestDesktop decodes these
		}
		if before, after, ok := strings.Cut(path, "{id}"); ok {
			if strings.Contains(after, "{") || ids[before] == "" {
				continue
			}
			path = before + ids[before] + after
		}
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(resp.Body)
		dec.DisallowUnknownFields()
		err = dec.Decode(reflect.New(r.result.json).Interface())
		resp.Body.Close()
		if resp.StatusCode != r.status || err != nil {
			t.Errorf("GET %s: %d (want %d), as %s: %v", path, resp.StatusCode, r.status, r.result.json, err)
		}
		checked++
	}
	if checked < 15 {
		t.Errorf("only %d routes checked", checked)
	}
	// An answer to a POST too: a project's file as it landed.
	resp, out := post(t, srv.URL+"/v1/projects/"+ids["/v1/projects/"]+"/files?name=data.csv", "a,b\n")
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var f api.ProjectFile
	if err := dec.Decode(&f); resp.StatusCode != 201 || err != nil || f.Name != "data.csv" {
		t.Errorf("adding a project file: %d %s %v", resp.StatusCode, out, err)
	}
	if err := onWire(map[string][]*api.Session{}); err != nil {
		t.Error(err)
	}
	if onWire([]state.Session{}) == nil || onWire(stats.Figures{}) == nil {
		t.Error("onWire let one of sandboxd's own types out")
	}
}

// A body over maxBody is refused with 413 and the bound once that much
// is read, however much more the client means to send: a gzip body is
// not inflated (Content-Encoding is not one the API takes), so the bound
// is on what is read.
func TestBodiesAreBounded(t *testing.T) {
	srv, _ := newServer(t)
	for _, encoding := range []string{"", "gzip"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			head := "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(maxBody*2) + "\r\n"
			if encoding != "" {
				head += "Content-Encoding: " + encoding + "\r\n"
			}
			_, _ = io.WriteString(conn, head+"\r\n"+`{"language":"bash","code":"`)
			chunk := strings.Repeat("a", 1<<20)
			for range maxBody >> 20 * 2 {
				if _, err := io.WriteString(conn, chunk); err != nil {
					return
				}
			}
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		var body api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&body)
		conn.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || body.Error.Code != api.CodeTooLarge || !strings.Contains(body.Error.Message, fmt.Sprint(maxBody)) {
			t.Errorf("a body of %d bytes (encoding %q): %d %+v", maxBody*2, encoding, resp.StatusCode, body)
		}
	}
}
