package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/egress/egresstest"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// attackSecrets is a python program that, holding three placeholders,
// sends each vector in its first argument (a JSON list of [name, tls,
// sni, raw request]) through the egress proxy as raw bytes, over plain
// HTTP or inside a CONNECT tunnel under TLS, and prints every byte that
// came back as a JSON line.
const attackSecrets = `
import json, os, socket, ssl, sys
proxy = ('127.0.0.1', 3128)
tls_addr = sys.argv[2]
ph = {k: os.environ['SANDBOXD_SECRET_' + k] for k in ('bearer', 'key', 'q')}
trust = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE'])
blind = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE'])
blind.check_hostname, blind.verify_mode = False, ssl.CERT_NONE
blind.set_alpn_protocols(['h2', 'http/1.1'])
for name, over_tls, sni, raw in json.loads(sys.argv[1]):
    for k, v in ph.items():
        raw = raw.replace('{' + k + '}', v)
    out = b''
    try:
        s = socket.create_connection(proxy, timeout=20)
        if over_tls:
            s.sendall(('CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (tls_addr, tls_addr)).encode())
            head = b''
            while not head.endswith(b'\r\n\r\n'):
                head += s.recv(1)
            s = (trust if sni == '127.0.0.1' else blind).wrap_socket(s, server_hostname=sni)
        s.sendall(raw.encode())
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except Exception as e:
        out += ('\nERR %s %s' % (type(e).__name__, e)).encode()
    print(json.dumps([name, over_tls, out.decode('latin-1')]))
`

// Secrets against a sandbox that tries to get them back: it holds the
// placeholders of three secrets (in Authorization, in X-Api-Key, in the
// query parameter api_key) bound to a server on the host's loopback that
// echoes credentials in every way egresstest.Echo knows, over plain HTTP
// and intercepted HTTPS (to a server that speaks HTTP/2 too). Every byte
// the sandbox gets back is free of each value in every form; a
// placeholder out of place, or in a request for another name, is refused
// and recorded; the run's output reached the API without the redactor
// having to act. Under runc and runsc.
func TestSecretsAgainstASandbox(t *testing.T) { ociRuntimes(t, testSecretsAgainstASandbox) }

