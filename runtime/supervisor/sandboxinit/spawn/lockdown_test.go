package spawn

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A program started locked down, in namespaces of its own as under
// gVisor, has no capability (its bounding set included), no_new_privs
// and the filter; it cannot make a namespace, a device node, an io_uring
// or a tun device, nor make a call the 32-bit way, and it can make a FIFO
// and threads. A program that
// cannot be started fails as a plain exec would.
func TestLockedDown(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	fork := func(path string, argv []string, files []uintptr) (int, error) {
		return syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Files: files, Sys: namespaced(0)})
	}
	script := `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
unshare -U true 2>/dev/null && echo unshare: made || echo unshare: refused
unshare -n true 2>/dev/null && echo unshare-net: made || echo unshare-net: refused
mknod dev c 1 3 2>/dev/null && echo mknod: made || echo mknod: refused
mkfifo fifo && echo mkfifo: made
python3 -c "
import ctypes, threading
libc = ctypes.CDLL(None, use_errno=True)
print('io_uring:', libc.syscall(425, 8, ctypes.create_string_buffer(120)), ctypes.get_errno())
print('clone3:', libc.syscall(435, 0, 0), ctypes.get_errno())
print('tunsetiff:', libc.syscall(16, 0, 0x400454ca, 0), ctypes.get_errno())
print('tunsetiff high:', libc.syscall(16, 0, 0x1400454ca, 0), ctypes.get_errno())
import mmap, platform
if platform.machine() == 'x86_64':  # getpid the i386 way: mov eax, 20; int 0x80; ret
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))
    print('int80:', ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))())
else:
    print('int80: -38')
t = threading.Thread(target=lambda: print('thread: ran')); t.start(); t.join()
"`
	pid, err := startLocked(fork, os.Args[0], "/bin/sh", []string{"sh", "-c", script}, []uintptr{0, out.Fd(), out.Fd()})
	if err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out.Name())
	for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
		"unshare: refused", "unshare-net: refused", "mknod: refused", "mkfifo: made",
		"io_uring: -1 1", "clone3: -1 38", "tunsetiff: -1 1", "tunsetiff high: -1 1", "int80: -38", "thread: ran"} {
		if !strings.Contains(string(got), want+"\n") {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}

	if _, err := startLocked(fork, os.Args[0], "/nonexistent", []string{"x"}, []uintptr{0, 1, 2}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing program: %v", err)
	}
}
