package egress

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A secret is written into the headers of HTTPS requests to its hosts
// only, read through the sandbox's own authority; what comes back is
// scrubbed of it; anywhere else its placeholder is refused; hosts without
// one stay tunnels.
func TestSecrets(t *testing.T) {
	const value = "real-token-123"
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/check" {
			if r.Header.Get("Authorization") == "Bearer "+value {
				io.WriteString(w, "authorized")
			} else {
				http.Error(w, "wrong token", http.StatusUnauthorized)
			}
			return
		}
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		io.WriteString(w, "you sent "+r.Header.Get("Authorization"))
	}))
	t.Cleanup(secure.Close)
	securePort := netip.MustParseAddrPort(secure.Listener.Addr().String()).Port()
	_, plainPort := origin(t, "plain")
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())

	g, client, _ := testGate(t, Options{Roots: roots}, Limits{}, "127.0.0.1:"+strconv.Itoa(int(securePort)), "127.0.0.1:"+strconv.Itoa(int(plainPort)))
	bundle, err := os.ReadFile(filepath.Join(g.p.Dir("k1"), Bundle))
	if err != nil {
		t.Fatal(err)
	}
	sandboxTrust := x509.NewCertPool()
	if !sandboxTrust.AppendCertsFromPEM(bundle) {
		t.Fatal("the sandbox's bundle holds no certificate")
	}
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: sandboxTrust}
	hosts, _ := Parse([]string{"127.0.0.1:" + strconv.Itoa(int(securePort))})
	placeholder := Placeholder("svc")
	g.SetSecrets([]Secret{{Name: "svc", Value: value, Hosts: hosts, Placeholder: placeholder}})

	do := func(u string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+placeholder)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	base := "https://127.0.0.1:" + strconv.Itoa(int(securePort))
	if code, body, _ := do(base + "/check"); code != 200 || body != "authorized" {
		t.Errorf("the host did not get the secret: %d %q", code, body)
	}
	if code, body, h := do(base + "/echo"); code != 200 || strings.Contains(body+h.Get("X-Echo"), value) || !strings.Contains(body, placeholder) || h.Get("X-Echo") != "Bearer "+placeholder {
		t.Errorf("an echo of the secret came back unscrubbed: %d %q %q", code, body, h.Get("X-Echo"))
	}
	if code, body, _ := do("http://127.0.0.1:" + strconv.Itoa(int(plainPort)) + "/"); code != 403 || !strings.Contains(body, "not among its hosts") {
		t.Errorf("the placeholder to another host: %d %q", code, body)
	}
	if code, body, _ := do(base + "/?key=" + placeholder); code != 403 || !strings.Contains(body, `in the query parameter "key"`) {
		t.Errorf("the placeholder in a URL: %d %q", code, body)
	}
	records, _ := g.Records()
	refused := 0
	for _, r := range records {
		if strings.Contains(r.Error, "placeholder") {
			refused++
		}
		if strings.Contains(r.Error, value) {
			t.Errorf("a record holds the secret: %+v", r)
		}
	}
	if refused != 2 {
		t.Errorf("%d refusals recorded, want 2: %+v", refused, records)
	}

	// Without the secret the host is a tunnel: the sandbox meets the
	// host's own certificate, which its bundle does not vouch for.
	g.SetSecrets(nil)
	if _, err := client.Get(base + "/check"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a host without secrets was not a tunnel: %v", err)
	}
}
