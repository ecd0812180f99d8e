package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/daemon/daemontest"
)

func fixtureWith(t *testing.T, extra string) (*fixture, *daemon.Daemon) {
	d, _ := daemontest.NewWith(t, daemontest.Options{Languages: daemontest.Bash, Extra: `policy "commands" {}` + "\n" + extra})
	h, err := New(d, config.E2B{Listen: "127.0.0.1:0", APIKeys: []string{keyA, keyB},
		Templates: map[string]config.E2BTemplate{"base": {Language: "bash"}}}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return &fixture{t: t, srv: srv}, d
}

// A page's nextToken is a place in the list's order: when the sandbox it
// names goes (killed, expired) before the next page is asked for, the
// next page still starts there (an outside review found it empty when
// the token was the sandbox's id).
func TestListPagesPastAGoneSandbox(t *testing.T) {
	f, _ := fixtureWith(t, "")
	var ids []string
	for range 3 {
		ids = append(ids, f.create(keyA).SandboxID)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/v2/sandboxes?limit=1", nil)
	req.Header.Set("X-API-KEY", keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	next := resp.Header.Get("X-Next-Token")
	if next == "" {
		t.Fatal("no next token")
	}
	_, gone, _ := strings.Cut(next, ".")
	if status, _ := f.call(keyA, "DELETE", "/sandboxes/"+gone, ""); status != http.StatusNoContent {
		t.Fatal(status)
	}
	_, body := f.call(keyA, "GET", "/v2/sandboxes?limit=1&nextToken="+next, "")
	var page []sandboxInfo
	_ = json.Unmarshal([]byte(body), &page)
	if len(page) == 0 {
		t.Errorf("the page after a gone sandbox's token is empty (%s): 1 of the 3 sandboxes %v is never listed", body, ids)
	}
}

// Another key's sandbox is unknown to metrics, network and fork.
func TestOtherKeysNewCalls(t *testing.T) {
	f, _ := fixtureWith(t, "")
	mine := f.create(keyA)
	for _, c := range [][3]string{
		{"GET", "/sandboxes/" + mine.SandboxID + "/metrics", ""},
		{"PUT", "/sandboxes/" + mine.SandboxID + "/network", `{}`},
		{"POST", "/sandboxes/" + mine.SandboxID + "/fork", `{"count":1}`},
	} {
		if status, body := f.call(keyB, c[0], c[1], c[2]); status != http.StatusNotFound {
			t.Errorf("another key's %s %s: %d %s", c[0], c[1], status, body)
		}
	}
	for _, body := range []string{`{"allowOut":["example.com"]}`, `{"allowOut":["::::"]}`, `{"allowOut":["10.0.0.0/8"]}`, `{"allowOut":[""]}`} {
		if status, b := f.call(keyA, "PUT", "/sandboxes/"+mine.SandboxID+"/network", body); status != http.StatusBadRequest {
			t.Errorf("network %s on a language without egress: %d %s", body, status, b)
		}
	}
	for _, body := range []string{`{"count":17}`, `{"count":-1}`, `{"count":1e12}`, `{"timeout":-5}`, `{"timeout":9223372036854775807}`} {
		if status, b := f.call(keyA, "POST", "/sandboxes/"+mine.SandboxID+"/fork", body); status < 400 {
			t.Errorf("fork %s: %d %s", body, status, b)
		}
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=99999999999999999999", "metadata=%25zz", "startedAfter=yesterday"} {
		if status, b := f.call(keyA, "GET", "/v2/sandboxes?"+q, ""); status != http.StatusBadRequest {
			t.Errorf("list ?%s: %d %s", q, status, b)
		}
	}
}

// An E2B fork keeps no snapshot (the E2B API can neither list nor delete
// one, and snapshots.max of them, over all keys, would stop every fork
// and sandboxd's own snapshots): three forks under a max of 2 work.
func TestForksLeaveNoSnapshots(t *testing.T) {
	f, d := fixtureWith(t, "snapshots {\n max = 2\n}\n")
	src := f.create(keyA)
	for i := range 3 {
		status, body := f.call(keyA, "POST", "/sandboxes/"+src.SandboxID+"/fork", `{"count":1}`)
		if status != http.StatusCreated {
			t.Logf("fork %d: %d %s", i, status, body)
			if strings.Contains(body, "snapshots") {
				list, _ := d.Snapshots.List()
				t.Errorf("fork %d of key A refused by snapshots the E2B API left behind (%d kept): %s", i, len(list), body)
			}
			continue
		}
		var out []struct{ Sandbox *sandboxInfo }
		_ = json.Unmarshal([]byte(body), &out)
		for _, o := range out {
			if o.Sandbox != nil {
				f.call(keyA, "DELETE", "/sandboxes/"+o.Sandbox.SandboxID, "")
			}
		}
	}
}
