package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
	runtimepkg "github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/kubernetes"
)

// kubernetesLanguages puts python in pods of the cluster and leaves node
// on the local engine. A fifth of a core each (limits equal requests)
// lets the 2-core node hold the pool and the tests' sessions.
func kubernetesLanguages(minIdle, max int) string {
	return fmt.Sprintf(`
language "python" {
  image   = "sandboxd/python:latest"
  runtime = "kubernetes"
  limits {
    cpus = 0.2
  }
  pool {
    min_idle = %d
    max      = %d
    # A pod on a node that lost its image waits for the pull (11 s seen).
    queue_timeout = "60s"
  }
}
language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 1
    max      = 2
  }
}`, minIdle, max)
}

// The foundation on pods: runs, their ends and limits, sessions and their
// files, a sandboxd restart (gentle and SIGKILL) that keeps sessions and
// removes what nobody owns, a pod deleted under a session, and warm pods
// that die, with a Docker language beside them all along.
func TestKubernetesRuntime(t *testing.T) {
	cluster := testutil.RequireCluster(t)
	d := testutil.StartDaemon(t, testutil.Options{Cluster: cluster, Languages: kubernetesLanguages(2, 6)})
	c := d.Client()
	label := testutil.TestLabel + "=" + d.RunID
	// The node may still be pulling the image (make cluster-images pulls
	// it ahead).
	waitForWithin(t, "the warm pods", 3*time.Minute, func() bool {
		p, err := c.Pools(context.Background())
		return err == nil && p["python"].Idle >= 2
	})

	t.Run("runs", func(t *testing.T) {
		res := run(t, c, api.RunRequest{Language: "python", Stdin: "abc", Code: `import os, socket, sys
print(socket.gethostname(), os.getuid() != 0, sys.stdin.read())
print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))
try:
    open('/etc/x', 'w')
except OSError as e:
    print('read-only', e.errno)
sys.exit(3)`})
		want := "sandbox True abc\n['lo']\nread-only 30\n"
		if res.ExitCode != 3 || res.Stdout != want {
			t.Fatalf("exit %d stdout %q stderr %q; want %q", res.ExitCode, res.Stdout, res.Stderr, want)
		}
		res = run(t, c, api.RunRequest{Language: "python", Code: "import time\ntime.sleep(100)", Timeout: api.Duration(2e9)})
		if !res.TimedOut || res.ExitCode != 137 {
			t.Fatalf("the deadline: %+v", res)
		}
		res = run(t, c, api.RunRequest{Language: "node", Code: "console.log(require('os').hostname())"})
		if res.Stdout != "sandbox\n" {
			t.Fatalf("the Docker language beside: %+v", res)
		}
	})

	id := newSession(t, c, api.SessionRequest{Language: "python"})
	t.Run("session files", func(t *testing.T) {
		if _, err := c.PutFile(ctx(t), id, "data.txt", strings.NewReader("kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"python3", "-c", "print(open('data.txt').read().upper(), end='')"}})
		if err != nil || res.Stdout != "KEPT\n" {
			t.Fatalf("exec: %+v %v", res, err)
		}
		body, _, err := c.GetFile(ctx(t), id, "data.txt")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(body)
		body.Close()
		if string(got) != "kept\n" {
			t.Fatalf("download: %q", got)
		}
	})

	// make cluster's nodes run pods in user namespaces (runc 1.5), so
	// sandboxd asks for one: the session's supervisor runs as uid 1000 in
	// the pod and as a uid of the kubelet's range on the node, nobody's.
	t.Run("user namespaces", func(t *testing.T) {
		s, err := c.Session(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		pod, err := cluster.Client.CoreV1().Pods(cluster.Namespace).Get(ctx(t), s.ContainerID, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers || *pod.Spec.SecurityContext.RunAsUser != 1000 {
			t.Fatalf("the pod: hostUsers %v, runAsUser %v", pod.Spec.HostUsers, pod.Spec.SecurityContext.RunAsUser)
		}
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"id", "-u"}})
		if err != nil || res.Stdout != "1000\n" {
			t.Fatalf("the uid in the pod: %+v %v", res, err)
		}
		uid := hostUIDOfPod(t, string(pod.UID))
		if uid < 65536 || uid%65536 != 1000 {
			t.Fatalf("the supervisor runs as host uid %d: not one of a user namespace's", uid)
		}
	})

	t.Run("restarts", func(t *testing.T) {
		for _, how := range []string{"SIGTERM", "SIGKILL"} {
			before := cluster.Pods(t, label)
			if how == "SIGTERM" {
				d.Stop()
			} else {
				d.Kill()
			}
			d.Restart()
			res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"cat", "data.txt"}})
			if err != nil || res.Stdout != "kept\n" {
				t.Fatalf("the session after %s: %+v %v", how, res, err)
			}
			// The warm pods of the daemon before are nobody's now.
			waitFor(t, "the old warm pods removed after "+how, func() bool {
				now := strings.Join(cluster.Pods(t, label), " ")
				for _, p := range before {
					if s, _ := c.Session(ctx(t), id); s != nil && strings.Contains(now, p) && s.ContainerID != p {
						return false
					}
				}
				return true
			})
		}
	})

	t.Run("pod deleted under a session", func(t *testing.T) {
		s, err := c.Session(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(t, s.ContainerID)
		waitFor(t, "the session lost", func() bool {
			_, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"true"}})
			s, _ := c.Session(ctx(t), id)
			return apiCode(err) == api.CodeSessionLost || s != nil && s.State == api.SessionLost
		})
	})

	t.Run("a session that expires takes its pod", func(t *testing.T) {
		short := newSession(t, c, api.SessionRequest{Language: "python", TTL: api.Duration(3 * time.Second)})
		s, err := c.Session(ctx(t), short)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the expired session's pod removed", func() bool {
			return !strings.Contains(strings.Join(cluster.Pods(t, label), " "), s.ContainerID)
		})
		if _, err := c.Exec(ctx(t), short, api.ExecRequest{Argv: []string{"true"}}); err == nil {
			t.Fatal("an exec on an expired session")
		}
	})

	t.Run("warm pods that die are replaced", func(t *testing.T) {
		for _, p := range cluster.Pods(t, label+",io.sandboxd.language=python") {
			cluster.DeletePod(t, p)
		}
		res := run(t, c, api.RunRequest{Language: "python", Code: "print('still here')"})
		if res.Stdout != "still here\n" {
			t.Fatalf("a run after the warm pods died: %+v", res)
		}
		waitFor(t, "the pool refilled", func() bool {
			p, err := c.Pools(context.Background())
			return err == nil && p["python"].Idle >= 2
		})
	})
}

