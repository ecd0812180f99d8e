package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxd/sandboxd/runtime"
)

// A pod the cluster admitted otherwise than asked (a webhook's sidecar,
// a host path, a capability, a host namespace) is removed, and the error
// names what changed; one admitted as asked is not touched.
func TestAdmittedPodIsThePodAsked(t *testing.T) {
	spec := runtime.Spec{Language: "python", Image: "sandboxd/python:latest",
		Limits: runtime.Limits{Memory: 256 << 20, CPUs: 0.5, Disk: 64 << 20, Pids: 128}}
	for _, c := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"a sidecar", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "mesh-proxy", SecurityContext: p.Spec.Containers[0].SecurityContext})
		}, "(Containers)"},
		{"a host path", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: "/host"})
		}, "Volumes, Containers[sandbox].VolumeMounts"},
		{"a capability", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, "Containers[sandbox].SecurityContext"},
		{"the host's network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "HostNetwork"},
		{"a token", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil }, "AutomountServiceAccountToken"},
		{"an init container", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init"}} }, "InitContainers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, client := testRuntime(t)
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
				c.mutate(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
				return false, nil, nil // the tracker stores the pod as mutated
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := k.Create(ctx, spec)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "runs only the pod it asked for") {
				t.Fatalf("want an error naming %q: %v", c.want, err)
			}
			left, _ := client.CoreV1().Pods("sandboxd").List(context.Background(), metav1.ListOptions{})
			if len(left.Items) != 0 {
				t.Errorf("the pod was left: %v", left.Items)
			}
		})
	}
	if pod, err := createdPod(t, spec); pod == nil || strings.Contains(err.Error(), "runs only the pod it asked for") {
		t.Errorf("a pod admitted as asked was refused: %v", err)
	}
}

// The namespace's network policies: a default-deny one is enough; none,
// one that lets anything through (beside a deny too), or no right to
// read them, is said.
func TestNetworkWarning(t *testing.T) {
	deny := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: "sandboxd"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}}
	ingressOnly := *deny.DeepCopy()
	ingressOnly.Name, ingressOnly.Spec.PolicyTypes = "in", []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	allowDNS := *deny.DeepCopy()
	allowDNS.Name, allowDNS.Spec.Egress = "dns", []networkingv1.NetworkPolicyEgressRule{{}}
	for _, c := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		want     string
	}{
		{"none", nil, "no default-deny NetworkPolicy"},
		{"ingress only", []networkingv1.NetworkPolicy{ingressOnly}, "no default-deny NetworkPolicy"},
		{"an egress rule", []networkingv1.NetworkPolicy{allowDNS}, "lets traffic in or out"},
		{"default deny", []networkingv1.NetworkPolicy{ingressOnly, deny}, ""},
	} {
		k, client := testRuntime(t)
		for _, p := range c.policies {
			if _, err := client.NetworkingV1().NetworkPolicies("sandboxd").Create(context.Background(), &p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := k.networkWarning(context.Background()); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestUserNamespacesWhereEveryNodeHasThem(t *testing.T) {
	node := func(name string, userns *bool, labels map[string]string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		n.Status.RuntimeHandlers = []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{UserNamespaces: userns}}}
		return n
	}
	yes, no := ptr(true), ptr(false)
	pool := map[string]string{"pool": "sandboxes"}
	for _, c := range []struct {
		name         string
		runtimeClass string
		nodes        []corev1.Node
		want         bool
		why          string
	}{
		{"no node", "", nil, false, "no node matches"},
		{"every node", "", []corev1.Node{node("a", yes, pool), node("b", yes, pool)}, true, ""},
		{"one node without", "", []corev1.Node{node("a", yes, pool), node("b", no, pool)}, false, "node b does not"},
		{"one node that does not say", "", []corev1.Node{node("a", yes, pool), node("b", nil, pool)}, false, "node b does not"},
		{"a node outside the selector", "", []corev1.Node{node("a", yes, pool), node("c", no, nil)}, true, ""},
		{"a runtime class", "gvisor", []corev1.Node{node("a", yes, pool)}, false, "runtime class gvisor"},
	} {
		k, client := testRuntime(t)
		k.opts.RuntimeClass = c.runtimeClass
		for _, n := range c.nodes {
			if _, err := client.CoreV1().Nodes().Create(context.Background(), &n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ok, why := k.userNamespaces(context.Background())
		if ok != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q, want %v %q", c.name, ok, why, c.want, c.why)
		}
		k.userNS.Store(ok)
		pod := k.podFor(runtime.Spec{Language: "python", Image: "sandboxd/python:latest"}, "sbx-1", "token", 61000)
		if inNS := pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers; inNS != c.want || inNS && *pod.Spec.SecurityContext.RunAsUser != userNSUID {
			t.Errorf("%s: the pod's hostUsers %v, uid %d", c.name, pod.Spec.HostUsers, *pod.Spec.SecurityContext.RunAsUser)
		}
	}
}
