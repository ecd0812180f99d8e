package spawn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Under gVisor a program runs in a user namespace of its own (see
// isolate.go), whose first process holds every capability in it, and
// runsc applies no seccomp profile inside the sandbox (see
// scripts/docker-engine.sh). So the program's last step before its exec,
// in the namespace, gives up what runc's container never had: every
// capability, the right to gain privileges, and the system calls Docker's
// profile keeps from a process without capabilities, by a filter of our
// own. So does every program wherever no filter holds the supervisor
// (server.unfiltered). Under runc the container's profile, capabilities
// and no_new_privs already do this, and programs start as before.

// lockedArg: sandbox-init -locked FD PATH ARGV... locks down and execs
// PATH with the descriptors below FD; FD is where it says why it could
// not (see startLocked).
const lockedArg = "-locked"

// Namespace flags of clone and unshare: a program gets none.
const newNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// deviceBit is in the mode of mknod for a character or block device (and
// in neither a FIFO's, a socket's nor a regular file's).
const deviceBit = unix.S_IFCHR

// errno is the filter's action for a call refused with err.
func errno(err unix.Errno) seccomp.Action { return seccomp.ActionErrno | seccomp.Action(err) }

// programPolicy is the filter a program under gVisor runs with: what
// Docker's default profile (runtime/seccomp.go) refuses a process with no
// capabilities, and io_uring, as sandboxd's profile refuses it.
var programPolicy = seccomp.Policy{
	DefaultAction: seccomp.ActionAllow,
	Syscalls: []seccomp.SyscallGroup{
		{Action: errno(unix.EPERM), Names: []string{
			"unshare", "setns", "mount", "umount2", "pivot_root", "move_mount", "open_tree",
			"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
			"io_uring_setup", "io_uring_enter", "io_uring_register",
			"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
			"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
			"open_by_handle_at", "lookup_dcookie", "quotactl", "acct", "swapon", "swapoff", "reboot",
			"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "vhangup", "iopl", "ioperm",
		}},
		{Action: errno(unix.EPERM), NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "clone", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: newNamespaces}}},
			{Name: "mknod", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.BitsSet, Value: deviceBit}}},
			{Name: "mknodat", Conditions: []seccomp.Condition{{Argument: 2, Operation: seccomp.BitsSet, Value: deviceBit}}},
			// gVisor makes /dev/net/tun, and makes a device on it for a
			// process without CAP_NET_ADMIN.
			{Name: "ioctl", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.Equal, Value: unix.TUNSETIFF}}},
		}},
		// A kernel reads an ioctl's request as 32 bits: with the upper
		// ones set, TUNSETIFF would not be the number above.
		{Action: errno(unix.EPERM), NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "ioctl", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.GreaterThan, Value: 0xffffffff}}},
		}},
		// clone3's flags are in memory, out of a filter's reach: as in
		// Docker's profile, it is "not implemented", and libc falls back
		// to clone.
		{Action: errno(unix.ENOSYS), Names: []string{"clone3"}},
	},
}

// lockDown gives up, for the calling thread and what it execs, every
// capability and the right to gain any, and loads programPolicy.
func lockDown() error {
	// Capabilities and no_new_privs are per thread: the exec is on this one.
	runtime.LockOSThread()
	// The bounding set goes where the process may drop it: in a user
	// namespace of its own it is whole, and the exec into this binary
	// took every capability from a uid not 0, CAP_SETPCAP with them
	// (gVisor's 2022 release has no ambient capabilities to keep one).
	// With nothing permitted, no_new_privs and no new namespaces, a
	// bounding set grants nothing: it only caps what an exec may gain.
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err == unix.EPERM {
			break
		} else if err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	var none [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: programPolicy}); err != nil {
		return err
	}
	return loadNativeOnly()
}

// loadNativeOnly refuses, with ENOSYS, every system call made in another
// architecture's convention (int $0x80, x32), which programPolicy's
// library lets through to its default action: under gVisor they do not
// get that far, but the lockdown also holds wherever no filter holds the
// supervisor, on a kernel of its own.
func loadNativeOnly() error {
	arch, ok := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no lockdown for architecture %s", runtime.GOARCH)
	}
	const x32 = 0x40000000 // the x32 ABI's bit in an amd64 call's number
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: arch, SkipTrue: 3},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: deny},
	})
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("loading the architecture filter: %w", errno)
	}
	return nil
}

// startLocked starts argv0 locked down: fork starts sandbox-init as
// lockedArg with files and one more, where a failed exec is told, so
// that it fails here as a plain exec would.
func startLocked(fork func(path string, argv []string, files []uintptr) (int, error), self, argv0 string, argv []string, files []uintptr) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	pid, err := fork(self, append([]string{"sandbox-init", lockedArg, strconv.Itoa(len(files)), argv0}, argv...), append(files, w.Fd()))
	w.Close()
	if err != nil {
		return 0, err
	}
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	why, _ := io.ReadAll(io.LimitReader(r, 4096))
	if len(why) > 0 {
		return 0, errors.New(string(why)) // it exits; the reaper collects it
	}
	return pid, nil
}

// locked is sandbox-init started as lockedArg: it never returns.
func locked(args []string) {
	fd := -1
	if len(args) >= 3 {
		fd, _ = strconv.Atoi(args[0])
	}
	if fd < 3 {
		os.Exit(2)
	}
	unix.CloseOnExec(fd) // closed by the exec: the sign that it worked
	err := lockDown()
	if err == nil {
		err = syscall.Exec(args[1], args[2:], os.Environ())
	}
	_, _ = unix.Write(fd, []byte(err.Error()))
	os.Exit(127)
}
