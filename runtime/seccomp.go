package runtime

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// deniedSyscalls are removed from Docker's default allow-list. Engines
// before 25 allow io_uring, whose ring bypasses seccomp and has been a
// steady source of kernel escapes.
var deniedSyscalls = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

// SeccompProfile is Docker's default profile as shipped with the SDK, minus
// deniedSyscalls, resolved for a sandbox: a process with no capabilities,
// on this machine's architecture and kernel. Docker's profile allows some
// calls only to a container holding a capability (unshare, mount, bpf,
// ptrace of any process, clone with namespace flags); a reader of the
// plain OCI form (containerd, for a kubelet's Localhost profile) drops
// those conditions and would allow them all, so the profile is written
// with them settled: what a sandbox may call, and nothing conditional.
// It is JSON, what Docker's `seccomp=` takes and what a kubelet loads.
func SeccompProfile() (string, error) {
	p := seccomp.DefaultProfile()
	for i := range p.Syscalls {
		p.Syscalls[i].Names = slices.DeleteFunc(p.Syscalls[i].Names, func(n string) bool {
			return slices.Contains(deniedSyscalls, n)
		})
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(s *seccomp.Syscall) bool { return len(s.Names) == 0 })
	body, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("seccomp profile: %w", err)
	}
	noCapabilities := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	resolved, err := seccomp.LoadProfile(string(body), noCapabilities)
	if err != nil {
		return "", fmt.Errorf("seccomp profile: %w", err)
	}
	data, err := json.Marshal(resolved)
	if err != nil {
		return "", fmt.Errorf("seccomp profile: %w", err)
	}
	return string(data), nil
}
