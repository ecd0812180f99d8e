// Package procs is what the supervisor reads of the container's processes
// and does to them through /proc: their stat files, what they and the
// container's cgroup used, the kernel's OOM kills, and the kills that end
// a process tree or every process but the supervisor.
package procs

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// KillAll ends every process in the container but us and keep (0:
// none), and keeps at it while a fork bomb races the kill. It returns how
// many processes survived ~1 s. Only PID 1 of a PID namespace may call it.
//
// Sparing keep, it kills the processes one by one, which a fork bomb may
// outrun where kill(-1) does not: after half the time it falls back to
// kill(-1), keep included.
func KillAll(keep int) int {
	start := time.Now()
	for {
		spare := keep > 0 && time.Since(start) < 450*time.Millisecond
		if !spare {
			_ = unix.Kill(-1, unix.SIGKILL)
		}
		n := 0
		ForEachProcess(func(pid string, stat []byte) {
			if p, _ := strconv.Atoi(pid); p > 1 && p != keep && Live(stat) {
				n++
				if spare {
					_ = unix.Kill(p, unix.SIGKILL)
				}
			}
		})
		if n == 0 || time.Since(start) > 900*time.Millisecond {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// KillTree ends root, its process group and every process descended from
// it (a child that left the group by setpgid or setsid goes too), and
// keeps at it while they fork, for ~1 s. It returns how many survived:
// one context's kernel and what its cells started, and nothing else of
// the session (other contexts, servers).
func KillTree(root int) int {
	start := time.Now()
	for first := true; ; first = false {
		parent, group, exiting := map[int]int{}, map[int]int{}, map[int]bool{}
		ForEachProcess(func(pid string, stat []byte) {
			p, _ := strconv.Atoi(pid)
			f := StatFields(stat)
			if p <= 1 || len(f) <= 6 {
				return
			}
			many := threaded(pid)
			if Live(stat) || many {
				parent[p], _ = strconv.Atoi(f[1])
				group[p], _ = strconv.Atoi(f[2])
				flags, _ := strconv.ParseUint(f[6], 10, 64)
				exiting[p] = flags&pfExiting != 0 && !many // on its way out: no survivor
			}
		})
		// The tree is read while root lives (its orphans would go to
		// the holder or PID 1), then all of it is killed at once; by
		// number too, as gVisor's /proc does not list a session's
		// processes, which are in a PID namespace of their own.
		var tree []int
		for p := range parent {
			for q, hops := p, 0; q > 1 && hops < len(parent); q, hops = parent[q], hops+1 {
				if q == root || group[q] == root {
					tree = append(tree, p)
					break
				}
			}
		}
		_ = unix.Kill(-root, unix.SIGKILL)
		_ = unix.Kill(root, unix.SIGKILL)
		for _, p := range tree {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		n := 0
		for _, p := range tree {
			if !exiting[p] {
				n++
			}
		}
		if first {
			n++ // root itself, which /proc may not list: look once more
		}
		if n == 0 || time.Since(start) > 900*time.Millisecond {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pfExiting is the kernel's flag of a process that is exiting (PF_EXITING,
// in /proc/PID/stat's flags): a large one may take a while to free its
// memory.
const pfExiting = 0x4

// threaded says whether process pid has threads but its first: one whose
// first thread ended (pthread_exit) shows as a zombie while the others
// run on.
func threaded(pid string) bool {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	return err == nil && len(tasks) > 1
}

// Live says whether a process's /proc stat is not a zombie's: a zombie is
// dead, and the reaper collects it.
func Live(stat []byte) bool {
	f := StatFields(stat) // the state follows the parenthesised command name
	return len(f) > 0 && f[0] != "Z"
}

// OOMKills reads the container's count of OOM kills from its memory cgroup
// (v2 memory.events, v1 memory.oom_control); -1 when neither is readable.
func OOMKills() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		data, err := ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				return atoi64(v)
			}
		}
	}
	return -1
}

// Usage is what /proc says a process used so far: CPU times in µs,
// memory in bytes.
type Usage struct{ User, Sys, RSS, PeakRSS int64 }

// Process reads a live process's CPU times and memory; zero when it is
// gone.
func Process(pid int) Usage {
	var u Usage
	stat, err := ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return u
	}
	// Fields after the parenthesised name: utime and stime are the 12th
	// and 13th, in clock ticks (100 a second on Linux).
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
		if f := strings.Fields(string(stat[i+1:])); len(f) > 12 {
			u.User, u.Sys = atoi64(f[11])*10000, atoi64(f[12])*10000
		}
	}
	status, _ := ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			u.RSS = atoi64(strings.TrimSuffix(strings.TrimSpace(v), " kB")) * 1024
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			u.PeakRSS = atoi64(strings.TrimSuffix(strings.TrimSpace(v), " kB")) * 1024
		}
	}
	return u
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}
