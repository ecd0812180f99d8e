package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/internal/egress/egresstest"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// The E2B listener's keys in these tests: two, to see that one key's
// sandboxes are not another's.
const (
	e2bKey      = "e2b_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	e2bOtherKey = "e2b_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// e2bDaemon starts sandboxd with an e2b block, and extra HCL; it returns
// the listener's URL.
func e2bDaemon(t *testing.T, extra ...string) (*testutil.Daemon, string) {
	t.Helper()
	d := testutil.StartDaemon(t, testutil.Options{Languages: pythonOnly + `
language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 0
  }
}
language "typescript" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 0
  }
}
language "r" {
  image = "sandboxd/code-interpreter:latest"
  pool {
    min_idle = 0
  }
}
language "java" {
  image = "sandboxd/java:latest"
  pool {
    min_idle = 0
  }
}
# As examples/e2b.hcl has it: the Code Interpreter's template.
language "code-interpreter" {
  plugin   = "python"
  image    = "sandboxd/code-interpreter:latest"
  contexts = ["node", "typescript", "r", "java", "bash"]
  pool {
    min_idle = 1
  }
  limits {
    pids = 512
  }
}`, Defaults: `timeout = "60s"`, Extra: fmt.Sprintf(`
e2b {
  listen   = "127.0.0.1:0"
  api_keys = [%q, %q]
}
policy "commands" {}
sessions { max_transfer = "1MiB" }
%s
`, e2bKey, e2bOtherKey, strings.Join(extra, "\n"))})
	return d, e2bURL(t, d)
}

// e2bURL is where the daemon last said its E2B listener is. The line may
// come a moment after the socket answers healthy: it is waited for.
func e2bURL(t *testing.T, d *testutil.Daemon) string {
	t.Helper()
	said := regexp.MustCompile(`E2B-compatible API on (http://127\.0\.0\.1:\d+)`)
	var all [][]string
	for deadline := time.Now().Add(10 * time.Second); all == nil; time.Sleep(20 * time.Millisecond) {
		if all = said.FindAllStringSubmatch(d.Logs(), -1); all == nil && time.Now().After(deadline) {
			t.Fatalf("sandboxd did not say where the E2B listener is:\n%s", d.Logs())
		}
	}
	return all[len(all)-1][1]
}

// e2bCall makes one HTTP call; a "Host" header sets the request's Host.
func e2bCall(t *testing.T, method, url string, header map[string]string, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// e2bCreate makes a python sandbox with key, killed when the test ends;
// it returns its id and access token.
func e2bCreate(t *testing.T, url, key string) (id, token string) {
	t.Helper()
	h := map[string]string{"X-API-KEY": key}
	status, body := e2bCall(t, "POST", url+"/v2/sandboxes", h, strings.NewReader(`{"templateID":"python","timeout":300}`))
	var sb struct{ SandboxID, EnvdAccessToken string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &sb) != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	t.Cleanup(func() {
		// The daemon may be elsewhere by now: its containers go with it.
		req, _ := http.NewRequest("DELETE", url+"/sandboxes/"+sb.SandboxID, nil)
		req.Header.Set("X-API-KEY", key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return sb.SandboxID, sb.EnvdAccessToken
}

// TestE2BSDK runs E2B's own SDKs (e2e/npm/e2b.test.mjs, node --test)
// against sandboxd's E2B-compatible listener, with the environment
// examples/e2b.env sets.
func TestE2BSDK(t *testing.T) {
	testutil.NPMTool(t, "node_modules/e2b/package.json")
	testutil.NPMTool(t, "node_modules/@e2b/code-interpreter/package.json")
	runE2BSuite(t, filepath.Join(filepath.Dir(testutil.NPMTool(t, "package.json")), "e2b.test.mjs"))
}

// TestE2BNewestSDK runs the same suite with the newest e2b and
// @e2b/code-interpreter the npm registry has, where they are newer than
// the pinned ones (e2e/npm/package.json).
func TestE2BNewestSDK(t *testing.T) {
	pkg := testutil.NPMTool(t, "package.json")
	var pinned struct{ Dependencies map[string]string }
	if b, err := os.ReadFile(pkg); err != nil || json.Unmarshal(b, &pinned) != nil {
		t.Fatalf("reading %s: %v", pkg, err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		testutil.Missing(t, "npm is not installed")
	}
	var newest []string
	newer := false
	for _, name := range []string{"e2b", "@e2b/code-interpreter"} {
		var out []byte
		for try := 0; try < 3; try++ { // the registry is across the network
			if out, err = exec.Command(npm, "view", name, "version").Output(); err == nil {
				break
			}
			time.Sleep(2 * time.Second)
		}
		if err != nil {
			testutil.Missing(t, fmt.Sprintf("the npm registry did not say the newest %s: %v", name, err))
		}
		v := strings.TrimSpace(string(out))
		t.Logf("%s: newest %s, pinned %s", name, v, pinned.Dependencies[name])
		newest = append(newest, name+"@"+v)
		newer = newer || v != pinned.Dependencies[name]
	}
	if !newer {
		t.Skip("the pinned SDKs are the newest: TestE2BSDK runs them")
	}
	dir := t.TempDir()
	var out []byte
	for try := 0; try < 3; try++ {
		install := exec.Command(npm, append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund"}, newest...)...)
		if out, err = install.CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil {
		testutil.Missing(t, fmt.Sprintf("npm install %v: %v\n%s", newest, err, out))
	}
	suite, err := os.ReadFile(filepath.Join(filepath.Dir(pkg), "e2b.test.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The suite imports the SDKs from its own directory's node_modules.
	if err := os.WriteFile(filepath.Join(dir, "e2b.test.mjs"), suite, 0o644); err != nil {
		t.Fatal(err)
	}
	runE2BSuite(t, filepath.Join(dir, "e2b.test.mjs"))
}

// runE2BSuite runs the node test suite at path against a daemon on
// examples/e2b.hcl.
func runE2BSuite(t *testing.T, suite string) {
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.Missing(t, "node is not installed")
	}
	d, env := e2bSuiteDaemon(t)
	// --test-force-exit: the SDK keeps timers for its requests running.
	cmd := exec.Command(node, "--test", "--test-force-exit", "--test-reporter=spec", suite)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", filepath.Base(suite), out)
	if err != nil {
		t.Fatalf("E2B's SDKs failed against sandboxd: %v\nsandboxd's log:\n%s", err, d.Logs())
	}
}

// e2bSuiteDaemon starts the daemon an SDK suite runs against and gives
// the suite's environment: examples/e2b.env's variables, and what the
// sandboxes may reach, a server on loopback (ORIGIN), directly or through
// a SOCKS5 proxy (SOCKS), which says where the proxy connected.
func e2bSuiteDaemon(t *testing.T) (*testutil.Daemon, []string) {
	socks := egresstest.NewSocks5(t, "proxy-user", "proxy-password")
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/socks-targets" {
			_ = json.NewEncoder(w).Encode(socks.Targets())
			return
		}
		_, _ = io.WriteString(w, "hello from the origin")
	}))
	t.Cleanup(origin.Close)
	originAddr := strings.TrimPrefix(origin.URL, "http://")
	d, url := e2bDaemon(t, fmt.Sprintf("network {\n  allow = [%q, %q]\n}", originAddr, socks.Addr), desktopLanguage)
	return d, append(os.Environ(), "E2B_API_KEY="+e2bKey, "E2B_API_URL="+url, "E2B_SANDBOX_URL="+url,
		"E2B_OTHER_KEY="+e2bOtherKey, "SANDBOXCTL="+filepath.Join(d.Bin, "sandboxctl"), "SANDBOXD_SOCKET="+d.Socket,
		"ORIGIN="+originAddr, "SOCKS="+socks.Addr)
}

// TestE2BOwnTests runs E2B's own tests of its JS SDK and of its Code
// Interpreter SDK (e2e/npm/e2b-suite, copied from E2B's repositories)
// with vitest against sandboxd. Every test that e2b-suite/skips.mjs does
// not list must pass. E2B_SUITE_ONLY (vitest's file filters, space
// separated) runs some of them.
func TestE2BOwnTests(t *testing.T) {
	t.Parallel() // it mostly waits: beside another test
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.Missing(t, "node is not installed")
	}
	vitest := testutil.NPMTool(t, "node_modules/vitest/vitest.mjs")
	suite := filepath.Join(filepath.Dir(testutil.NPMTool(t, "package.json")), "e2b-suite")
	d, env := e2bSuiteDaemon(t)
	report := filepath.Join(t.TempDir(), "report.json")
	args := []string{vitest, "run", "--root", suite, "--reporter=default", "--reporter=json", "--outputFile.json=" + report}
	cmd := exec.Command(node, append(args, strings.Fields(os.Getenv("E2B_SUITE_ONLY"))...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("vitest run (E2B's own tests):\n%s", out)
	var results struct {
		NumPassedTests, NumFailedTests, NumPendingTests, NumTotalTests int
		TestResults                                                    []struct {
			Name             string
			Message          string
			AssertionResults []struct {
				FullName, Status string
				FailureMessages  []string
			}
		}
	}
	b, rerr := os.ReadFile(report)
	if rerr != nil || json.Unmarshal(b, &results) != nil {
		t.Fatalf("vitest gave no report (%v, %v); sandboxd's log:\n%s", err, rerr, d.Logs())
	}
	var failed []string
	for _, file := range results.TestResults {
		if file.Message != "" { // the file itself failed, before its tests
			failed = append(failed, fmt.Sprintf("%s: %s", file.Name, file.Message))
		}
		for _, a := range file.AssertionResults {
			if a.Status == "failed" {
				failed = append(failed, fmt.Sprintf("%s > %s: %s", strings.TrimPrefix(file.Name, suite+"/"), a.FullName, strings.Join(a.FailureMessages, "; ")))
			}
		}
	}
	t.Logf("E2B's own tests against sandboxd: %d passed, %d failed, %d skipped, of %d",
		results.NumPassedTests, results.NumFailedTests, results.NumPendingTests, results.NumTotalTests)
	if len(failed) > 0 || err != nil {
		t.Fatalf("E2B's own tests that should pass failed (%v):\n%s\nsandboxd's log:\n%s", err, strings.Join(failed, "\n"), d.Logs())
	}
}

// TestE2BSandboxesSurviveRestarts restarts sandboxd under an E2B client:
// its sandbox, its token and its files are there after.
func TestE2BSandboxesSurviveRestarts(t *testing.T) {
	d, url := e2bDaemon(t)
	do := func(method, url, path string, header map[string]string, body string) (int, string) {
		t.Helper()
		return e2bCall(t, method, url+path, header, strings.NewReader(body))
	}
	id, token := e2bCreate(t, url, e2bKey)
	agent := map[string]string{"E2b-Sandbox-Id": id, "X-Access-Token": token, "Content-Type": "application/octet-stream"}
	if status, body := do("POST", url, "/files?path=/home/user/kept.txt", agent, "kept"); status != http.StatusOK {
		t.Fatalf("upload: %d %s", status, body)
	}
	d.Stop()
	d.Restart()
	url = e2bURL(t, d)
	if status, body := do("GET", url, "/sandboxes/"+id, map[string]string{"X-API-KEY": e2bKey}, ""); status != http.StatusOK || !strings.Contains(body, `"running"`) {
		t.Fatalf("after a restart, the sandbox: %d %s", status, body)
	}
	if status, body := do("GET", url, "/files?path=/home/user/kept.txt", agent, ""); status != http.StatusOK || body != "kept" {
		t.Fatalf("after a restart, its file with its token: %d %q", status, body)
	}
	if status, _ := do("DELETE", url, "/sandboxes/"+id, map[string]string{"X-API-KEY": e2bKey}, ""); status != http.StatusNoContent {
		t.Fatalf("kill: %d", status)
	}
}

// TestE2BGuard knocks on the E2B listener as a hostile page or client
// would: a rebinding Host, another site's Origin, no key, another
// sandbox's token, a body past the bound.
func TestE2BGuard(t *testing.T) {
	_, url := e2bDaemon(t)
	call := func(method, path string, header map[string]string, body io.Reader) (int, string) {
		t.Helper()
		return e2bCall(t, method, url+path, header, body)
	}
	key := map[string]string{"X-API-KEY": e2bKey}
	mine, myToken := e2bCreate(t, url, e2bKey)
	theirs, theirToken := e2bCreate(t, url, e2bOtherKey)
	agent := func(id, token string) map[string]string {
		return map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49983", "X-Access-Token": token}
	}
	for _, tc := range []struct {
		name         string
		method, path string
		header       map[string]string
		body         string
		want         int
	}{
		{"no key", "GET", "/v2/sandboxes", nil, "", http.StatusUnauthorized},
		{"a wrong key", "GET", "/v2/sandboxes", map[string]string{"X-API-KEY": "e2b_wrong"}, "", http.StatusUnauthorized},
		{"a rebinding Host", "GET", "/v2/sandboxes", map[string]string{"X-API-KEY": e2bKey, "Host": "attacker.example:80"}, "", http.StatusForbidden},
		{"another site's Origin", "POST", "/v2/sandboxes", map[string]string{"X-API-KEY": e2bKey, "Origin": "http://attacker.example"}, `{"templateID":"python"}`, http.StatusForbidden},
		{"another key's sandbox", "GET", "/sandboxes/" + theirs, key, "", http.StatusNotFound},
		{"another key's sandbox killed", "DELETE", "/sandboxes/" + theirs, key, "", http.StatusNotFound},
		{"an unknown template", "POST", "/v2/sandboxes", key, `{"templateID":"nope"}`, http.StatusNotFound},
		{"an unserved call", "GET", "/templates", key, "", http.StatusNotFound},
		{"a sandbox without its token", "GET", "/health", map[string]string{"E2b-Sandbox-Id": mine}, "", http.StatusUnauthorized},
		{"a sandbox with another's token", "GET", "/health", agent(mine, theirToken), "", http.StatusUnauthorized},
		{"a sandbox with its token", "GET", "/health", agent(mine, myToken), "", http.StatusNoContent},
		{"a sandbox that is not there", "GET", "/health", agent("nope", myToken), "", http.StatusBadGateway},
		{"a port that is not the agent's", "GET", "/health", map[string]string{"E2b-Sandbox-Id": mine, "E2b-Sandbox-Port": "22", "X-Access-Token": myToken}, "", http.StatusBadGateway},
		{"a path out of the home", "GET", "/files?path=/etc/passwd", agent(mine, myToken), "", http.StatusBadRequest},
		{"a path climbing out", "GET", "/files?path=/home/user/../../etc/passwd", agent(mine, myToken), "", http.StatusBadRequest},
		{"a path climbing out of /tmp", "GET", "/files?path=/tmp/../etc/passwd", agent(mine, myToken), "", http.StatusBadRequest},
		{"a name that only begins as /tmp", "GET", "/files?path=/tmpfoo/x", agent(mine, myToken), "", http.StatusBadRequest},
		{"a body past the bound", "POST", "/v2/sandboxes", key, `{"templateID":"python","metadata":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := call(tc.method, tc.path, tc.header, strings.NewReader(tc.body))
			if status != tc.want {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, status, body, tc.want)
			}
		})
	}
	// An upload past max_transfer is refused, not stored.
	t.Run("an upload past the bound", func(t *testing.T) {
		h := agent(mine, myToken)
		h["Content-Type"] = "application/octet-stream"
		if status, body := call("POST", "/files?path=big.bin", h, strings.NewReader(strings.Repeat("x", 2<<20))); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("a 2 MiB upload past max_transfer 1MiB: %d %s", status, body)
		}
		if status, _ := call("GET", "/files?path=big.bin", agent(mine, myToken), nil); status != http.StatusNotFound {
			t.Fatalf("the refused upload left a file: %d", status)
		}
	})
}
