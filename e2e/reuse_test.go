package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/client"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// One container serves many one-shot runs, each in a sandbox made fresh:
// what a run leaves behind is gone before the next, which sees exactly
// what a run in a brand-new container sees.

// reusePool is a python pool of one container, so that every run lands in
// the container the run before it left, unless that one was retired.
const reusePool = `
language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle      = 1
    max           = 1
    queue_timeout = "60s"  # gVisor's containers start slowly on a loaded machine
  }
}
`

// reuseRuntimes runs a reuse test under runc and gVisor, and in pods of
// the cluster ("kubernetes"), which are reused the same way.
func reuseRuntimes(t *testing.T, test func(t *testing.T, runtime string)) {
	ociRuntimes(t, test)
	t.Run("kubernetes", func(t *testing.T) {
		testutil.RequireCluster(t)
		t.Parallel()
		test(t, "kubernetes")
	})
}

// reuseOptions are a daemon's with reusePool under runtime.
func reuseOptions(t *testing.T, runtime string) testutil.Options {
	if runtime != "kubernetes" {
		return testutil.Options{Runtime: runtime, Languages: reusePool}
	}
	return testutil.Options{Cluster: testutil.RequireCluster(t), Languages: strings.Replace(reusePool, `image = "sandboxd/python:latest"`,
		`image   = "sandboxd/python:latest"
  runtime = "kubernetes"
  limits {
    cpus = 0.2
  }`, 1)}
}

// probe prints what a program can find that an earlier one could have
// left: processes, every writable place's tree (modes, owners, sizes,
// extended attributes), SysV and POSIX IPC, bound sockets, and its own
// environment, ids, umask, directory, limits, nice and oom_score_adj.
const probe = `
import ctypes, json, os, resource, stat
view = {}
me = os.getpid()
def owner(uid, gid):  # a container's uid is its own: another's differs
    return ':'.join('me' if i == os.getuid() else str(i) for i in (uid, gid))
procs = []
for p in os.listdir('/proc'):
    if p.isdigit() and int(p) not in (me, 1):
        try:
            procs.append(open('/proc/%s/cmdline' % p).read().replace('\0', ' ').strip())
        except OSError:
            pass
view['processes'] = sorted(procs)
for top in ('/workspace', '/tmp', '/dev/shm', '/dev/mqueue'):
    tree = []
    for root, dirs, files in os.walk(top):
        for n in sorted(dirs + files):
            path = os.path.join(root, n)
            st = os.lstat(path)
            tree.append('%s %s %s %d' % (path, stat.filemode(st.st_mode), owner(st.st_uid, st.st_gid), 0 if stat.S_ISDIR(st.st_mode) else st.st_size))
    st = os.lstat(top) if os.path.exists(top) else None
    view[top] = [st and stat.filemode(st.st_mode), st and os.listxattr(top), sorted(tree)]
libc = ctypes.CDLL(None, use_errno=True)
# A private object of each SysV kind: its id shows nothing, but an object
# left under the implants' key would be found by it.
view['sysv_key'] = [libc.shmget(0x5eed, 0, 0) == -1, libc.semget(0x5eed, 0, 0) == -1, libc.msgget(0x5eed, 0) == -1]
def rows(name, keep):
    try:
        lines = open('/proc/net/' + name).read().splitlines()[1:]
    except OSError:
        return []
    return sorted(l.split()[1] if name != 'unix' else ' '.join(l.split()[7:]) for l in lines if keep(l.split()))
view['sockets'] = [rows('tcp', lambda f: f[3] == '0A'), rows('tcp6', lambda f: f[3] == '0A'), rows('udp', lambda f: True), rows('unix', lambda f: len(f) > 7)]
view['env'] = sorted(os.environ.items())
umask = os.umask(0o22)
view['ids'] = [owner(os.getuid(), os.getgid()), [owner(g, g) for g in os.getgroups()], oct(umask), os.getcwd(), os.nice(0), open('/proc/self/oom_score_adj').read().strip()]
view['limits'] = [resource.getrlimit(r) for r in (resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC, resource.RLIMIT_CORE, resource.RLIMIT_STACK)]
status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)
view['sched'] = [sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0)] + [status.get(k, '').strip() for k in ('SigPnd', 'ShdPnd', 'SigBlk', 'SigIgn')]  # gVisor has none
print(json.dumps(view, sort_keys=True))
`

