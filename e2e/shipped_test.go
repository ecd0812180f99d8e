package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestShippedConfigs starts sandboxd with sandboxd.hcl and with each
// configuration of examples/, exactly as they ship, and asks every GET
// route its own OpenAPI document lists: each answers with the status the
// document gives (or not_found, for an id no one made), in the media type
// it names, and decodes. /metrics has every series once, a series per
// block for blocks that share a plugin (python and python3.11) or an image
// (c and cpp), and lints clean. The files' own addresses must be free
// (the dashboard's 127.0.0.1:7070, the E2B listener's 127.0.0.1:4982);
// examples/kubernetes.hcl needs `make cluster`.
func TestShippedConfigs(t *testing.T) {
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append([]string{filepath.Join("..", "sandboxd.hcl")}, examples...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			file, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			hcl := readFile(t, file)
			var images []string // all there, so that the daemon builds none
			for _, m := range regexp.MustCompile(`(?m)^\s*image\s*=\s*"([^"]+)"`).FindAllStringSubmatch(hcl, -1) {
				images = append(images, m[1])
			}
			testutil.RequireDocker(t, images...)
			if strings.Contains(hcl, `runtime "kubernetes"`) {
				testutil.RequireCluster(t)
			}
			d := testutil.StartDaemon(t, testutil.Options{ConfigFile: file})
			getEveryRoute(t, d.Socket)
			checkExposition(t, d.Socket, hcl)
			if strings.Contains(hcl, "\ne2b {") {
				getE2BList(t, hcl)
			}
			logged, err := os.ReadFile(d.Log.Name())
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(logged), "\n") {
				if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
					t.Errorf("the file as it ships: %s", line)
				}
			}
		})
	}
}

// getEveryRoute GETs each GET route of the daemon's OpenAPI document,
// with "none" for each path parameter.
func getEveryRoute(t *testing.T, socket string) {
	t.Helper()
	code, body := rawRequest(t, socket, http.MethodGet, "/v1/openapi.json", "", "")
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]any `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil || len(doc.Paths) < 20 {
		t.Fatalf("GET /v1/openapi.json: %d %.300s", code, body)
	}
	c := unixHTTP(socket)
	asked := 0
	for path, methods := range doc.Paths {
		get, ok := methods["get"]
		if !ok {
			continue
		}
		asked++
		url := strings.ReplaceAll(path, "{port}", "8000") // a number, checked first
		url = regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(url, "none")
		want := http.StatusOK
		var media []string
		for status, r := range get.Responses {
			if status[0] == '1' || status[0] == '2' {
				want = map[string]int{"101": http.StatusUpgradeRequired}[status] // a WebSocket asked without one
				if want == 0 {
					want = http.StatusOK
				}
				for m := range r.Content {
					media = append(media, m)
				}
			}
		}
		if strings.Contains(path, "{id}") {
			want = http.StatusNotFound
		}
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://sandboxd"+url, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			mediaType, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
			if resp.StatusCode != want {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, want)
			}
			if want != http.StatusOK {
				var e struct{ Error api.Error }
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
					t.Errorf("the error does not decode as {error: {code, message}}: %v %+v", err, e)
				}
				return
			}
			if !slices.Contains(media, mediaType) {
				t.Errorf("Content-Type %q, the document says %v", mediaType, media)
			}
			switch mediaType {
			case "application/json":
				var v any
				if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v == nil {
					t.Errorf("decoding: %v (%v)", err, v)
				}
			case "text/event-stream": // its first line, then hang up
				line, err := bufio.NewReader(resp.Body).ReadString('\n')
				if err != nil || !regexp.MustCompile(`^(:|event:|data:|id:|retry:)`).MatchString(line) {
					t.Errorf("not an event stream: %q %v", line, err)
				}
			}
		})
	}
	if asked < 20 {
		t.Errorf("the document lists %d GET routes", asked)
	}
}

// checkExposition scrapes /metrics: every series once, one
// sandboxd_plugin_up per language and policy block of hcl, and lint clean.
func checkExposition(t *testing.T, socket, hcl string) {
	t.Helper()
	families, body := scrapeText(t, socket)
	blocks := map[string]int{} // sandboxd_plugin_up series by block
	for name, f := range families {
		seen := map[string]bool{}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
				if name == "sandboxd_plugin_up" && l.GetName() == "block" {
					blocks[l.GetValue()]++
				}
			}
			slices.Sort(labels)
			key := strings.Join(labels, ",")
			if seen[key] {
				t.Errorf("%s{%s} appears twice", name, key)
			}
			seen[key] = true
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^(language|policy) "([^"]+)"`).FindAllStringSubmatch(hcl, -1) {
		if blocks[m[2]] != 1 {
			t.Errorf("%s %q has %d sandboxd_plugin_up series, want 1", m[1], m[2], blocks[m[2]])
		}
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// getE2BList lists sandboxes through the E2B listener of hcl, with its
// first key, as E2B's SDKs do (GET /sandboxes and /v2/sandboxes).
func getE2BList(t *testing.T, hcl string) {
	t.Helper()
	listen := regexp.MustCompile(`(?s)\ne2b \{[^}]*?\blisten\s*=\s*"([^"]+)"`).FindStringSubmatch(hcl)
	key := regexp.MustCompile(`api_keys\s*=\s*\["([^"]+)"`).FindStringSubmatch(hcl)
	if listen == nil || key == nil {
		t.Fatal("the e2b block has no listen address or key")
	}
	addr := listen[1]
	for _, path := range []string{"/sandboxes", "/v2/sandboxes"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set("X-API-Key", key[1])
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		var list []map[string]any
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, err)
		}
	}
}
