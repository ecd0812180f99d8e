package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// ociRuntimes runs test once per OCI runtime sandboxes may run under:
// runc, and gVisor's runsc (the engine must have it when CI=true).
func ociRuntimes(t *testing.T, test func(t *testing.T, runtime string)) {
	for _, rt := range []string{"runc", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			testutil.RequireRuntime(t, rt)
			t.Parallel()
			test(t, rt)
		})
	}
}

// TestHardening checks the container from the inside, as the code we run
// sees it.
func TestHardening(t *testing.T) { ociRuntimes(t, testHardening) }

func testHardening(t *testing.T, runtime string) {
	d := testutil.StartDaemon(t, testutil.Options{Runtime: runtime})
	res := run(t, d.Client(), api.RunRequest{Language: "python", Code: `
import os, ctypes, socket, time
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return line.split()[1]
print('uid', os.getuid() >= 1100000000 and os.getuid() == os.getgid() and os.stat('/workspace').st_uid == os.getuid())
print('capeff', status('CapEff'), 'capbnd', status('CapBnd'))
print('nonewprivs', status('NoNewPrivs'), 'seccomp', status('Seccomp'))
print('pid1', open('/proc/1/cmdline').read().split('\0')[0])
print('kernel', os.uname().release == '4.4.0' and 'gVisor' or 'host')
print('ifaces', sorted(n for _, n in socket.if_nameindex()))
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(425, 8, ctypes.create_string_buffer(120))  # io_uring_setup
print('io_uring', r, ctypes.get_errno())
print('workspace', os.getcwd(), oct(os.stat('.').st_mode & 0o777))
mounts = {l.split()[1]: l.split()[3] for l in open('/proc/mounts')}
try:
    open('/etc/evil', 'w'); print('rootfs writable')
except OSError as e:
    print('rootfs', 'ro' in mounts['/'].split(',') and e.errno in (13, 30) and 'read-only' or e)
print('ws_opts', 'nosuid' in mounts['/workspace'] and 'nodev' in mounts['/workspace'])
print('docker_sock', os.path.exists('/var/run/docker.sock'))
print('nice', os.nice(0), 'oom_score_adj', open('/proc/self/oom_score_adj').read().strip())
print('env', sorted(k for k in os.environ if k.startswith(('SANDBOXD', 'DOCKER', 'CI'))))
try:
    print('pid1_environ', len(open('/proc/1/environ').read()))
except OSError as e:
    print('pid1_environ errno', e.errno)
chan = '/.sandboxd/channel/supervisor.sock'
if os.path.exists(chan):  # the supervisor's channel to sandboxd (runc)
    print('channel_ro', 'ro' in mounts['/.sandboxd/channel'].split(','))
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(chan)
    s.sendall(b'0123456789abcdef0123456789abcdef\n{"op":"hello","hello":{"nonce":"x","version":1}}\n')
    print('channel_guess', s.recv(100))
    # Connections that never send a token: sandboxd keeps a few per
    # sandbox and closes the rest at once.
    held = []
    for _ in range(50):
        c = socket.socket(socket.AF_UNIX)
        c.connect(chan)
        held.append(c)
    time.sleep(0.5)
    closed = 0
    for c in held:
        c.settimeout(0.05)
        try:
            closed += c.recv(1) == b''
        except socket.timeout:
            pass
    print('channel_flood_held', 50 - closed)
`})
	want := []string{
		"uid True", // its own, from the test daemon's sandbox_uids; the workspace is its
		"capeff 0000000000000000 ",
		"rootfs read-only",
		"pid1 /.sandboxd/init",
		"ifaces ['lo']",
		"workspace /workspace",
		"docker_sock False",
		"nice 10 oom_score_adj 1000", // the supervisor wins CPU and memory over the program
		"env []",
	}
	switch runtime {
	case "runc":
		want = append(want, "kernel host", "capbnd 0000000000000000", "nonewprivs 1 seccomp 2", "io_uring -1 1" /* EPERM */, "ws_opts True",
			// The channel's socket: read-only, and closed to a guessed
			// token; the supervisor's own token is not in reach.
			"pid1_environ errno 13", "channel_ro True", "channel_guess b''", "channel_flood_held 4")
	case "runsc":
		// The program's system calls reach gVisor's kernel, which shows
		// no NoNewPrivs line (TestPosture asks prctl). A run is in a
		// user namespace of its own, whose bounding set is whole and
		// cannot be dropped (gVisor has no ambient capabilities); it
		// gives up the rest before its first instruction, and the filter
		// refuses io_uring (lockdown.go in sandboxinit).
		want = append(want, "kernel gVisor", "seccomp 2", "io_uring -1 1")
	}
	for _, w := range want {
		if !strings.Contains(res.Stdout, w) {
			t.Errorf("want %q in:\n%s\nstderr: %s", w, res.Stdout, res.Stderr)
		}
	}
}

