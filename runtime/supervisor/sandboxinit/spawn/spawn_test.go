package spawn

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for sandbox-init as the
// lockdown step and the other helpers.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && IsHelper(os.Args[1]) {
		HelperMain(os.Args[1:])
	}
	os.Exit(m.Run())
}
