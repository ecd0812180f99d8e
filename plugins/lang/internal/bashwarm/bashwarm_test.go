package bashwarm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// receive reads the run as the supervisor writes it, fields that are
// empty or hold spaces, newlines and '=' included.
func TestReceive(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "receive.sh"), []byte(receive), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"gcc", "-o", "/tmp/out", "a b.c", "", "line\nbreak"}
	env := []string{"PATH=/bin", "X=a=b", "EMPTY="}
	var msg strings.Builder
	for _, f := range slices.Concat([]string{strconv.Itoa(len(argv))}, argv, []string{strconv.Itoa(len(env))}, env, []string{"/workspace"}) {
		msg.WriteString(f + "\x00")
	}
	script := `. "$1/receive.sh"; receive 3<"$1/run" 4>"$1/ready"; printf '%s\0' "${#argv[@]}" "${argv[@]}" "${#env[@]}" "${env[@]}"`
	if err := os.WriteFile(filepath.Join(dir, "run"), []byte(msg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", script, "bash", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(msg.String(), "/workspace\x00")
	if string(out) != want {
		t.Errorf("received %q, want %q", out, want)
	}
	if ready, _ := os.ReadFile(filepath.Join(dir, "ready")); string(ready) != "ready\n" {
		t.Errorf("said %q", ready)
	}
}
