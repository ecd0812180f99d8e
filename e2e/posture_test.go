package e2e

import (
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// postureProbe asks, from inside a run, for what the hardening keeps
// from it, each as a line the test reads.
const postureProbe = `
import ctypes, os, socket, struct, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    r = libc.syscall(*args)
    return 'ok' if r >= 0 else 'errno %d' % ctypes.get_errno()
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return line.split()[1]
print('uid', os.getuid() != 0 and os.geteuid() != 0)
print('caps', status('CapInh'), status('CapPrm'), status('CapEff'))
print('capbnd', status('CapBnd'))
print('no_new_privs', libc.prctl(39, 0, 0, 0, 0), 'seccomp', libc.prctl(21, 0, 0, 0, 0))
print('io_uring', call(425, 8, ctypes.create_string_buffer(120)))
print('unshare user', call(272, 0x10000000), 'mount ns', call(272, 0x20000), 'net', call(272, 0x40000000))
print('clone user', call(56, 0x10000000 | 17, 0, 0, 0, 0))
print('clone3', call(435, 0, 0))
print('setns', call(308, 0, 0x10000000))
p = subprocess.run(['unshare', '-Ur', 'true'], capture_output=True)
print('unshare -Ur', p.returncode != 0)
try:
    os.mknod('device-%d' % os.getpid(), 0o20666, os.makedev(1, 3)); print('mknod device made')
except OSError as e:
    print('mknod device errno', e.errno)
os.mkfifo('fifo-%d' % os.getpid()); print('mkfifo made')
print('mount', call(165, b'none', b'/tmp', b'tmpfs', 0, 0))
for name in ('bpf', 'keyctl', 'userfaultfd'):
    print(name, call({'bpf': 321, 'keyctl': 250, 'userfaultfd': 323}[name], 0, 0, 0))
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
rtm = struct.pack('BBBBBBBBI', 2, 0, 0, 0, 254, 3, 0, 1, 0)
s.send(struct.pack('IHHII', 16 + len(rtm), 24, 0x1 | 0x4 | 0x400, 1, 0) + rtm)  # RTM_NEWROUTE
s.settimeout(5)
print('route added', struct.unpack('i', s.recv(4096)[16:20])[0] == 0)
t = threading.Thread(target=lambda: print('thread ran')); t.start(); t.join()
print('ptrace pid 1', call(101, 16, 1, 0, 0))  # PTRACE_ATTACH: the supervisor, the holder, or itself
print('cluster env', sorted(k for k in os.environ if k.startswith('KUBERNETES')))
try:  # a pod's: the kubelet mounts it from the node's disk, writable by anyone
    there = os.path.exists('/dev/termination-log')
    with open('/dev/termination-log', 'a') as log:
        log.write('x' * 4096)
    print('termination log there', there, 'written')
except OSError as e:
    print('termination log there', there, 'errno', e.errno)
ls = subprocess.run(['ls', '-l', '/'], capture_output=True)  # gVisor before 2023 refused coreutils' statx
print('ls exit', ls.returncode, ls.stderr[:200])
try:  # gVisor makes /dev/net/tun; a device on it takes CAP_NET_ADMIN
    import fcntl
    with open('/dev/net/tun', 'r+b', buffering=0) as tun:
        fcntl.ioctl(tun, 0x400454ca, struct.pack('16sH', b'probe', 0x0002))  # TUNSETIFF, IFF_TAP
    print('tun device made')
except OSError as e:
    print('tun device refused', e.errno in (1, 2, 13, 19))
`

// TestPosture: under gVisor a run is held as under runc. Its uid is not
// 0; it holds no capability and can gain none; the seccomp filter is in
// force, so it makes no namespace, no device node, no io_uring and no
// mount; it changes no route and traces no other process. One-shot runs
// (warm or cold) and session commands alike. In a pod too, with the
// profile as a kubelet loads it, and without the cluster's environment.
func TestPosture(t *testing.T) { reuseRuntimes(t, testPosture) }

func testPosture(t *testing.T, runtime string) {
	o := testutil.Options{Runtime: runtime}
	if runtime == "kubernetes" {
		o = reuseOptions(t, runtime)
	}
	d := testutil.StartDaemon(t, o)
	c := d.Client()
	want := []string{
		"uid True", "caps 0000000000000000 0000000000000000 0000000000000000", "no_new_privs 1 seccomp 2",
		"io_uring errno 1", "unshare user errno 1 mount ns errno 1 net errno 1", "clone user errno 1",
		"clone3 errno 38", "setns errno 1", "unshare -Ur True", "mknod device errno 1", "mkfifo made",
		"mount errno 1", "bpf errno 1", "keyctl errno 1", "userfaultfd errno 1", "route added False", "thread ran",
		"ptrace pid 1 errno 1", "cluster env []", "tun device refused True",
		"ls exit 0 b''",
	}
	if runtime == "kubernetes" {
		want = append(want, "termination log there True errno 13") // see keepTerminationLog in sandboxinit
	} else {
		want = append(want, "termination log there False errno 13")
	}
	if runtime != "runsc" {
		// Under gVisor the program's user namespace gives a whole
		// bounding set that cannot be dropped (see lockdown.go in
		// sandboxinit): with nothing permitted and no_new_privs, it
		// grants nothing, which the lines above show.
		want = append(want, "capbnd 0000000000000000")
	}
	check := func(how string, out, stderr string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("%s: want %q in:\n%s\nstderr: %s", how, w, out, stderr)
			}
		}
	}
	warm := run(t, c, api.RunRequest{Language: "python", Code: postureProbe})
	check("a one-shot run", warm.Stdout, warm.Stderr)
	// A program that starts another (not the warm interpreter's fork).
	cold := run(t, c, api.RunRequest{Language: "python", Code: "import subprocess, sys\nsubprocess.run([sys.executable, '-c', " + pyQuote(postureProbe) + "])\n"})
	check("a program's child", cold.Stdout, cold.Stderr)
	id := newSession(t, c, api.SessionRequest{})
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Code: postureProbe})
	if err != nil {
		t.Fatal(err)
	}
	check("a session's command", res.Stdout, res.Stderr)
	res, err = c.Exec(ctx(t), id, api.ExecRequest{Code: postureProbe, Context: "main"})
	if err != nil {
		t.Fatal(err)
	}
	check("a session's context", res.Stdout, res.Stderr)
}

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return "'''" + strings.ReplaceAll(s, `\`, `\\`) + "'''"
}
