package runtime

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/moby/profiles/seccomp"
)

// deniedSyscalls are removed from Docker's default allow-list. Engines
// before 25 allow io_uring, whose ring bypasses seccomp and has been a
// steady source of kernel escapes.
var deniedSyscalls = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

// SeccompProfile is Docker's default profile as shipped with the SDK, minus
// deniedSyscalls, as JSON: what Docker's `seccomp=` takes and what a
// kubelet loads as a Localhost profile. Sending it explicitly makes every
// engine version enforce the same list.
func SeccompProfile() (string, error) {
	p := seccomp.DefaultProfile()
	for i := range p.Syscalls {
		p.Syscalls[i].Names = slices.DeleteFunc(p.Syscalls[i].Names, func(n string) bool {
			return slices.Contains(deniedSyscalls, n)
		})
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("seccomp profile: %w", err)
	}
	return string(data), nil
}
