//go:build amd64 || arm64

package spawn

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestShieldInitHandlesWhatGoLeavesAtItsDefault: after ShieldInit the
// signals the runtime does not handle reach a handler that does nothing
// (sent to ourselves, they would end the test at their default), and a
// program we start has them at their default, neither caught nor ignored.
func TestShieldInitHandlesWhatGoLeavesAtItsDefault(t *testing.T) {
	if err := ShieldInit(); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		for _, sig := range unhandled {
			if err := unix.Kill(os.Getpid(), unix.Signal(sig)); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(50 * time.Millisecond) // time to die, had we been going to

	out, err := exec.Command("grep", "-E", "^Sig(Cgt|Ign):", "/proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, hex, _ := strings.Cut(line, ":")
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		for _, sig := range unhandled {
			if mask&(1<<(sig-1)) != 0 {
				t.Errorf("a program we start has signal %d in its %s: %s", sig, name, line)
			}
		}
	}
}

// TestShieldInitDropsQueuedFaults: a fault signal queued by a process
// (sigqueue's SI_QUEUE) no longer ends us, and a real fault still panics.
func TestShieldInitDropsQueuedFaults(t *testing.T) {
	if err := ShieldInit(); err != nil {
		t.Fatal(err)
	}
	for _, sig := range faults {
		info := unix.Siginfo{Signo: int32(sig), Code: -1} // SI_QUEUE
		for range 20 {
			if _, _, errno := unix.RawSyscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(os.Getpid()), uintptr(sig), uintptr(unsafe.Pointer(&info))); errno != 0 {
				t.Fatal(errno)
			}
		}
	}
	time.Sleep(50 * time.Millisecond)
	var p *int
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil pointer") {
				t.Errorf("a nil dereference recovered %v", r)
			}
		}()
		_ = *p
	}()
}