// hostUIDOfPod is the host uid the supervisor of the pod with uid podUID
// runs as, read from /proc on this machine, where make cluster's nodes
// run.
func hostUIDOfPod(t *testing.T, podUID string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, _ := os.ReadFile(p + "/cmdline")
		cgroup, _ := os.ReadFile(p + "/cgroup")
		if !strings.HasPrefix(string(cmdline), runtimepkg.SupervisorPath+"\x00") || !strings.Contains(string(cgroup), podUID) {
			continue
		}
		status, _ := os.ReadFile(p + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				uid, err := strconv.Atoi(f[1])
				if err == nil {
					return uid
				}
			}
		}
	}
	t.Fatalf("no supervisor of pod %s among this machine's processes", podUID)
	return 0
}

// `sandboxctl images build` of a language on the cluster puts its image,
// with the supervisor, in the runtime's registry, and pods run from it:
// the README's steps on a node that has never pulled it, where the first
// run waits for the pull and succeeds.
func TestKubernetesImagesPushed(t *testing.T) {
	cluster := *testutil.RequireCluster(t)
	cluster.Registry += "/sandboxd-test" // a registry of its own
	pushed := cluster.Registry + "/sandboxd/python:latest"
	cluster.RemoveNodeImages(t, cluster.Registry+"/sandboxd/python")
	d := testutil.StartDaemon(t, testutil.Options{Cluster: &cluster, Languages: kubernetesLanguages(0, 2)})
	out, errOut, code := d.Ctl("", "images", "build", "python")
	if code != 0 || !strings.Contains(out, "built "+pushed+" for python") || !strings.Contains(errOut, pushed+": latest: digest: sha256:") {
		t.Fatalf("images build: exit %d\n%s\n%s", code, out, errOut)
	}
	// Pods name the image by the digest the push made.
	digest, _, _ := strings.Cut(strings.SplitN(errOut, pushed+": latest: digest: ", 2)[1], " ")
	pinned := cluster.Registry + "/sandboxd/python@" + digest
	// Every node pulled it before the build ended, and said so; the
	// DaemonSet that made them is gone.
	nodes := cluster.Nodes(t, 1)
	for _, node := range nodes {
		if !strings.Contains(errOut, "node "+node+" has "+pinned) {
			t.Errorf("images build does not say node %s has pulled the image %s:\n%s", node, pinned, errOut)
		}
	}
	if have := cluster.NodesWithImage(t, pinned); len(have) != len(nodes) {
		t.Errorf("after images build, the nodes with %s: %v of %v", pinned, have, nodes)
	}
	waitForWithin(t, "the pull's DaemonSet deleted", 30*time.Second, func() bool {
		list, err := cluster.Client.AppsV1().DaemonSets(cluster.Namespace).List(ctx(t), metav1.ListOptions{LabelSelector: kubernetes.LabelPull})
		return err == nil && len(list.Items) == 0
	})
	c := d.Client()
	res, err := c.Run(ctx(t), api.RunRequest{Language: "python", Code: "print('first')"})
	if err != nil || res.Stdout != "first\n" {
		t.Fatalf("the first run after images build: %+v %v", res, err)
	}
	// Nodes that lost the image pull it again for the next pod: with the
	// warm pod busy, a run waits for that, and is told so.
	cluster.RemoveNodeImages(t, cluster.Registry+"/sandboxd/python")
	busy := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "import time; time.sleep(20)"})
		busy <- err
	}()
	waitForWithin(t, "the warm pod busy", 10*time.Second, func() bool { p, err := c.Pools(ctx(t)); return err == nil && p["python"].Busy == 1 })
	var queued []string
	res, err = c.RunStream(ctx(t), api.RunRequest{Language: "python", Code: "print('pulled')"}, func(ev api.Event) {
		if ev.Type == api.EventQueued {
			queued = append(queued, ev.Data)
		}
	})
	if err != nil || res.Stdout != "pulled\n" {
		t.Fatalf("a run while a node pulls the image: %+v %v", res, err)
	}
	t.Logf("waited %.0f ms for a pod: %q", res.Timings.QueueMS, queued)
	// A pull from the registry on this host takes seconds (11 s seen).
	if res.Timings.QueueMS > 3000 && (!slices.ContainsFunc(queued, func(why string) bool { return strings.Contains(why, "is pulling image "+pinned) }) ||
		res.Timings.QueueReason != queued[len(queued)-1]) {
		t.Errorf("a run that waited %.0f ms was told %q, and its result says %q", res.Timings.QueueMS, queued, res.Timings.QueueReason)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	res, err = c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"python3", "-c", "import os; print(os.access('/.sandboxd/init', os.X_OK))"}})
	if err != nil || res.Stdout != "True\n" {
		t.Fatalf("an exec in a pod of the pushed image: %+v %v", res, err)
	}
	s, _ := c.Session(ctx(t), id)
	pod, err := cluster.Client.CoreV1().Pods(cluster.Namespace).Get(ctx(t), s.ContainerID, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the session's pod: %v", err)
	}
	if image := pod.Spec.Containers[0].Image; image != pinned {
		t.Errorf("the session's pod runs %s, want %s", image, pinned)
	}
}

