package fresh

import (
	"strings"
	"testing"
)

func TestDifferencesCountsDuplicates(t *testing.T) {
	got := Differences([]string{"a", "b", "b"}, []string{"a", "b", "c", "c"})
	want := []string{"gone: b", "left: c"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}
