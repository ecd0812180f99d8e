package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestSeccompProfileDeniesIOUring(t *testing.T) {
	p, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range deniedSyscalls {
		if strings.Contains(p, `"`+name+`"`) {
			t.Errorf("%s is allowed", name)
		}
	}
	if !strings.Contains(p, `"read"`) {
		t.Error("the profile lost Docker's allow-list")
	}
}

// The profile is in the plain OCI form, settled for a sandbox: no rule
// depends on a capability (a reader that ignores such conditions would
// allow everything they guard), and the calls Docker allows only with
// one are not allowed at all.
func TestSeccompProfileIsResolved(t *testing.T) {
	p, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{`"includes"`, `"excludes"`, `"caps"`, `"minKernel"`, `"archMap"`} {
		if strings.Contains(p, word) {
			t.Errorf("the profile still has %s", word)
		}
	}
	var oci specs.LinuxSeccomp
	if err := json.Unmarshal([]byte(p), &oci); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, s := range oci.Syscalls {
		if s.Action == specs.ActAllow && len(s.Args) == 0 {
			for _, n := range s.Names {
				allowed[n] = true
			}
		}
	}
	for _, n := range []string{"unshare", "setns", "mount", "umount2", "bpf", "perf_event_open", "pivot_root", "io_uring_setup", "clone3"} {
		if allowed[n] {
			t.Errorf("%s is allowed outright", n)
		}
	}
	if !allowed["read"] || !allowed["execve"] || oci.DefaultAction != specs.ActErrno {
		t.Errorf("the profile lost Docker's allow-list: default %s", oci.DefaultAction)
	}
}
