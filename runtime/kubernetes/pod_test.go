package kubernetes

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// key is the test runtime's channel key.
var key = []byte("0123456789abcdef0123456789abcdef")

// testRegistry is a registry on loopback whose sandboxd/python:latest
// is a new image; it returns its address and that image's digest.
func testRegistry(t *testing.T) (host, digest string) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	return host, pushRandom(t, host+"/sandboxd/python:latest")
}

// pushRandom pushes a new image to ref and returns its digest.
func pushRandom(t *testing.T, ref string) string {
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d.String()
}

func testRuntime(t *testing.T) (*Kubernetes, *fake.Clientset) {
	host, _ := testRegistry(t)
	client := fake.NewClientset()
	k := newWith(client, nil, Options{ChannelKey: key,
		Namespace: "sandboxd", Instance: "inst1", ImageRegistry: host, RuntimeClass: "gvisor",
		NodeSelector: map[string]string{"pool": "sandboxes"}, Labels: map[string]string{"team": "a", runtime.LabelInstance: "forged"},
		UIDs: runtime.NewUIDs(runtime.UIDRange{First: 61000, Last: 61009}),
	})
	// The fake stores what a dry run would not: answer one as a server
	// does, with the pod as admitted (the tests' own reactors, prepended
	// later, see and change it first).
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if c, ok := a.(k8stesting.CreateActionImpl); ok && len(c.CreateOptions.DryRun) > 0 {
			return true, c.GetObject(), nil
		}
		return false, nil, nil
	})
	return k, client
}

// createdPod runs Create against the fake clientset, whose pods never
// run, and returns the pod it made, as the API server received it.
func createdPod(t *testing.T, spec runtime.Spec) (*corev1.Pod, error) {
	k, client := testRuntime(t)
	var pod *corev1.Pod
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		pod = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := k.Create(ctx, spec)
	if err == nil {
		t.Fatal("a pod that never runs was taken for a sandbox")
	}
	left, lerr := client.CoreV1().Pods("sandboxd").List(context.Background(), metav1.ListOptions{})
	if lerr != nil || len(left.Items) != 0 {
		t.Errorf("a pod whose start failed was left behind: %v %v", left, lerr)
	}
	return pod, err
}

