package fresh

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
)

// SysV IPC objects (shared memory segments, semaphore sets, message
// queues) outlive the processes that made them, so a one-shot sandbox's
// are found and removed between runs. The kernel lists a namespace's in
// /proc/sysvipc. gVisor has no such files, and gives objects ids in
// sequence (wrapping at ipcMaxID): there the objects made since the
// sandbox was last found clean lie between the id of a probe object made
// then and one made now, and those ids are what is searched.

// ipcMaxID bounds gVisor's SysV IPC ids (Linux's IPCMNI).
const ipcMaxID = 32768

// ipcKind is one kind of SysV IPC object.
type ipcKind struct {
	name string
	get  func() (int, error) // makes a private object
	rm   func(id int) error
	stat func(id int) bool // whether id names an object
}

var ipcKinds = []ipcKind{
	{"shm",
		func() (int, error) { return unix.SysvShmGet(0, 1, 0o600) },
		func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err },
		func(id int) bool {
			var d unix.SysvShmDesc
			_, err := unix.SysvShmCtl(id, unix.IPC_STAT, &d)
			return err == nil
		}},
	{"sem",
		func() (int, error) { return ipcCall(unix.SYS_SEMGET, 0, 1, 0o600) },
		func(id int) error { _, err := ipcCall(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID); return err },
		func(id int) bool { return ipcStat(unix.SYS_SEMCTL, id, 0, unix.IPC_STAT) }},
	{"msg",
		func() (int, error) { return ipcCall(unix.SYS_MSGGET, 0, 0o600, 0) },
		func(id int) error { _, err := ipcCall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0); return err },
		func(id int) bool { return ipcStat(unix.SYS_MSGCTL, id, unix.IPC_STAT, 0) }},
}

func ipcCall(trap, a, b, c uintptr) (int, error) {
	r, _, errno := unix.Syscall6(trap, a, b, c, 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// ipcStat asks for an object's ids (semctl takes the buffer fourth,
// msgctl third).
func ipcStat(trap uintptr, id int, b, c uintptr) bool {
	var buf [256]byte // larger than semid_ds and msqid_ds
	args := []uintptr{uintptr(id), b, c, 0}
	if trap == unix.SYS_MSGCTL {
		args[2] = uintptr(unsafe.Pointer(&buf))
	} else {
		args[3] = uintptr(unsafe.Pointer(&buf))
	}
	_, _, errno := unix.Syscall6(trap, args[0], args[1], args[2], args[3], 0, 0)
	return errno == 0
}

// ipcObjects finds a namespace's SysV IPC objects.
type ipcObjects struct {
	mu    sync.Mutex
	clean map[string]int // gVisor: per kind, the probe id when last found clean
}

var sysvIPC = &ipcObjects{clean: map[string]int{}}

// ids are the ids of kind's objects; with /proc/sysvipc absent, those
// made since it was last found with none.
func (o *ipcObjects) ids(k ipcKind) []int {
	if data, err := procs.ReadFile("/proc/sysvipc/" + k.name); err == nil {
		var out []int
		lines := strings.Split(string(data), "\n")
		for _, line := range lines[min(1, len(lines)):] { // a header line first
			if f := strings.Fields(line); len(f) > 1 {
				if id, err := strconv.Atoi(f[1]); err == nil {
					out = append(out, id)
				}
			}
		}
		return out
	}
	probe, err := k.get()
	if err != nil {
		return nil
	}
	_ = k.rm(probe)
	o.mu.Lock()
	from, ok := o.clean[k.name]
	if !ok {
		o.clean[k.name] = probe
	}
	o.mu.Unlock()
	if !ok {
		return nil // the first look: a new sandbox (from probe to itself would be every id)
	}
	var out []int
	for id := (from + 1) % ipcMaxID; id != probe; id = (id + 1) % ipcMaxID {
		if k.stat(id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		o.mu.Lock()
		o.clean[k.name] = probe // none now: later looks start here
		o.mu.Unlock()
	}
	return out
}

// ClearIPC removes every SysV IPC object of the sandbox's namespace (all
// the sandbox's own: the namespace is private to the container).
func ClearIPC() { sysvIPC.clear() }

func (o *ipcObjects) clear() {
	for _, k := range ipcKinds {
		for _, id := range o.ids(k) {
			_ = k.rm(id)
		}
	}
}

// list names every object, for a view of the sandbox.
func (o *ipcObjects) list() []string {
	var out []string
	for _, k := range ipcKinds {
		for _, id := range o.ids(k) {
			out = append(out, fmt.Sprintf("ipc %s %d", k.name, id))
		}
	}
	return out
}