// A run whose pod no node can take is told why as it waits (a queued
// event, sandboxctl's stderr), and the pool says so too.
func TestKubernetesRunSaysWhatItWaitsOn(t *testing.T) {
	cluster := *testutil.RequireCluster(t)
	cluster.NodeSelector = map[string]string{"kubernetes.io/hostname": "no-such-node"}
	d := testutil.StartDaemon(t, testutil.Options{Cluster: &cluster, Languages: kubernetesLanguages(0, 1)})
	c := d.Client()
	// The pod's start is bounded by its own timeout (minutes): the
	// caller gives up first.
	waited, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var queued []string
	if _, err := c.RunStream(waited, api.RunRequest{Language: "python", Code: "print(1)"}, func(ev api.Event) {
		if ev.Type == api.EventQueued {
			queued = append(queued, ev.Data)
		}
	}); err == nil {
		t.Error("a run no node can take ran")
	}
	if len(queued) == 0 || !strings.HasPrefix(queued[0], "no node can take the pod yet: 0/") || !strings.Contains(queued[0], "didn't match Pod's node affinity/selector") {
		t.Errorf("the run was told %q", queued)
	}
	if pools, err := c.Pools(ctx(t)); err != nil || !strings.HasPrefix(pools["python"].StartingFor, "no node can take the pod yet") {
		t.Errorf("the pool says it starts for %q (%v)", pools["python"].StartingFor, err)
	}
	waited, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errOut strings.Builder
	cmd := exec.CommandContext(waited, filepath.Join(d.Bin, "sandboxctl"), "--socket", d.Socket, "run", "--lang", "python", "-")
	cmd.Stdin, cmd.Stderr = strings.NewReader("print(1)\n"), &errOut
	if err := cmd.Run(); err == nil || !strings.Contains(errOut.String(), "sandboxctl: waiting: no node can take the pod yet") {
		t.Errorf("sandboxctl run: %v\n%s", err, errOut.String())
	}
}