// implants are programs that try to leave something for the next run.
var implants = []struct{ name, code string }{
	{"setsid daemon", `
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.chdir('/tmp'); time.sleep(10**6)
    os._exit(0)
print('planted')`},
	{"a file in every writable place", `
import os
for d in ('/workspace', '/tmp', '/dev/shm', '/workspace/outputs', '/tmp/.sandboxd'):
    open(os.path.join(d, 'implant'), 'w').write('left for the next run')
os.makedirs('/workspace/deep/er'); open('/workspace/deep/er/f', 'w').write('x')
os.chmod('/workspace/deep/er', 0); os.chmod('/workspace/deep', 0)
os.symlink('/etc/passwd', '/tmp/link')
try:
    os.chmod('/workspace', 0o700)
except PermissionError:
    pass  # a pod's workspace is its volume's, owned by root
os.truncate(os.open('/tmp/sparse', os.O_CREAT | os.O_WRONLY), 1 << 40)
print('planted')`},
	{"a FIFO and a socket file in /tmp", `
import os, socket
os.mkfifo('/tmp/fifo')
s = socket.socket(socket.AF_UNIX); s.bind('/tmp/sock'); s.listen()
print('planted')`},
	{"SysV and POSIX IPC objects", `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
assert libc.shmget(0x5eed, 4096, 0o1666) >= 0
assert libc.semget(0x5eed, 1, 0o1666) >= 0
assert libc.msgget(0x5eed, 0o1666) >= 0
assert libc.shmget(0, 4096, 0o1600) >= 0  # IPC_PRIVATE
if os.path.isdir('/dev/mqueue'):
    libc.mq_open(b'/implant', os.O_CREAT | os.O_RDWR, 0o600, None)
open('/dev/shm/sem.implant', 'w').write('x')
print('planted')`},
	{"abstract and loopback listeners held by a background process", `
import os, socket, time
if os.fork() == 0:
    os.setsid()
    a = socket.socket(socket.AF_UNIX); a.bind('\0implant'); a.listen()
    t = socket.socket(); t.bind(('127.0.0.1', 8081)); t.listen()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('127.0.0.1', 5353))
    time.sleep(10**6)
time.sleep(0.2)
print('planted')`},
	{"a descriptor in flight over a socket", `
import os, socket, array
a, b = socket.socketpair(socket.AF_UNIX)
fd = os.open('/tmp/secret', os.O_CREAT | os.O_RDWR)
a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd, a.fileno(), b.fileno()]))])
print('planted')`},
	{"a huge environment, a deep directory, a changed umask and a lock", `
import os, fcntl, time
os.umask(0)
os.environ['IMPLANT'] = 'x' * (1 << 17)
d = '/workspace'
for i in range(200):
    d = os.path.join(d, 'd%d' % i)
os.makedirs(d); os.chdir(d)
f = open('/tmp/lock', 'w'); fcntl.flock(f, fcntl.LOCK_EX)
if os.fork() == 0:
    os.setsid(); time.sleep(10**6)
print('planted')`},
	{"an oom_score_adj raised and lowered", `
import os, time
open('/proc/self/oom_score_adj', 'w').write('1000')
try:
    open('/proc/self/oom_score_adj', 'w').write('-1000')
except OSError:
    pass
if os.fork() == 0:
    os.setsid(); time.sleep(10**6)
print('planted')`},
	{"a write into the warm runtime's files", `
import os
for root, dirs, files in os.walk('/tmp/.sandboxd'):
    for n in files:
        p = os.path.join(root, n)
        try:
            open(p, 'a').write('\nprint("IMPLANTED")\n')
        except OSError:
            pass
open('/tmp/.sandboxd/sitecustomize.py', 'w').write('print("IMPLANTED")\n')
print('planted')`},
	{"every process in reach stopped, reniced, limited, pinned and signalled", `
import os, resource, signal
me = os.getpid()
for p in os.listdir('/proc'):
    if not p.isdigit() or int(p) in (1, me):
        continue
    pid = int(p)  # the warm runtime's zygote among them, under runc
    for act in (lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64)),
                lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
                lambda: os.sched_setaffinity(pid, {0}),
                lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
                lambda: os.kill(pid, signal.SIGRTMIN),
                lambda: os.kill(pid, signal.SIGUSR1),
                lambda: os.kill(pid, signal.SIGSTOP)):
        try:
            act()
        except OSError:
            pass
print('planted')`},
	{"an extended attribute on the workspace", `
import os
try:
    os.setxattr('/workspace', 'user.implant', b'left')
except PermissionError:
    pass  # a pod's workspace is its volume's, owned by root
print('planted')`},
	{"the disk filled", `
import os
try:
    with open('/tmp/fill', 'wb') as f:
        while True: f.write(b'x' * (1 << 20))
except OSError:
    pass
print('planted')`},
}

// TestReuseLeavesNothing runs each implant and then the probe in the same
// container, under runc and gVisor: the probe must see what it sees in a
// brand-new container.
func TestReuseLeavesNothing(t *testing.T) { reuseRuntimes(t, testReuseLeavesNothing) }

