package e2e

import (
	"os"
	"testing"

	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestMain removes the binaries the tests built once they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBinaries()
	os.Exit(code)
}