func testSecretsAgainstASandbox(t *testing.T, runtime string) {
	echo := &egresstest.Echo{}
	secure := httptest.NewUnstartedServer(echo)
	secure.EnableHTTP2 = true
	secure.StartTLS()
	t.Cleanup(secure.Close)
	plain := httptest.NewServer(echo)
	t.Cleanup(plain.Close)
	tlsAddr, plainAddr := secure.Listener.Addr().String(), plain.Listener.Addr().String()
	bundle, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})...)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf(`["%s", "%s"]`, tlsAddr, plainAddr)
	d := testutil.StartDaemon(t, testutil.Options{
		Runtime: runtime,
		Env:     []string{"T_BEARER=" + egresstest.BearerValue, "T_KEY=" + egresstest.HeaderValue, "T_Q=" + egresstest.QueryValue},
		Extra: fmt.Sprintf(`
network { ca_file = %q }
secret "bearer" {
  value_env = "T_BEARER"
  hosts     = %s
}
secret "key" {
  value_env = "T_KEY"
  hosts     = %s
  header    = "X-Api-Key"
}
secret "q" {
  value_env = "T_Q"
  hosts     = %s
  query     = "api_key"
}`, caFile, hosts, hosts, hosts),
		Languages: fmt.Sprintf(`
language "python" {
  image = "sandboxd/python:latest"
  pool { min_idle = 0 }
  network { allow = %s }
}`, hosts)})
	c := d.Client()

	type vector struct {
		name, sni string
		tls       bool
		raw       string
	}
	request := func(overTLS bool, path string, headers ...string) string {
		target, host := "http://"+plainAddr+path, plainAddr
		if overTLS {
			target, host = path, tlsAddr
		}
		return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", target, host, strings.Join(append(headers, ""), "\r\n"))
	}
	creds := []string{"Authorization: Bearer {bearer}", "X-Api-Key: {key}"}
	var vectors []vector
	for _, overTLS := range []bool{false, true} {
		vectors = append(vectors, vector{"check", "127.0.0.1", overTLS, request(overTLS, "/check?api_key={q}", creds...)})
		for _, path := range egresstest.Paths {
			vectors = append(vectors, vector{path, "127.0.0.1", overTLS, request(overTLS, path+"?api_key={q}", append(creds, "Accept-Encoding: gzip, br", "TE: trailers", "Range: bytes=20-40")...)})
		}
		for name, header := range map[string]string{"X-Note": "X-Note: {bearer}", "User-Agent": "User-Agent: x {key}", "Referer": "Referer: https://x/?{bearer}"} {
			vectors = append(vectors, vector{"refused " + name, "127.0.0.1", overTLS, request(overTLS, "/echo", header)})
		}
		vectors = append(vectors,
			vector{"refused query", "127.0.0.1", overTLS, request(overTLS, "/echo?token={bearer}")},
			vector{"refused upgrade", "127.0.0.1", overTLS, request(overTLS, "/echo", "Authorization: Bearer {bearer}", "Upgrade: websocket", "Connection: Upgrade")})
	}
	vectors = append(vectors,
		vector{"refused fronting by Host", "127.0.0.1", true, "GET /echo HTTP/1.1\r\nHost: front.example\r\nAuthorization: Bearer {bearer}\r\nConnection: close\r\n\r\n"},
		vector{"refused fronting by TLS name", "front.example", true, request(true, "/echo", "Authorization: Bearer {bearer}")})
	list := make([][]any, len(vectors))
	for i, v := range vectors {
		list[i] = []any{v.name, v.tls, v.sni, v.raw}
	}
	arg, _ := json.Marshal(list)

	res := run(t, c, api.RunRequest{Language: "python", Code: attackSecrets, Args: []string{string(arg), tlsAddr}, Env: toOutside,
		Secrets: []string{"bearer", "key", "q"}})
	if strings.Contains(res.Stdout+res.Stderr, "[secret ") {
		t.Fatalf("a value reached the run's output, and only sandboxd's redactor stopped it:\n%s", res.Stdout)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var l []any
		if err := json.Unmarshal([]byte(line), &l); err != nil || len(l) != 3 {
			t.Fatalf("the program printed %q (%v); stderr:\n%s", line, err, res.Stderr)
		}
		got[fmt.Sprintf("%s tls=%v", l[0], l[1])] = l[2].(string)
	}
	if len(got) != len(vectors) {
		t.Fatalf("%d answers for %d vectors; stderr:\n%s", len(got), len(vectors), res.Stderr)
	}
	for _, v := range vectors {
		key := fmt.Sprintf("%s tls=%v", v.name, v.tls)
		out := got[key]
		if leak := egresstest.GivesAway(out); leak != "" {
			t.Errorf("%s: the sandbox got a value back (%q):\n%s", key, leak, out)
		}
		switch {
		case v.name == "check" && !strings.Contains(out, "authorized"):
			t.Errorf("%s: the server did not get its credentials:\n%s", key, out)
		case strings.HasPrefix(v.name, "refused") && !strings.HasPrefix(out, "HTTP/1.1 403"):
			t.Errorf("%s: not refused:\n%s", key, out)
		}
	}
	if seen := echo.Got(); len(seen) == 0 || seen[0] != "Bearer "+egresstest.BearerValue+"|"+egresstest.HeaderValue+"|"+egresstest.QueryValue {
		t.Errorf("the server's first request brought %q", seen)
	}
	for _, e := range echo.Got() {
		if strings.Contains(e, "front.example") || strings.Contains(e, "sandboxd-secret-") {
			t.Errorf("a refused request reached the server: %q", e)
		}
	}
	refused := 0
	for _, e := range res.Egress {
		if egresstest.GivesAway(e.Error) != "" {
			t.Errorf("a record holds a value: %+v", e)
		}
		if !e.Allowed {
			refused++
		}
	}
	if refused != 12 { // 5 over plain HTTP, 7 over TLS
		t.Errorf("%d refusals recorded: %+v", refused, res.Egress)
	}
	// Nowhere else either: the history, the log, every file of the state
	// directory.
	history, err := c.Executions(ctx(t), 10, api.ExecutionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	seen, _ := json.Marshal(history)
	if leak := egresstest.GivesAway(string(seen) + d.Logs()); leak != "" {
		t.Errorf("the history or the log holds %q", leak)
	}
	assertNotInStateDir(t, d.StateDir, egresstest.BearerValue, egresstest.HeaderValue, egresstest.QueryValue)
}
