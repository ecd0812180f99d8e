package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

// clientDaemon is the daemon the client suites run against: python and
// node, sessions and snapshots as shipped, and the desktop.
func clientDaemon(t *testing.T) *testutil.Daemon {
	return testutil.StartDaemon(t, testutil.Options{Languages: desktopLanguage + testutil.DefaultLanguages,
		Defaults: `timeout = "10s"`, Extra: `policy "limits" {}`})
}

// runSuite runs a client's test suite with the daemon's socket; its output
// is the test's log.
func runSuite(t *testing.T, d *testutil.Daemon, dir string, env []string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SANDBOXD_SOCKET="+d.Socket), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	t.Logf("%s", out)
}

// TestPythonClient runs clients/python's pytest suite against a real daemon.
func TestPythonClient(t *testing.T) {
	python := "/usr/bin/python3"
	if exec.Command(python, "-c", "import pytest").Run() != nil {
		testutil.Missing(t, "pytest is not installed for "+python+"; run `make test-tools` (Debian's python3-pytest)")
	}
	d := clientDaemon(t)
	dir, _ := filepath.Abs("../clients/python")
	runSuite(t, d, dir, []string{"PYTHONPATH=" + filepath.Join(dir, "src"), "PYTHONDONTWRITEBYTECODE=1"},
		python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
}

// TestTypeScriptClient runs clients/typescript's node:test suite against a
// real daemon, on the client as `npm run build` emits it.
func TestTypeScriptClient(t *testing.T) {
	dir, _ := filepath.Abs("../clients/typescript")
	if _, err := os.Stat(filepath.Join(dir, "dist", "index.js")); err != nil {
		testutil.Missing(t, "the TypeScript client is not built; run `make test-tools`")
	}
	d := clientDaemon(t)
	runSuite(t, d, dir, nil, "node", "--test", "test/")
}
