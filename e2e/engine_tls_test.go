package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// An engine reached over TCP with TLS both ways (dockerd --tlsverify on
// loopback, certificates of the test's own CA): configured in the docker
// block's tls block, or by DOCKER_HOST, DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH when the block names no host. The runs land on that
// engine; a CA that did not sign the engine's certificate, or no client
// certificate, stops sandboxd at start with what to fix.
func TestEngineOverTLS(t *testing.T) {
	t.Parallel() // on an engine of its own
	e := testutil.StartTLSEngine(t, "sandboxd/bash:latest")
	bash := `
language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 1
    max      = 2
  }
}`
	ca, cert, key := filepath.Join(e.CertDir, "ca.pem"), filepath.Join(e.CertDir, "cert.pem"), filepath.Join(e.CertDir, "key.pem")
	tlsBlock := func(ca, cert, key string) string {
		return fmt.Sprintf("tls {\n    ca_file = %q\n    cert_file = %q\n    key_file = %q\n  }", ca, cert, key)
	}
	runsThere := func(t *testing.T, d *testutil.Daemon) {
		c := d.Client()
		h, err := c.Health(context.Background())
		if err != nil || h.Status != "ok" || !h.Docker.OK || h.Docker.Version == "" {
			t.Fatalf("health %+v: %v", h, err)
		}
		res, err := c.Run(context.Background(), api.RunRequest{Language: "bash", Code: `echo $((6*7))`})
		if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "42" {
			t.Fatalf("run on the TLS engine: %+v %v", res, err)
		}
		label := testutil.TestLabel + "=" + d.RunID
		if len(e.Containers(label)) == 0 {
			t.Fatal("the TLS engine holds none of sandboxd's containers")
		}
		if ids := testutil.Containers(t, label); len(ids) > 0 {
			t.Fatalf("the host's own engine holds sandboxd's containers %v", ids)
		}
	}

	t.Run("tls block", func(t *testing.T) {
		d := testutil.StartDaemon(t, testutil.Options{DockerHost: e.TCPHost, DockerTLS: tlsBlock(ca, cert, key), Languages: bash})
		runsThere(t, d)
	})
	t.Run("environment", func(t *testing.T) {
		d := testutil.StartDaemon(t, testutil.Options{Languages: bash,
			Env: []string{"DOCKER_HOST=" + e.TCPHost, "DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + e.CertDir}})
		runsThere(t, d)
	})
	t.Run("a CA that did not sign the engine", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other-ca.pem")
		testutil.NewCA(t, "not the engine's CA").WriteCert(t, other)
		said := testutil.FailToStart(t, testutil.Options{DockerHost: e.TCPHost, DockerTLS: tlsBlock(other, cert, key), Languages: bash})
		if !strings.Contains(said, "certificate signed by unknown authority") || !strings.Contains(said, "tls ca_file") {
			t.Fatalf("sandboxd should say the engine's certificate is not the CA's, and what to fix:\n%s", said)
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		said := testutil.FailToStart(t, testutil.Options{DockerHost: e.TCPHost, Languages: bash,
			DockerTLS: fmt.Sprintf("tls {\n    ca_file = %q\n  }", ca)})
		if !strings.Contains(said, "cert_file and key_file") {
			t.Fatalf("sandboxd should say the engine wants a client certificate:\n%s", said)
		}
	})
	t.Run("no tls block", func(t *testing.T) {
		said := testutil.FailToStart(t, testutil.Options{DockerHost: e.TCPHost, Languages: bash})
		if !strings.Contains(said, "without TLS") || !strings.Contains(said, "disagree on TLS") {
			t.Fatalf("sandboxd should warn of TCP without TLS and say the engine wants TLS:\n%s", said)
		}
	})
}