// TestHostilePrograms runs programs written to break the limits. Each must
// come back within its deadline plus a second, say what happened, and leave
// the daemon healthy; a well-behaved run beside them is unharmed. Programs
// run by warm runtimes (started ahead) and cold alike.
func TestHostilePrograms(t *testing.T) {
	// Cold first, alone: three daemons' hostile programs at once would
	// load these 2 cores past the deadlines' margin.
	t.Run("runc cold", func(t *testing.T) { testHostilePrograms(t, "runc", false) })
	ociRuntimes(t, func(t *testing.T, runtime string) { testHostilePrograms(t, runtime, true) })
}

// testHostilePrograms runs the hostile programs in python sandboxes of an
// OCI runtime of the engine, or in pods ("kubernetes"), with a node one of
// the engine's as their neighbour.
func testHostilePrograms(t *testing.T, runtime string, warm bool) {
	opts := testutil.Options{Runtime: runtime, Languages: fmt.Sprintf(`
language "python" {
  image = "sandboxd/python:latest"
  warm  = %[1]v
  pool {
    min_idle = 3
    max      = 12
    max_runs = 1   # side by side, each in a new container; one by one in a recycled one: reuse_test.go
  }
}
language "node" {
  image = "sandboxd/node:latest"
  warm  = %[1]v
  pool {
    min_idle      = 0
    max           = 2
    queue_timeout = "1m" # its containers are made while the hostile programs load the machine
  }
}`, warm)}
	if runtime == "kubernetes" {
		// Pods request the cpu they may use: a fifth of a core each
		// lets the 2-core node hold eight.
		opts.Cluster, opts.Runtime = testutil.RequireCluster(t), ""
		opts.Languages = strings.Replace(kubernetesLanguages(3, 8), `runtime = "kubernetes"`, `runtime = "kubernetes"
  warm    = true`, 1)
	}
	d := testutil.StartDaemon(t, opts)
	c := d.Client()
	const deadline = 2 * time.Second
	cases := []struct {
		name  string
		code  string
		check func(r *api.RunResult) string
	}{
		{"fork bomb", "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n", timedOut},
		{"shell fork bomb", "import os\nos.execvp('sh', ['sh', '-c', 'b(){ b|b & }; b; sleep 100'])\n", contained},
		{"sleep forever", "import time\ntime.sleep(10**6)\n", timedOut},
		{"threads busy loop", "import threading\ndef spin():\n    while True: pass\nfor _ in range(8):\n    threading.Thread(target=spin).start()\n", timedOut},
		{"SIGTERM ignorer", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(1)\n", timedOut},
		{"setsid grandchild outlives its parent", "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(10**6)\n    os._exit(0)\nprint('parent done')\n",
			func(r *api.RunResult) string {
				if r.ExitCode != 0 || r.TimedOut || r.Stdout != "parent done\n" {
					return "parent should exit 0 at once"
				}
				return ""
			}},
		{"memory bomb in a child", "import os\npid = os.fork()\nif pid == 0:\n    x = bytearray(1 << 30)\n    os._exit(0)\nos.waitpid(pid, 0)\nprint('parent fine')\n",
			func(r *api.RunResult) string {
				if !r.OOMKilled || r.ExitCode != 0 {
					return "a child's OOM kill must be reported while the parent exits 0"
				}
				return ""
			}},
		{"memory bomb in the main process", "x = bytearray(2 << 30)\nprint('survived')\n",
			func(r *api.RunResult) string {
				if !r.OOMKilled || r.ExitCode != 137 {
					return "the OOM kill must be reported with exit 137"
				}
				return ""
			}},
		{"stdout flood without newlines", "import sys\nwhile True: sys.stdout.write('o' * 65536)\n",
			func(r *api.RunResult) string {
				if !r.Truncated || !r.TimedOut || int64(len(r.Stdout)) != 1<<20 || r.StdoutBytes <= 1<<20 {
					return "stdout must be capped at output_limit, counted past it and flagged"
				}
				return ""
			}},
		{"64 MiB on stdin, never read", "import time\ntime.sleep(0.5)\nprint('never read it')\n",
			func(r *api.RunResult) string {
				if r.ExitCode != 0 || r.TimedOut || r.Stdout != "never read it\n" {
					return "the program must end on its own while its stdin is still being fed"
				}
				return ""
			}},
		{"invalid UTF-8 output", "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe \\xc3')\n",
			func(r *api.RunResult) string {
				if r.StdoutEncoding != api.EncodingBase64 || r.Stdout != "b2sg//4gww==" {
					return "bytes that are not UTF-8 must come back exactly, as base64"
				}
				return ""
			}},
		{"stderr flood", "import sys\nwhile True: sys.stderr.write('e' * 65536)\n",
			func(r *api.RunResult) string {
				if !r.Truncated || !r.TimedOut || int64(len(r.Stderr)) > 1<<20 {
					return "stderr must be capped at output_limit and flagged"
				}
				return ""
			}},
		{"closes stdout and keeps running", "import os, time\nprint('bye', flush=True)\nos.close(1)\nos.close(2)\ntime.sleep(10**6)\n", timedOut},
		// A program may lower the oom_score_adj it was given back to 0 (the
		// kernel allows down to what its parent had), so PID 1 can be the
		// OOM killer's choice: the run is then the program's OOM kill.
		{"lowers its oom_score_adj and fills memory in small pieces", "import os, time\nopen('/proc/self/oom_score_adj', 'w').write('0')\nfor _ in range(64):\n    if os.fork() == 0:\n        x = bytearray(8 << 20)\n        time.sleep(100)\ntime.sleep(100)\n", endedByLimit},
		{"zombie army", "import os, time\nfor _ in range(100):\n    if os.fork() == 0: os._exit(0)\ntime.sleep(10**6)\n", timedOut},
	}
	if runtime == "runsc" {
		// gVisor has no OOM killer of its own: memory filled anywhere in
		// the sandbox ends all of it, gVisor's kernel with it, and the
		// run says so. A fork bomb fills the memory with gVisor's host
		// processes before the deadline.
		for i, tc := range cases {
			switch tc.name {
			case "memory bomb in a child":
				cases[i].check = func(r *api.RunResult) string {
					if !r.OOMKilled || r.ExitCode != 137 {
						return "the OOM kill of the sandbox must be reported with exit 137"
					}
					return ""
				}
			}
		}
	}
	// Three seconds past the deadline (ending 128 processes on 2 loaded
	// cores can take that); under runsc more, for a sandbox that gVisor's
	// OOM end takes down and the engine must notice, which takes seconds
	// while the other runtime's hostile programs load the machine; in a pod
	// as much, for a container the OOM killer ended (its PID 1 may be the
	// choice), whose end the kubelet reports on its next relist.
	slack := 3 * time.Second
	if runtime == "runsc" || runtime == "kubernetes" {
		slack = 10 * time.Second
	}
	stdin := map[string]string{"64 MiB on stdin, never read": strings.Repeat("x", 64<<20)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			limit := deadline
			req := api.RunRequest{Language: "python", Code: tc.code, Stdin: stdin[tc.name]}
			// Memory is slow to fill on these virtual machines (a page's
			// first touch faults to the host too: 128 MiB took 0.6 s alone,
			// over 2 s beside the other bombs), so the bombs that must end in
			// an OOM kill get time to reach their limit.
			switch tc.name {
			case "memory bomb in the main process":
				req.Limits = &api.Limits{Memory: 128 << 20}
				limit = 10 * time.Second
			case "lowers its oom_score_adj and fills memory in small pieces":
				req.Limits = &api.Limits{Memory: 128 << 20}
			case "memory bomb in a child":
				// Not the smallest limit: that risks a second OOM kill
				// that takes the parent while the child's memory is
				// released.
				req.Limits = &api.Limits{Memory: 256 << 20}
				limit = 10 * time.Second
			}
			req.Timeout = api.Duration(limit)
			res, err := c.Run(context.Background(), req)
			if err == nil && tc.name == "memory bomb in a child" && runtime != "runsc" && res.OOMKilled && res.ExitCode == 137 {
				// The kernel sometimes kills again before the child's
				// memory is released (seen once in some forty runs), and
				// the parent is the likeliest one left: the kernel's choice, not
				// ours. A second try tells the two apart.
				t.Logf("the parent went too (exit %d): trying once more", res.ExitCode)
				start = time.Now()
				res, err = c.Run(context.Background(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start) - time.Duration(res.Timings.QueueMS*float64(time.Millisecond))
			if req.Stdin != "" {
				// Sending 64 MiB of JSON takes its own time before the
				// daemon has the request (1.9-3.7 s on a loaded machine
				// here): the run's own time is the daemon's.
				el = time.Duration(res.Timings.RunMS * float64(time.Millisecond))
			}
			if el > limit+slack {
				t.Errorf("came back after %s (deadline %s; timings %+v)", el, limit, res.Timings)
			}
			if why := tc.check(res); why != "" {
				t.Errorf("%s: exit %d timed_out %v oom %v truncated %v stdout %.200q stderr %.200q",
					why, res.ExitCode, res.TimedOut, res.OOMKilled, res.Truncated, res.Stdout, res.Stderr)
			}
		})
	}
	// A well-behaved run while the hostile ones run.
	t.Run("neighbour unharmed", func(t *testing.T) {
		t.Parallel()
		res := run(t, c, api.RunRequest{Language: "node", Code: "let s=0; for (let i=0;i<1e6;i++) s+=i; console.log(s)"})
		if res.ExitCode != 0 || res.Stdout != "499999500000\n" {
			t.Fatalf("neighbour: %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
	// Cleanup runs once every subtest has finished.
	t.Cleanup(func() {
		if out, _, code := d.Ctl("", "status"); code != 0 {
			t.Errorf("daemon unhealthy after the hostile programs: %s", out)
		}
		pools, err := c.Pools(context.Background())
		if p := pools["python"]; err != nil || p.Warm != warm || warm && p.WarmHits == 0 || !warm && p.WarmHits != 0 {
			t.Errorf("the python programs ran warm %v? %+v %v", warm, p, err)
		}
	})
}

func timedOut(r *api.RunResult) string {
	if !r.TimedOut || r.ExitCode != 137 {
		return "must time out, killed"
	}
	return ""
}

// endedByLimit accepts the deadline's kill or an OOM kill.
func endedByLimit(r *api.RunResult) string {
	if (!r.TimedOut && !r.OOMKilled) || r.ExitCode != 137 {
		return "must time out or be OOM-killed"
	}
	return ""
}

// contained accepts any ending: the pids limit may stop a bomb before the
// deadline does. The timing check and the daemon's health are what count.
func contained(*api.RunResult) string { return "" }