// The Docker runtime's hardening, field by field, as a pod has it.
func TestPodCarriesTheHardening(t *testing.T) {
	spec := runtime.Spec{
		Language: "python", Image: "sandboxd/python:latest",
		Limits: runtime.Limits{Memory: 256 << 20, CPUs: 0.5, Disk: 64 << 20, Pids: 128},
		Env:    []string{"A=1", "B=x=y"}, Labels: map[string]string{runtime.LabelSession: "sess1"},
	}
	pod, err := createdPod(t, spec)
	if pod == nil {
		t.Fatalf("no pod was created: %v", err)
	}
	if !strings.Contains(err.Error(), "did not start") {
		t.Errorf("the error should say the pod did not start: %v", err)
	}
	ps := pod.Spec
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %+v", what, ps)
		}
	}
	check("one pod per sandbox, never restarted", ps.RestartPolicy == corev1.RestartPolicyNever)
	check("no service-account token", ps.AutomountServiceAccountToken != nil && !*ps.AutomountServiceAccountToken)
	check("no service links", ps.EnableServiceLinks != nil && !*ps.EnableServiceLinks)
	check("no host namespaces", !ps.HostNetwork && !ps.HostPID && !ps.HostIPC && ps.ShareProcessNamespace != nil && !*ps.ShareProcessNamespace)
	check("no resolver", ps.DNSPolicy == corev1.DNSNone && ps.DNSConfig != nil && len(ps.DNSConfig.Nameservers) == 1 && ps.DNSConfig.Nameservers[0] == "127.0.0.1")
	check("the runtime class", ps.RuntimeClassName != nil && *ps.RuntimeClassName == "gvisor")
	check("the node selector", ps.NodeSelector["pool"] == "sandboxes")
	check("no grace", ps.TerminationGracePeriodSeconds != nil && *ps.TerminationGracePeriodSeconds == 0)
	psc := ps.SecurityContext
	check("a pod security context", psc != nil)
	uid := *psc.RunAsUser
	check("a non-root uid of the range", uid >= 61000 && uid <= 61009 && psc.RunAsGroup != nil && *psc.RunAsGroup == uid)
	check("non-root enforced", psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
	check("the seccomp profile", psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost &&
		*psc.SeccompProfile.LocalhostProfile == SeccompProfile)

	check("one container", len(ps.Containers) == 1 && len(ps.InitContainers) == 0)
	c := ps.Containers[0]
	check("the image from the registry, by digest", strings.HasPrefix(c.Image, "127.0.0.1:") && strings.Contains(c.Image, "/sandboxd/python@sha256:"))
	check("the supervisor as PID 1", len(c.Command) == 1 && c.Command[0] == runtime.SupervisorPath)
	sc := c.SecurityContext
	check("not privileged", sc.Privileged != nil && !*sc.Privileged)
	check("no privilege escalation", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation)
	check("a read-only root", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem)
	check("every capability dropped", sc.Capabilities != nil && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0)
	check("no stdin, no tty", !c.Stdin && !c.TTY)
	for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		lim, req := c.Resources.Limits[r], c.Resources.Requests[r]
		check("limits equal to requests: "+string(r), !lim.IsZero() && lim.Cmp(req) == 0)
	}
	mem, cpu := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceCPU]
	check("the memory limit", mem.Value() == 256<<20)
	check("the cpu limit", cpu.MilliValue() == 500)

	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	check("only /workspace and /tmp are writable", len(mounts) == 2 && mounts[runtime.Workspace] != "" && mounts["/tmp"] != "")
	for _, v := range ps.Volumes {
		e := v.EmptyDir
		check("memory-backed, sized "+v.Name, e != nil && e.Medium == corev1.StorageMediumMemory && e.SizeLimit != nil && e.SizeLimit.Value() == 64<<20)
	}
	check("two volumes", len(ps.Volumes) == 2)

	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	check("the request's environment", env["A"] == "1" && env["B"] == "x=y" && env["HOME"] == runtime.Workspace)
	check("the supervisor listens on loopback", env[supervisor.EnvListen] == "127.0.0.1:7073")
	check("the token's digest, not the token", env[supervisor.EnvToken] == "" && len(env[supervisor.EnvTokenSum]) == 64 &&
		env[supervisor.EnvTokenSum] == supervisor.TokenSum(newWith(nil, nil, Options{ChannelKey: key}).token(pod.Name)))
	check("the pids limit, as RLIMIT_NPROC of the sandbox's uid", env[supervisor.EnvNproc] == strconv.Itoa(128+supervisor.ReservedThreads))
	eph := c.Resources.Limits[corev1.ResourceEphemeralStorage]
	check("a share of the node's disk", eph.Value() == ephemeralStorage)

	l := pod.Labels
	check("the mandatory labels, not overridden", l[runtime.LabelManaged] == "true" && l[runtime.LabelInstance] == "inst1" &&
		l[runtime.LabelLanguage] == "python" && l[runtime.LabelSession] == "sess1" && l["team"] == "a")
	check("the uid label", l[runtime.LabelUID] != "")
}

// What a pod cannot do is refused with a reason, not half done.
func TestPodRefusesHostMounts(t *testing.T) {
	k, _ := testRuntime(t)
	_, err := k.Create(context.Background(), runtime.Spec{Language: "python", Image: "x", Mounts: []runtime.Mount{{Source: "/home", Target: "/project"}}})
	if err == nil || !strings.Contains(err.Error(), "projects are for the Docker runtime") {
		t.Fatalf("a host mount: %v", err)
	}
}

// List finds this instance's pods only, and Remove takes a pod and its
// uid back; removing one that is gone is no error.
func TestListAndRemove(t *testing.T) {
	k, client := testRuntime(t)
	mk := func(name, instance string) {
		_, err := client.CoreV1().Pods("sandboxd").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "sandboxd",
			Labels: map[string]string{runtime.LabelManaged: "true", runtime.LabelInstance: instance, runtime.LabelLanguage: "python", runtime.LabelUID: "61003"},
		}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("sbx-mine", "inst1")
	mk("sbx-other", "inst2")
	list, err := k.List(context.Background())
	if err != nil || len(list) != 1 || list[0].ID != "sbx-mine" || !list[0].Running || list[0].Language != "python" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := k.Remove(context.Background(), "sbx-mine"); err != nil {
		t.Fatal(err)
	}
	if err := k.Remove(context.Background(), "sbx-mine"); err != nil {
		t.Fatalf("removing a pod that is gone: %v", err)
	}
	if list, _ := k.List(context.Background()); len(list) != 0 {
		t.Fatalf("after remove: %+v", list)
	}
}
