package warm

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAZygoteChangedIsSeen: what another process of the zygote's uid may
// do to it, and a fork of it would inherit, makes it changed.
func TestAZygoteChangedIsSeen(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	stat := func(name string) string { data, _ := os.ReadFile(name); return string(data) }
	traits, err := traitsOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	z := &zygote{pid: pid, traits: traits}
	if why := z.changed(); why != "" {
		t.Fatalf("unchanged, it says %q", why)
	}
	var one unix.CPUSet
	one.Set(0)
	for _, c := range []struct {
		name   string
		change func() error
		says   string
	}{
		{"reniced", func() error { return unix.Setpriority(unix.PRIO_PROCESS, pid, 15) }, "sched"},
		{"a lower limit", func() error { return unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 64, Max: 64}, nil) }, "open files"},
		{"an I/O priority", func() error {
			const ioprioWhoProcess, idleClass = 1, 3
			if _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(pid), idleClass<<13); errno != 0 {
				return errno
			}
			return nil
		}, "ioprio"},
		{"stopped", func() error {
			err := unix.Kill(pid, unix.SIGSTOP)
			for i := 0; i < 100 && err == nil && !strings.Contains(stat(fmt.Sprintf("/proc/%d/stat", pid)), ") T"); i++ {
				time.Sleep(10 * time.Millisecond) // until it is delivered
			}
			return err
		}, "state"},
	} {
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if why := z.changed(); !strings.Contains(why, c.says) {
			t.Errorf("%s: changed says %q", c.name, why)
		}
		_ = unix.Kill(pid, unix.SIGCONT)
		if z.traits, err = traitsOf(pid); err != nil {
			t.Fatal(err)
		}
	}
	var all unix.CPUSet
	if unix.SchedGetaffinity(pid, &all) == nil && all.Count() > 1 {
		if err := unix.SchedSetaffinity(pid, &one); err != nil {
			t.Fatal(err)
		}
		if why := z.changed(); !strings.Contains(why, "Cpus_allowed_list") {
			t.Errorf("another CPU affinity: changed says %q", why)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if why := z.changed(); why != "it is gone" {
		t.Errorf("gone: changed says %q", why)
	}
}
