package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestMain removes the binaries the tests built once they are done. With
// -short (make unit) the package is skipped: every test here drives the
// real engine and cluster.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped with -short (these tests need the engine and the cluster: make test)")
		os.Exit(0)
	}
	code := m.Run()
	testutil.RemoveBinaries()
	os.Exit(code)
}