// The hostile programs, in pods: the same cases and checks as on Docker.
func TestKubernetesHostilePrograms(t *testing.T) {
	testHostilePrograms(t, "kubernetes", true)
}

// The API server restarted (killed, as a crash would) mid-run: the
// execution whose channel it carried ends with an error that says to
// retry; while it is down, runs say runtime_unavailable and health says
// degraded; once it is back, the session (whose pod ran on) answers
// again, not lost, and runs work.
func TestKubernetesAPIServerRestart(t *testing.T) {
	cluster := testutil.RequireCluster(t)
	d := testutil.StartDaemon(t, testutil.Options{Cluster: cluster, Languages: kubernetesLanguages(1, 4), Defaults: `timeout = "60s"`})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	if _, err := c.PutFile(ctx(t), id, "data.txt", strings.NewReader("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inflight, started := make(chan error, 1), make(chan struct{})
	go func() {
		var once sync.Once
		_, err := c.ExecStream(context.Background(), id, api.ExecRequest{Argv: []string{"sh", "-c", "echo started; sleep 30"}, Timeout: api.Duration(60 * time.Second)},
			func(api.Event) { once.Do(func() { close(started) }) })
		inflight <- err
	}()
	select {
	case <-started:
	case err := <-inflight:
		t.Fatalf("the exec ended before the API server did: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the exec did not start")
	}
	cluster.RestartComponent(t, "kube-apiserver", func() {
		select {
		case err := <-inflight:
			if code := apiCode(err); code != api.CodeRuntimeUnavailable {
				t.Errorf("the exec whose channel the API server carried: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the exec in flight did not end within 30s of the API server's end")
		}
		if _, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "print(1)"}); apiCode(err) != api.CodeRuntimeUnavailable {
			t.Errorf("a run while the API server is down: %v", err)
		}
		// Health probes the engine at most every 2 s (probeFresh): an
		// answer from before the API server stopped may stand that long.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			h, err := c.Health(context.Background())
			if err == nil && h.Status == "degraded" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("health while the API server is down: %+v %v", h, err)
				break
			}
		}
	})
	waitForWithin(t, "the session answering again", time.Minute, func() bool {
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"cat", "data.txt"}})
		return err == nil && res.Stdout == "kept\n"
	})
	if s, err := c.Session(ctx(t), id); err != nil || s.State != api.SessionActive {
		t.Fatalf("the session after the API server's restart: %+v %v", s, err)
	}
	waitForWithin(t, "runs working again", time.Minute, func() bool {
		res, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "print('back')"})
		return err == nil && res.Stdout == "back\n"
	})
}

// The kubelet stopped (killed): what needs it says runtime_unavailable
// within a bound instead of waiting out a pod's start; the session, whose
// pod runs on under containerd, is kept; when the kubelet is back, the
// session answers again and runs work.
func TestKubernetesKubeletStopped(t *testing.T) {
	// At the end, beside the tests of engines of their own and E2B's
	// suite, none of which use the cluster: mostly waiting on the kubelet.
	t.Parallel()
	cluster := *testutil.RequireCluster(t)
	// On the node whose kubelet stops: with a second node, pods there
	// would serve the runs (TestKubernetesTwoNodes).
	cluster.NodeSelector = map[string]string{"kubernetes.io/hostname": "sandboxd-node"}
	d := testutil.StartDaemon(t, testutil.Options{Cluster: &cluster, Languages: kubernetesLanguages(1, 4)})
	c := d.Client()
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	if _, err := c.PutFile(ctx(t), id, "data.txt", strings.NewReader("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster.RestartComponent(t, "kubelet", func() {
		start := time.Now()
		for i := 0; i < 3; i++ { // the warm pod's channel, then pods made for the runs
			if _, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "print(1)"}); apiCode(err) != api.CodeRuntimeUnavailable {
				t.Errorf("run %d while the kubelet is away: %v", i, err)
			}
		}
		if took := time.Since(start); took > 60*time.Second {
			t.Errorf("three runs took %s to fail while the kubelet is away", took)
		}
		if _, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"true"}}); apiCode(err) != api.CodeRuntimeUnavailable {
			t.Errorf("an exec while the kubelet is away: %v", err)
		}
	})
	waitForWithin(t, "the session answering again", time.Minute, func() bool {
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"cat", "data.txt"}})
		return err == nil && res.Stdout == "kept\n"
	})
	waitForWithin(t, "runs working again", time.Minute, func() bool {
		res, err := c.Run(context.Background(), api.RunRequest{Language: "python", Code: "print('back')"})
		return err == nil && res.Stdout == "back\n"
	})
}

