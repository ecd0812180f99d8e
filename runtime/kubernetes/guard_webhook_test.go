package kubernetes

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxd/sandboxd/runtime"
)

// Mutations an admission webhook can make that widen a sandbox's reach,
// each of which changed() names (found by an outside review, when the
// check compared names only).
func TestWebhookWideningIsCaught(t *testing.T) {
	k, _ := testRuntime(t)
	spec := runtime.Spec{Language: "python", Image: "sandboxd/python:latest",
		Limits: runtime.Limits{Memory: 256 << 20, CPUs: 0.5, Disk: 64 << 20, Pids: 128}}
	for _, c := range []struct {
		name   string
		mutate func(*corev1.Pod)
	}{
		{"workspace volume swapped for hostPath /", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
		}},
		{"tmp volume swapped for a secret", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cloud-creds"}}
		}},
		{"capabilities drop ALL removed (uid 0 gets the runtime's default set)", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities = nil
			p.Spec.Containers[0].SecurityContext.RunAsNonRoot = nil
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.SecurityContext.RunAsUser = ptr(int64(0))
		}},
		{"container runAsUser 0", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.RunAsUser = ptr(int64(0))
			p.Spec.Containers[0].SecurityContext.RunAsNonRoot = ptr(false)
		}},
		{"seccomp Unconfined", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
		{"container seccomp Unconfined", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
		{"apparmor Unconfined", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}},
		{"procMount Unmasked", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.ProcMount = ptr(corev1.UnmaskedProcMount)
		}},
		{"root filesystem writable", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr(false)
		}},
		{"runtimeClass gvisor dropped", func(p *corev1.Pod) { p.Spec.RuntimeClassName = nil }},
		{"runtimeClass swapped to runc", func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr("runc") }},
		{"nodeName pinned to control plane + toleration", func(p *corev1.Pod) {
			p.Spec.NodeName = "control-plane"
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
		}},
		{"hostPort", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		}},
		{"env from a secret", func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
		}},
		{"env valueFrom secretKeyRef", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "AWS_SECRET_ACCESS_KEY",
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "aws"}, Key: "k"}}})
		}},
		{"supervisor env overridden (nproc limit lifted, listen on all addresses)", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env,
				corev1.EnvVar{Name: "SANDBOXD_SUPERVISOR_NPROC", Value: "1000000"},
				corev1.EnvVar{Name: "SANDBOXD_SUPERVISOR_LISTEN", Value: "0.0.0.0:7073"})
		}},
		{"image swapped", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil/image" }},
		{"resource limits removed", func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }},
		{"unsafe sysctl", func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "0"}}
		}},
		{"supplemental group 0", func(p *corev1.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{0} }},
		{"mount readOnly flipped / subPath / propagation", func(p *corev1.Pod) {
			m := &p.Spec.Containers[0].VolumeMounts[0]
			m.SubPath, m.MountPropagation = "x", ptr(corev1.MountPropagationHostToContainer)
		}},
		{"shareProcessNamespace", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }},
		{"dns to the cluster's resolver", func(p *corev1.Pod) { p.Spec.DNSPolicy, p.Spec.DNSConfig = corev1.DNSClusterFirst, nil }},
		{"hostAliases", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"pypi.org"}}}
		}},
		{"serviceAccountName changed (token still off)", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "cluster-admin-sa" }},
		{"resource claim (DRA device)", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr("gpu")}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		}},
		{"volumeDevices on a same-named volume", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "workspace", DevicePath: "/dev/xvda"}}
		}},
	} {
		asked := k.podFor(spec, "sbx-1", "tok", 61000)
		got := asked.DeepCopy()
		c.mutate(got)
		if diff := changed(asked, got); diff == "" {
			t.Errorf("not caught: %s", c.name)
		}
	}
}

// NetworkPolicies are additive: a default-deny policy beside one that
// allows all egress does not deny, and networkWarning says so.
func TestNetworkWarningAdditive(t *testing.T) {
	k, client := testRuntime(t)
	deny := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: "sandboxd"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}}
	allowAll := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "allow-all", Namespace: "sandboxd"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{}}}}
	for _, p := range []networkingv1.NetworkPolicy{deny, allowAll} {
		if _, err := client.NetworkingV1().NetworkPolicies("sandboxd").Create(t.Context(), &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if w := k.networkWarning(t.Context()); w == "" {
		t.Errorf("deny + allow-all-egress reported as cut off the network")
	}
}

// The pod as the loopback cluster's API server admits it (a server dry
// run: nothing is stored) is the pod asked for: its defaults are no
// change. Needs `make cluster` (required when CI=true).
func TestDryRunAdmittedIsUnchanged(t *testing.T) {
	cfgPath := "/var/lib/sandboxd-cluster/admin.kubeconfig"
	if _, err := os.Stat(cfgPath); err != nil && os.Getenv("CI") != "true" {
		t.Skip("no cluster: make cluster")
	}
	real, err := New(Options{Kubeconfig: cfgPath, Namespace: "sandboxd", Instance: "test", ChannelKey: key,
		UIDs: runtime.NewUIDs(runtime.UIDRange{First: 61000, Last: 61009})})
	if err != nil {
		t.Fatal(err)
	}
	spec := runtime.Spec{Language: "python", Image: "sandboxd/python:latest",
		Limits: runtime.Limits{Memory: 256 << 20, CPUs: 0.5, Disk: 64 << 20, Pids: 128}}
	pod := real.podFor(spec, "sbx-dryrun", "tok", 61000)
	got, err := real.client.CoreV1().Pods("sandboxd").Create(t.Context(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := changed(pod, got); diff != "" {
		t.Errorf("the API server's defaults taken for a change: %s", diff)
	}
}