func testReuseLeavesNothing(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, reuseOptions(t, runtime))
	c := d.Client()
	fresh := run(t, c, api.RunRequest{Language: "python", Code: probe})
	if fresh.ExitCode != 0 || fresh.Container == "" {
		t.Fatalf("probe in a new container: %+v", fresh)
	}
	container := fresh.Container
	for _, im := range implants {
		began := time.Now()
		res := run(t, c, api.RunRequest{Language: "python", Code: im.code})
		t.Logf("%s: ran in %s (%s in all)", im.name, time.Duration(res.Timings.RunMS*float64(time.Millisecond)), time.Since(began))
		if res.ExitCode != 0 || res.Stdout != "planted\n" {
			t.Fatalf("%s: exit %d %q %q", im.name, res.ExitCode, res.Stdout, res.Stderr)
		}
		if res.Container != container {
			t.Fatalf("%s ran in %s, not in %s", im.name, res.Container, container)
		}
		after := run(t, c, api.RunRequest{Language: "python", Code: probe})
		if after.Container != container {
			t.Fatalf("after %s: the container was retired (%s, then %s): recycling could not undo it; the daemon's log says why",
				im.name, container, after.Container)
		}
		if after.Stdout != fresh.Stdout || after.Stderr != "" || strings.Contains(after.Stdout, "IMPLANTED") {
			t.Fatalf("after %s the next run saw:\n%s\n%s\na new container's run saw:\n%s", im.name, after.Stdout, after.Stderr, fresh.Stdout)
		}
		if !after.Warm {
			t.Errorf("after %s the probe ran cold: the warm runtime was not started again", im.name)
		}
	}
	p := pool(t, c, "python")
	if p.Reused < uint64(2*len(implants)) || p.Created != 1 {
		t.Errorf("one container should have served every run: %+v", p)
	}
}

// TestReuseAfterHostilePrograms runs the hostile programs one at a time in
// a pool of one container, each followed by a canary: the probe, which
// must see what a new container's run sees, whether the hostile run's
// container was recycled or retired.
func TestReuseAfterHostilePrograms(t *testing.T) { reuseRuntimes(t, testReuseAfterHostilePrograms) }

func testReuseAfterHostilePrograms(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, reuseOptions(t, runtime))
	c := d.Client()
	fresh := run(t, c, api.RunRequest{Language: "python", Code: probe})
	if fresh.ExitCode != 0 {
		t.Fatalf("probe: %+v", fresh)
	}
	recycled := 0
	for _, h := range hostileForReuse {
		res := run(t, c, api.RunRequest{Language: "python", Code: h.code, Timeout: api.Duration(2 * time.Second),
			Limits: &api.Limits{Memory: h.memory}})
		canary := run(t, c, api.RunRequest{Language: "python", Code: probe})
		if canary.Stdout != fresh.Stdout {
			t.Fatalf("after %q the canary saw:\n%s\n%s\na new container's run saw:\n%s", h.name, canary.Stdout, canary.Stderr, fresh.Stdout)
		}
		if canary.Container == res.Container {
			recycled++
		}
		t.Logf("%s: exit %d, timed out %v, oom %v; container %s, canary's %s", h.name, res.ExitCode, res.TimedOut, res.OOMKilled, res.Container, canary.Container)
	}
	if recycled == 0 {
		t.Error("no hostile run's container was recycled: the canaries never ran where a hostile program had")
	}
}

// hostileForReuse are hostile programs for TestReuseAfterHostilePrograms
// (TestHostilePrograms has the full list, run side by side).
var hostileForReuse = []struct {
	name, code string
	memory     api.ByteSize
}{
	{"fork bomb", "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n", 0},
	{"setsid grandchild", "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(10**6)\n    os._exit(0)\nprint('parent done')\n", 0},
	{"SIGTERM ignorer", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(1)\n", 0},
	{"memory bomb", "x = bytearray(2 << 30)\n", 128 << 20},
	{"zombie army", "import os, time\nfor _ in range(100):\n    if os.fork() == 0: os._exit(0)\ntime.sleep(10**6)\n", 0},
	{"stdout flood", "import sys\nwhile True: sys.stdout.write('o' * 65536)\n", 0},
	// Each signal, 20 times over: one sent while PID 1's thread blocks it
	// (running a handler for another) once ended sandbox-init at its
	// default, one run in ten (see spawn.ShieldInit).
	{"signals to PID 1", "import os\nfor _ in range(20):\n    for sig in range(1, 65):\n        try: os.kill(1, sig)\n        except OSError: pass\nprint('sent')\n", 0},
	// A fault's signal queued with sigqueue (si_code SI_QUEUE): the Go
	// runtime took it for a fault of its own and died (see filterFaults).
	{"queued faults to PID 1", "import ctypes\nlibc = ctypes.CDLL(None)\nfor _ in range(5):\n    for sig in (4, 5, 7, 8, 11, 31):\n        libc.sigqueue(1, sig, ctypes.c_void_p(0))\nprint('sent')\n", 0},
}

// pool is a language's pool figures.
func pool(t *testing.T, c *client.Client, name string) api.PoolStats {
	t.Helper()
	pools, err := c.Pools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pools[name]
	if !ok {
		t.Fatalf("no pool %s", name)
	}
	return p
}