// Two nodes: a language's pods spread over both; a node drained under
// running sessions takes its sessions (lost, saying why) and the execution
// in flight on one of them (an error, not a hang), while the sessions on
// the other node go on and the pool refills there; a session hibernated
// before the drain comes back on the other node with its files.
func TestKubernetesTwoNodes(t *testing.T) {
	cluster := testutil.RequireCluster(t)
	cluster.Nodes(t, 2)
	d := testutil.StartDaemon(t, testutil.Options{Cluster: cluster, Languages: kubernetesLanguages(4, 8)})
	c := d.Client()
	nodeOf := map[string]string{} // session -> node
	byNode := map[string][]string{}
	waitForWithin(t, "four warm pods", 2*time.Minute, func() bool {
		p, err := c.Pools(ctx(t))
		return err == nil && p["python"].Idle >= 4
	})
	for range 6 {
		id := newSession(t, c, api.SessionRequest{Language: "python"})
		s, err := c.Session(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		node := cluster.PodNode(t, s.ContainerID)
		nodeOf[id] = node
		byNode[node] = append(byNode[node], id)
	}
	if len(byNode) < 2 {
		t.Fatalf("six sessions' pods all on one node: %v", nodeOf)
	}
	var drained, kept string // the node with the most sessions (three at least), the other
	for node := range byNode {
		if drained == "" || len(byNode[node]) > len(byNode[drained]) {
			drained, kept = node, drained
		} else {
			kept = node
		}
	}
	victim, hibernated := byNode[drained][0], byNode[drained][1]
	byNode[drained] = slices.Delete(byNode[drained], 1, 2)
	if _, err := c.PutFile(ctx(t), hibernated, "kept.txt", strings.NewReader("across nodes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PauseSession(ctx(t), hibernated); err != nil {
		t.Fatal(err)
	}
	inFlight := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), victim, api.ExecRequest{Argv: []string{"sleep", "60"}})
		inFlight <- err
	}()
	time.Sleep(time.Second)
	cluster.Drain(t, drained)
	select {
	case err := <-inFlight:
		if err == nil {
			t.Error("an execution on the drained node ended without an error")
		}
		t.Logf("the execution in flight on %s: %v", drained, err)
	case <-time.After(45 * time.Second):
		t.Fatal("an execution on the drained node still runs 45 s after the drain")
	}
	for _, id := range byNode[drained] {
		waitForWithin(t, "session "+id+" lost", time.Minute, func() bool {
			s, err := c.Session(ctx(t), id)
			return err == nil && s.State == api.SessionLost
		})
		s, _ := c.Session(ctx(t), id)
		t.Logf("session %s: %s", id, s.Error)
		if !strings.Contains(s.Error, "evicted") && !strings.Contains(s.Error, "deleted") {
			t.Errorf("session %s is lost without saying its pod was evicted: %q", id, s.Error)
		}
	}
	for _, id := range byNode[kept] {
		res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			t.Errorf("session %s on %s after %s was drained: %+v %v", id, kept, drained, res, err)
		}
	}
	var seen string // what the last look found, said if the wait fails
	defer func() {
		if t.Failed() {
			t.Logf("last seen: %s", seen)
		}
	}()
	waitForWithin(t, "the pool refilled on "+kept, 2*time.Minute, func() bool {
		// The sessions' pods there, and four warm ones made in place of
		// those that died with the drained node.
		// Listed with their nodes at once: a pod read after the listing
		// may be gone by then.
		list, err := cluster.Client.CoreV1().Pods(cluster.Namespace).List(ctx(t), metav1.ListOptions{LabelSelector: testutil.TestLabel + "=" + d.RunID})
		if err != nil {
			seen = err.Error()
			return false
		}
		p, err := c.Pools(ctx(t))
		seen = fmt.Sprintf("pool %+v (%v)", p["python"], err)
		ok, live := err == nil && p["python"].Idle >= 4, 0
		for _, pod := range list.Items {
			if pod.DeletionTimestamp != nil {
				continue
			}
			live++
			seen += "; " + pod.Name + " on " + pod.Spec.NodeName
			ok = ok && pod.Spec.NodeName == kept
		}
		return ok && live >= len(byNode[kept])+4
	})
	res, err := c.Run(ctx(t), api.RunRequest{Language: "python", Code: "print('after the drain')"})
	if err != nil || res.Stdout != "after the drain\n" {
		t.Fatalf("a run after the drain: %+v %v", res, err)
	}
	res, err = c.Exec(ctx(t), hibernated, api.ExecRequest{Argv: []string{"cat", "kept.txt"}})
	if err != nil || res.Stdout != "across nodes\n" {
		t.Fatalf("the session hibernated before the drain: %+v %v", res, err)
	}
	s, _ := c.Session(ctx(t), hibernated)
	if node := cluster.PodNode(t, s.ContainerID); node != kept {
		t.Errorf("the resumed session's pod is on %s, not %s", node, kept)
	}
}

