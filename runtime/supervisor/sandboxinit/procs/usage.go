package procs

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// SandboxUsage is what the whole sandbox uses now. CPU time and memory
// come from the container's cgroup where the runtime shows one (v2 or v1,
// runc); under gVisor, which shows none, they are summed over /proc: live
// processes' times, plus what the reaped descendants of PID 1 and of the
// session namespace's holder used, and their resident memory. Processes are
// counted in /proc either way, so that the supervisor's reserved threads
// never look like the program's; neither it nor a holder counts. holders
// are the pids of the session namespaces' holders; workspace and tmp are
// where the sandbox writes.
func SandboxUsage(holders []int, workspace, tmp string) *supervisor.Usage {
	u := &supervisor.Usage{}
	reapers := map[string]bool{"1": true}
	for _, pid := range holders {
		reapers[strconv.Itoa(pid)] = true
	}
	var cpuUS, rss int64
	ForEachProcess(func(pid string, stat []byte) {
		f := StatFields(stat)
		if len(f) < 22 {
			return
		}
		if reapers[pid] {
			// cutime and cstime: every reaped descendant's.
			cpuUS += (atoi64(f[13]) + atoi64(f[14])) * 10000
		} else if f[0] != "Z" {
			u.Processes++
		}
		cpuUS += (atoi64(f[11]) + atoi64(f[12])) * 10000
		rss += atoi64(f[21]) * int64(os.Getpagesize())
	})
	u.CPUUS, u.MemoryBytes = cpuUS, rss
	if c, m, ok := cgroupUsage(); ok {
		u.CPUUS, u.MemoryBytes = c, m
	}
	u.WorkspaceBytes = UsedBytes(workspace)
	u.TmpBytes = UsedBytes(tmp)
	return u
}

// cgroupUsage reads the container's CPU time (µs) and memory in use, less
// the page cache it could drop (as `docker stats` counts it).
func cgroupUsage() (cpuUS, memory int64, ok bool) {
	if stat, err := ReadFile("/sys/fs/cgroup/cpu.stat"); err == nil { // v2
		cpuUS = keyed(stat, "usage_usec")
		memory = fileInt("/sys/fs/cgroup/memory.current")
		memory -= keyed(readFile("/sys/fs/cgroup/memory.stat"), "inactive_file")
		return cpuUS, max(memory, 0), true
	}
	if usage, err := ReadFile("/sys/fs/cgroup/cpuacct/cpuacct.usage"); err == nil { // v1, in ns
		cpuUS = atoi64(string(usage)) / 1000
		memory = fileInt("/sys/fs/cgroup/memory/memory.usage_in_bytes")
		memory -= keyed(readFile("/sys/fs/cgroup/memory/memory.stat"), "total_inactive_file")
		return cpuUS, max(memory, 0), true
	}
	return 0, 0, false
}

// UsedBytes is how much of the file system at dir is in use: a tmpfs of
// the sandbox's own, so statfs tells it at once, sparse files and all.
func UsedBytes(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// ForEachProcess calls fn with each process's pid and /proc stat.
func ForEachProcess(fn func(pid string, stat []byte)) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := ent.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		if stat, err := ReadFile("/proc/" + name + "/stat"); err == nil { // else gone already
			fn(name, stat)
		}
	}
}

// StatFields are a /proc stat's fields after the parenthesised command
// name: the state first, utime the 12th.
func StatFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// keyed reads "key value" from a cgroup's flat-keyed file.
func keyed(data []byte, key string) int64 {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			return atoi64(v)
		}
	}
	return 0
}

func readFile(name string) []byte {
	data, _ := ReadFile(name)
	return data
}

func fileInt(name string) int64 { return atoi64(string(readFile(name))) }

// ReadFile reads a /proc or /sys file with plain system calls: os.ReadFile
// would also register the descriptor with the Go runtime's poller and
// take it back, which the supervisor would pay for each of the dozens of
// such files it reads between two runs.
func ReadFile(name string) ([]byte, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
