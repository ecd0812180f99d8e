package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// secretValue is the secret the tests give sandboxd; it must turn up
// nowhere but in the requests to its host.
const secretValue = "tok-9f2c41d7e0a85b36"

// callAPI is a python program that calls the API server with the
// secret's placeholder, asks it to echo what it got, and sends the
// placeholder to another host.
const callAPI = `
import os, sys, urllib.request, urllib.error
ph = os.environ.get('SANDBOXD_SECRET_svc', 'none')
print('placeholder', ph.startswith('sandboxd-secret-svc-'))
for name, url in (('check', sys.argv[1] + '/check'), ('echo', sys.argv[1] + '/echo'), ('other', sys.argv[2])):
    req = urllib.request.Request(url, headers={'Authorization': 'Bearer ' + ph})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            print(name, r.status, r.read().decode(), r.headers.get('X-Echo', ''))
    except urllib.error.HTTPError as e:
        print(name, 'HTTP', e.code, e.read().decode().strip())
    except Exception as e:
        print(name, 'ERR', type(e).__name__, e)
`

// Secrets never enter a sandbox: a run and a session that ask for one
// hold a placeholder, the API server behind HTTPS gets the value, an echo
// of it comes back as the placeholder, another host is refused the
// placeholder, and the value is in no result, record, log, metric,
// snapshot or file of the state directory; a session keeps its secret
// across a restart of sandboxd. Asking for an unknown secret, or one for
// a language without egress, is a clear error.
func TestSecrets(t *testing.T) {
	o := startOutside(t)
	apiSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if r.URL.Path == "/check" {
			if got != "Bearer "+secretValue {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			io.WriteString(w, "authorized")
			return
		}
		w.Header().Set("X-Echo", got)
		io.WriteString(w, "you sent "+got)
	}))
	apiSrv.StartTLS()
	t.Cleanup(apiSrv.Close)
	bundle, _ := os.ReadFile(o.caFile)
	bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiSrv.Certificate().Raw})...)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	apiAddr := apiSrv.Listener.Addr().String()
	d := testutil.StartDaemon(t, testutil.Options{
		Env: []string{"SVC_TOKEN=" + secretValue},
		Extra: fmt.Sprintf(`
network { ca_file = %q }
secret "svc" {
  value_env = "SVC_TOKEN"
  hosts     = ["127.0.0.1:%s"]
}`, caFile, port(apiAddr)),
		Languages: fmt.Sprintf(`
language "python" {
  image = "sandboxd/python:latest"
  pool { min_idle = 1 }
  network { allow = ["127.0.0.1:%s", "127.0.0.1:%s"] }
}
language "bash" {
  image = "sandboxd/bash:latest"
  pool { min_idle = 0 }
}`, port(apiAddr), port(o.web))})
	c := d.Client()
	args := []string{"https://" + apiAddr, "http://" + o.web + "/"}
	check := func(what, stdout string) {
		t.Helper()
		for _, want := range []string{"placeholder True", "check 200 authorized", "echo 200 you sent Bearer sandboxd-secret-svc-", "other HTTP 403 sandboxd egress: the request carries secret svc's placeholder"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: no %q in:\n%s", what, want, stdout)
			}
		}
	}

	res := run(t, c, api.RunRequest{Language: "python", Code: callAPI, Args: args, Env: toOutside, Secrets: []string{"svc"}})
	check("a run", res.Stdout)
	if e := egressOf(res, "127.0.0.1", port(o.web)); e == nil || e.Allowed || !strings.Contains(e.Error, "placeholder") {
		t.Errorf("the refusal is not recorded: %+v", res.Egress)
	}
	// A run that did not ask has no placeholder, and the host gets none.
	res = run(t, c, api.RunRequest{Language: "python", Code: callAPI, Args: args, Env: toOutside})
	if !strings.Contains(res.Stdout, "placeholder False") || !strings.Contains(res.Stdout, "check HTTP 401") {
		t.Errorf("a run without the secret:\n%s", res.Stdout)
	}

	id := newSession(t, c, api.SessionRequest{Language: "python", Env: toOutside, Secrets: []string{"svc"}})
	execAPI := func(what string) {
		t.Helper()
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: callAPI, Args: args})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(what, res.Stdout)
	}
	execAPI("a session")
	if _, err := c.Snapshot(ctx(t), id, "with-secret"); err != nil {
		t.Fatal(err)
	}
	d.Restart()
	execAPI("the session after a restart")

	// The shell: what secrets there are, and a run that uses one.
	if out, _, code := d.Ctl("", "secrets"); code != 0 || !strings.Contains(out, "svc") || !strings.Contains(out, "127.0.0.1:"+port(apiAddr)) {
		t.Errorf("sandboxctl secrets: %d %q", code, out)
	}
	if out, errOut, code := d.Ctl("import os\nprint(os.environ['SANDBOXD_SECRET_svc'].startswith('sandboxd-secret-svc-'))\n",
		"run", "--lang", "python", "--secret", "svc", "-"); code != 0 || out != "True\n" {
		t.Errorf("sandboxctl run --secret svc: %d %q %q", code, out, errOut)
	}

	for _, bad := range []struct {
		req  api.RunRequest
		want string
	}{
		{api.RunRequest{Language: "python", Code: "1", Secrets: []string{"nope"}}, `no secret "nope"; sandboxd.hcl defines svc`},
		{api.RunRequest{Language: "bash", Code: "true", Secrets: []string{"svc"}}, "language bash has no egress"},
	} {
		if _, err := c.Run(ctx(t), bad.req); apiCode(err) != api.CodeInvalidRequest || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("secrets %v: %v, want %q", bad.req.Secrets, err, bad.want)
		}
	}

	// The last line of defence: a value that reaches a sandbox by a way
	// nobody foresaw (here, the program's own text) comes back in no
	// form, in no answer, record or log.
	leaked := run(t, c, api.RunRequest{Language: "python",
		Code: fmt.Sprintf("import base64\nv = %q\nprint(v)\nprint(base64.b64encode(b'x' + v.encode()).decode())\n", secretValue)})
	if strings.Contains(leaked.Stdout, secretValue) || strings.Count(leaked.Stdout, "[secret svc]") != 2 {
		t.Errorf("a value the program printed, raw and in base64, reached the answer: %q", leaked.Stdout)
	}

	// Nowhere: results above, the history, the session's record, the
	// metrics, the log, and every file sandboxd keeps (its database, the
	// snapshot's archive, the egress directories).
	history, err := c.Executions(ctx(t), 100, api.ExecutionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	session, _ := c.Session(ctx(t), id)
	seen, _ := json.Marshal([]any{res, history, session})
	families := scrape(t, d.Socket)
	metricsText := fmt.Sprint(families)
	for what, text := range map[string]string{"a result, the history or the session": string(seen), "/metrics": metricsText, "the log": d.Logs()} {
		if strings.Contains(text, secretValue) {
			t.Errorf("the secret's value is in %s", what)
		}
	}
	assertNotInStateDir(t, d.StateDir, secretValue)
}

// assertNotInStateDir fails t for each file of the state directory that
// holds one of values.
func assertNotInStateDir(t *testing.T, dir string, values ...string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			for _, v := range values {
				if strings.Contains(string(b), v) {
					t.Errorf("a secret's value is in %s", p)
				}
			}
		}
		return nil
	})
}