// sandboxd works with no more than examples/kubernetes-rbac.yaml grants
// its service account: runs, a session with files, the session's end.
func TestKubernetesLeastPrivilege(t *testing.T) {
	cluster := *testutil.RequireCluster(t)
	cluster.Kubeconfig = cluster.ServiceAccountKubeconfig(t, "../examples/kubernetes-rbac.yaml")
	// A repository of its own: TestKubernetesImagesPushed, beside it,
	// pushes and removes its own, and pods pin the tag's digest.
	cluster.Registry += "/sandboxd-test-sa"
	d := testutil.StartDaemon(t, testutil.Options{Cluster: &cluster, Languages: kubernetesLanguages(1, 4)})
	// The build's pull on every node, and the events of slow pods.
	if out, errOut, code := d.Ctl("", "images", "build", "python"); code != 0 || !strings.Contains(out, "pulled by nodes sandboxd-node") {
		t.Fatalf("images build as the service account: exit %d\n%s\n%s", code, out, errOut)
	}
	c := d.Client()
	for i := range 3 {
		res, err := c.Run(ctx(t), api.RunRequest{Language: "python", Code: "print(6 * 7)"})
		if err != nil || res.Stdout != "42\n" {
			t.Fatalf("run %d as the service account: %+v %v", i, res, err)
		}
	}
	id := newSession(t, c, api.SessionRequest{Language: "python"})
	if _, err := c.PutFile(ctx(t), id, "data.txt", strings.NewReader("least\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx(t), id, api.ExecRequest{Argv: []string{"cat", "data.txt"}})
	if err != nil || res.Stdout != "least\n" {
		t.Fatalf("exec as the service account: %+v %v", res, err)
	}
	s, _ := c.Session(ctx(t), id)
	if err := c.DeleteSession(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	waitForWithin(t, "the session's pod deleted", time.Minute, func() bool {
		return !strings.Contains(strings.Join(cluster.Pods(t, testutil.TestLabel+"="+d.RunID), " "), s.ContainerID)
	})
	if log := d.Logs(); strings.Contains(log, "forbidden") || strings.Contains(log, "NOT CUT OFF") {
		t.Errorf("the service account was refused something, or the namespace's network policy was not found:\n%s", log)
	}

	// What a stolen token could try: the namespace's Pod Security
	// refuses every pod that would reach the node.
	sa, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	stolen := clientset.NewForConfigOrDie(sa)
	for name, mutate := range map[string]func(*corev1.PodSpec){
		"host path": func(p *corev1.PodSpec) {
			p.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		},
		"host pid":     func(p *corev1.PodSpec) { p.HostPID = true },
		"host network": func(p *corev1.PodSpec) { p.HostNetwork = true },
		"privileged": func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
		},
		"as root": func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptrTo(int64(0))}
		},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stolen-" + strings.ReplaceAll(name, " ", "-"), Labels: map[string]string{testutil.TestLabel: d.RunID}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: cluster.Registry + "/sandboxd/python:latest"}}}}
		mutate(&pod.Spec)
		// Privilege may be refused before Pod Security sees it (the API
		// server's --allow-privileged=false): invalid, not forbidden.
		if _, err := stolen.CoreV1().Pods("sandboxd").Create(ctx(t), pod, metav1.CreateOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("the service account's pod with %s: %v, want forbidden", name, err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
