package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// openAPIDoc is the part of the OpenAPI document the conformance check
// reads.
type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Paths   map[string]map[string]struct {
		OperationID string `json:"operationId"`
		Responses   map[string]struct {
			Content map[string]struct {
				Schema *struct {
					Ref string `json:"$ref"`
				} `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]*jsonschema.Schema `json:"schemas"`
	} `json:"components"`
}

// conformance sends requests to the daemon and checks every answer
// against the OpenAPI document it serves: the status is documented for
// the route, the content type is one the document gives, and every JSON
// body (and every NDJSON line) validates against its schema.
type conformance struct {
	t       *testing.T
	hc      *http.Client
	doc     openAPIDoc
	schemas map[string]*jsonschema.Resolved
	covered map[string]bool // "operationId status"
}

func newConformance(t *testing.T, socket string) *conformance {
	c := &conformance{t: t, schemas: map[string]*jsonschema.Resolved{}, covered: map[string]bool{}, hc: unixHTTP(socket)}
	_, body := c.do("GET", "/v1/openapi.json", "", nil, "")
	if err := json.Unmarshal(body, &c.doc); err != nil || !strings.HasPrefix(c.doc.OpenAPI, "3.") {
		t.Fatalf("the document: %v (openapi %q)", err, c.doc.OpenAPI)
	}
	// A validator from outside the project reads it as OpenAPI too.
	validator := exec.Command("node", testutil.NPMTool(t, "validate-openapi.mjs"), "-")
	validator.Stdin = bytes.NewReader(body)
	if out, err := validator.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "valid") {
		t.Fatalf("@readme/openapi-parser: %v\n%s", err, out)
	}
	for name, s := range c.doc.Components.Schemas {
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		c.schemas["#/components/schemas/"+name] = r
	}
	// The check is not vacuous: a body of the wrong shape fails.
	if c.schemas["#/components/schemas/RunResult"].Validate(map[string]any{"exit_code": "0"}) == nil {
		t.Fatal("the RunResult schema accepts a string exit code and no stdout")
	}
	return c
}

var templateParam = regexp.MustCompile(`\{(\w+)\}`)

// operation finds the documented operation for a request.
func (c *conformance) operation(method, path string) (template string, ok bool) {
	for tmpl, ops := range c.doc.Paths {
		if _, has := ops[strings.ToLower(method)]; !has {
			continue
		}
		// The last parameter of a file route is a path that may hold
		// slashes; the others are one segment.
		re := "^" + templateParam.ReplaceAllStringFunc(tmpl, func(p string) string {
			if p == "{path}" || p == "{name}" {
				return ".+"
			}
			return "[^/]+"
		}) + "$"
		if regexp.MustCompile(re).MatchString(path) {
			return tmpl, true
		}
	}
	return "", false
}

// do sends a request and checks the answer against the document.
func (c *conformance) do(method, path, accept string, body []byte, contentType string) (int, []byte) {
	t := c.t
	t.Helper()
	req, _ := http.NewRequest(method, "http://sandboxd"+path, bytes.NewReader(body))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if c.doc.Paths == nil { // fetching the document itself
		return resp.StatusCode, got
	}
	u, _ := req.URL.Parse(path)
	tmpl, ok := c.operation(method, u.Path)
	if !ok {
		t.Errorf("%s %s: not in the document", method, u.Path)
		return resp.StatusCode, got
	}
	op := c.doc.Paths[tmpl][strings.ToLower(method)]
	status := fmt.Sprint(resp.StatusCode)
	r, documented := op.Responses[status]
	if !documented {
		if resp.StatusCode < 400 {
			t.Errorf("%s %s: status %d is not documented for %s", method, path, resp.StatusCode, op.OperationID)
			return resp.StatusCode, got
		}
		r = op.Responses["default"]
	}
	c.covered[op.OperationID+" "+status] = true
	where := fmt.Sprintf("%s %s (%s) %d", method, path, op.OperationID, resp.StatusCode)
	if len(r.Content) == 0 {
		if len(got) != 0 {
			t.Errorf("%s: a body where the document has none: %.200s", where, got)
		}
		return resp.StatusCode, got
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	mt, ok := r.Content[media]
	if !ok {
		t.Errorf("%s: content type %q is not documented", where, media)
		return resp.StatusCode, got
	}
	if mt.Schema == nil {
		return resp.StatusCode, got
	}
	schema := c.schemas[mt.Schema.Ref]
	if schema == nil {
		t.Errorf("%s: no schema %s", where, mt.Schema.Ref)
		return resp.StatusCode, got
	}
	docs := [][]byte{got}
	if media == api.ContentTypeNDJSON {
		docs = bytes.Split(bytes.TrimSpace(got), []byte("\n"))
	}
	for _, d := range docs {
		var v any
		if err := json.Unmarshal(d, &v); err != nil {
			t.Errorf("%s: not JSON: %v: %.200s", where, err, d)
			continue
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("%s: %.300s\ndoes not match %s: %v", where, d, mt.Schema.Ref, err)
		}
	}
	return resp.StatusCode, got
}

func (c *conformance) json(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	return c.do(method, path, "", b, "application/json")
}

// TestOpenAPI exercises every route of the API and checks each answer,
// successes and errors, against /v1/openapi.json; every operation the
// document lists must have been answered with its success status.
func TestOpenAPI(t *testing.T) {
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly + desktopLanguage, Extra: `policy "commands" {}
policy "review" {
  plugin  = "example"
  mode    = "ask"
  options = { words = "NEEDS_REVIEW", severity = "error" }
}
approvals {
  allow_self = true # the test asks and decides over one socket
}
http { listen = "127.0.0.1:0" }`})
	c := newConformance(t, d.Socket)
	want := func(status int, got int, body []byte) {
		t.Helper()
		if got != status {
			t.Fatalf("status %d, want %d: %s", got, status, body)
		}
	}

	for _, p := range []string{"/v1/health", "/v1/languages", "/v1/pools", "/v1/plugins", "/v1/secrets", "/v1/stats", "/v1/stats/history", "/metrics", "/v1/openapi.json"} {
		code, body := c.do("GET", p, "", nil, "")
		want(200, code, body)
	}
	code, body := c.json("POST", "/v1/run", api.RunRequest{Language: "python", Code: "print('hi')"})
	want(200, code, body)
	code, body = c.do("POST", "/v1/run", api.ContentTypeNDJSON, []byte(`{"language":"python","code":"import sys; print(1); print(2, file=sys.stderr); sys.exit(3)"}`), "application/json")
	want(200, code, body)
	code, body = c.json("POST", "/v1/validate", api.ValidateRequest{Language: "python", Code: "print(1)"})
	want(200, code, body)
	code, body = c.json("POST", "/v1/images/build", api.ImageBuildRequest{Languages: []string{"bash"}})
	want(200, code, body)
	code, body = c.do("POST", "/v1/images/build", api.ContentTypeNDJSON, []byte(`{"languages":["bash"]}`), "application/json")
	want(200, code, body)
	code, body = c.do("GET", "/v1/executions?limit=5&language=python", "", nil, "")
	want(200, code, body)

	// Approvals: two runs the review policy holds, one denied and one
	// approved over the API.
	for _, verb := range []string{"deny", "approve"} {
		ran := make(chan error, 1)
		go func() {
			_, err := d.Client().Run(context.Background(), api.RunRequest{Language: "python", Code: "NEEDS_REVIEW = 1"})
			ran <- err
		}()
		var id string
		waitFor(t, "an approval pending", func() bool {
			list, err := d.Client().Approvals(ctx(t), api.ApprovalPending)
			if err == nil && len(list) == 1 {
				id = list[0].ID
			}
			return id != ""
		})
		for _, step := range []struct {
			method, path, body string
			status             int
		}{
			{"GET", "/v1/approvals", "", 200},
			{"GET", "/v1/approvals?state=pending", "", 200},
			{"GET", "/v1/approvals?state=maybe", "", 400},
			{"GET", "/v1/approvals/" + id, "", 200},
			{"GET", "/v1/approvals/ap-none", "", 404},
			{"POST", "/v1/approvals/" + id + "/" + verb, `{"reason":"conformance"}`, 200},
			{"POST", "/v1/approvals/" + id + "/approve", "", 409},
		} {
			code, body := c.do(step.method, step.path, "", []byte(step.body), "application/json")
			if code != step.status {
				t.Errorf("%s %s: status %d, want %d: %.300s", step.method, step.path, code, step.status, body)
			}
		}
		if err := <-ran; (verb == "approve") != (err == nil) {
			t.Errorf("the run after %s: %v", verb, err)
		}
	}

	code, body = c.json("POST", "/v1/sessions", api.SessionRequest{Language: "python"})
	want(201, code, body)
	var s api.Session
	_ = json.Unmarshal(body, &s)
	sp := "/v1/sessions/" + s.ID
	t.Cleanup(func() { _ = d.Client().DeleteSession(context.Background(), s.ID) })
	for _, step := range []struct {
		method, path, accept, body, ctype string
		status                            int
	}{
		{"GET", "/v1/sessions", "", "", "", 200},
		{"GET", "/v1/executions?kind=run&outcome=ok", "", "", "", 200},
		{"POST", "/v1/dashboard/login", "", "", "", 201},
		{"GET", sp, "", "", "", 200},
		{"PUT", sp + "/files/dir/a.txt?mode=0600", "", "hello", "application/octet-stream", 201},
		{"POST", sp + "/exec", "", `{"argv":["cat","dir/a.txt"]}`, "application/json", 200},
		{"POST", sp + "/exec", api.ContentTypeNDJSON, `{"code":"print(open('dir/a.txt').read())"}`, "application/json", 200},
		{"GET", sp + "/files?recursive=true", "", "", "", 200},
		{"GET", sp + "/files/dir/a.txt", "", "", "", 200},
		{"GET", sp + "/files/dir", "", "", "", 200}, // a tar archive
		{"DELETE", sp + "/files/dir/a.txt", "", "", "", 204},
		{"POST", sp + "/exec", "", `{"context":"main","code":"x = 1\nx + 1"}`, "application/json", 200},
		{"GET", sp + "/contexts", "", "", "", 200},
		{"POST", sp + "/contexts/main/restart", "", "", "", 200},
		{"DELETE", sp + "/contexts/main", "", "", "", 204},
		{"DELETE", sp + "/contexts/main", "", "", "", 404},
		{"POST", sp + "/snapshot", "", `{"name":"conformance"}`, "application/json", 201},
		{"POST", sp + "/snapshot", "", `{"name":"conformance"}`, "application/json", 409},
		{"GET", "/v1/snapshots", "", "", "", 200},
		{"GET", "/v1/snapshots/conformance", "", "", "", 200},
		{"POST", sp + "/fork", "", `{"count":1}`, "application/json", 201},
		{"DELETE", "/v1/snapshots/conformance", "", "", "", 204},
		{"GET", "/v1/snapshots/conformance", "", "", "", 404},
		{"POST", sp + "/reset", "", "", "", 200},
		{"PATCH", sp + "/network", "", `{"allow":[]}`, "application/json", 200},
		{"GET", sp + "/ports", "", "", "", 200},
		{"GET", sp + "/metrics", "", "", "", 200},
		{"POST", sp + "/freeze", "", "", "", 200},
		{"POST", sp + "/resume", "", "", "", 200},
		{"POST", sp + "/pause", "", "", "", 200},
		{"POST", sp + "/resume", "", "", "", 200},
		{"POST", "/v1/sessions/s-none/pause", "", "", "", 404},
		{"POST", sp + "/ports/8000/preview", "", `{"ttl":"10m"}`, "application/json", 201},
		{"POST", sp + "/ports/70000/preview", "", "", "", 400},
		{"DELETE", sp + "/previews", "", "", "", 204},
		// Errors carry the error body.
		{"POST", sp + "/exec", "", `{"argv":["reboot"]}`, "application/json", 403},
		// A stream has begun (200) by the time a policy answers: the
		// denial is its error event.
		{"POST", sp + "/exec", api.ContentTypeNDJSON, `{"argv":["reboot"]}`, "application/json", 200},
		{"GET", sp + "/files/nope", "", "", "", 404},
		{"POST", sp + "/exec", "", `{"argv":`, "application/json", 400},
		{"DELETE", sp, "", "", "", 204},
		{"GET", sp, "", "", "", 404},
		{"POST", "/v1/run", "", `{"language":"cobol","code":"x"}`, "application/json", 400},
		{"GET", "/v1/executions?limit=0", "", "", "", 400},

		{"POST", "/v1/projects", "", `{"name":"conformance"}`, "application/json", 201},
		{"GET", "/v1/projects", "", "", "", 200},
		{"GET", "/v1/projects/conformance", "", "", "", 200},
		{"POST", "/v1/projects/conformance/files?name=data.csv", "", "a,b\n1,2\n", "application/octet-stream", 201},
		{"GET", "/v1/projects/conformance/files/data.csv", "", "", "", 200},
		{"DELETE", "/v1/projects/conformance/files/data.csv", "", "", "", 204},
		{"DELETE", "/v1/projects/conformance", "", "", "", 204},
		{"GET", "/v1/projects/conformance", "", "", "", 404},
	} {
		code, body := c.do(step.method, step.path, step.accept, []byte(step.body), step.ctype)
		if code != step.status {
			t.Errorf("%s %s: status %d, want %d: %.300s", step.method, step.path, code, step.status, body)
		}
	}

	// The terminals are WebSockets: their 101 is the upgrade.
	code, body = c.json("POST", "/v1/sessions", api.SessionRequest{Language: "python"})
	want(201, code, body)
	var ts api.Session
	_ = json.Unmarshal(body, &ts)
	t.Cleanup(func() { _ = d.Client().DeleteSession(context.Background(), ts.ID) })

	// A watch streams until its directory goes.
	if _, err := d.Client().Exec(ctx(t), ts.ID, api.ExecRequest{Argv: []string{"mkdir", "w"}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(time.Second)
		_, _ = d.Client().Exec(context.Background(), ts.ID, api.ExecRequest{Argv: []string{"sh", "-c", "touch w/f && rm -r w"}})
	}()
	code, body = c.do("GET", "/v1/sessions/"+ts.ID+"/watch?path=w", api.ContentTypeNDJSON, nil, "")
	if want(200, code, body); !bytes.Contains(body, []byte(`"ready"`)) || !bytes.Contains(body, []byte(`"path":"w/f"`)) {
		t.Errorf("watch: %s", body)
	}
	term, err := d.Client().Terminal(ctx(t), ts.ID, []string{"true"}, 24, 80)
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	if end, err := term.Wait(); err != nil || end.ExitCode != 0 {
		t.Errorf("terminal: %+v %v", end, err)
	}
	c.covered["terminal 101"] = true
	term, err = d.Client().RunTerminal(ctx(t), api.RunRequest{Language: "python", Code: "pass"}, 24, 80)
	if err != nil {
		t.Fatalf("run terminal: %v", err)
	}
	if end, err := term.Wait(); err != nil || end.ExitCode != 0 {
		t.Errorf("run terminal: %+v %v", end, err)
	}
	c.covered["runTerminal 101"] = true
	fwd, err := d.Client().ConnectPort(ctx(t), ts.ID, 1)
	if err != nil {
		t.Fatalf("connect port: %v", err)
	}
	_, _ = io.ReadAll(fwd) // nothing listens on port 1: refused after the upgrade
	c.covered["connectPort 101"] = true

	// A desktop session's screen, and its live view (VNC: the server
	// speaks first, "RFB 003.008").
	code, body = c.json("POST", "/v1/sessions", api.SessionRequest{Language: "desktop"})
	want(201, code, body)
	var ds api.Session
	_ = json.Unmarshal(body, &ds)
	t.Cleanup(func() { _ = d.Client().DeleteSession(context.Background(), ds.ID) })
	dp := "/v1/sessions/" + ds.ID + "/desktop"
	for _, step := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", dp, "", 200},
		{"GET", dp + "/screenshot", "", 200},
		{"POST", dp + "/actions", `{"action":"move","x":1,"y":2}`, 200},
		{"POST", dp + "/actions", `{"action":"click","x":5000,"y":0}`, 400},
		{"POST", dp + "/actions", `{"action":"fly"}`, 400},
		{"POST", dp + "/preview", `{"ttl":"10m"}`, 201},
		{"GET", "/v1/sessions/" + ts.ID + "/desktop", "", 400}, // python's: no desktop
	} {
		code, body := c.do(step.method, step.path, "", []byte(step.body), "application/json")
		if code != step.status {
			t.Errorf("%s %s: status %d, want %d: %.300s", step.method, step.path, code, step.status, body)
		}
	}
	vnc, err := d.Client().DesktopLiveView(ctx(t), ds.ID, false)
	if err != nil {
		t.Fatalf("the desktop's live view: %v", err)
	}
	hello := make([]byte, 12)
	if _, err := io.ReadFull(vnc, hello); err != nil || string(hello) != "RFB 003.008\n" {
		t.Errorf("the live view's first bytes: %q %v", hello, err)
	}
	vnc.Close()
	c.covered["desktopLiveView 101"] = true

	// The event stream does not end: its first event is enough.
	resp, err := unixHTTP(d.Socket).Get("http://sandboxd/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if resp.StatusCode != 200 || first != "event: stats\n" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("events: %d %q", resp.StatusCode, first)
	}
	c.covered["events 200"] = true

	// Every documented operation was answered with its success status.
	var missed []string
	for _, ops := range c.doc.Paths {
		for _, op := range ops {
			for status := range op.Responses {
				if status != "default" && !c.covered[op.OperationID+" "+status] {
					missed = append(missed, op.OperationID+" "+status)
				}
			}
		}
	}
	sort.Strings(missed)
	if len(missed) > 0 {
		t.Errorf("operations the test never saw succeed: %v", missed)
	}
}
