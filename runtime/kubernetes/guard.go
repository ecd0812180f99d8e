package kubernetes

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the runtime guards against in the cluster it is given: readers of
// pods who would take a sandbox's channel; a namespace that does not
// shut its pods off the network (a pod on a real cluster's network
// reaches the API server, the kubelets, cloud metadata and every other
// pod); a pod that does not run as asked (an admission webhook may add a
// container, a volume, a capability or a host namespace).

// networkWarning says what is wrong with the namespace's network
// policies, or "" if one denies every pod of it all traffic both ways.
func (k *Kubernetes) networkWarning(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, err := k.client.NetworkingV1().NetworkPolicies(k.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("cannot read the network policies of namespace %s (%v): grant the service account list on networkpolicies, as examples/kubernetes-rbac.yaml does", k.opts.Namespace, err)
	}
	for _, p := range list.Items {
		if defaultDeny(p) {
			return ""
		}
	}
	return fmt.Sprintf("namespace %s has no default-deny NetworkPolicy: on a cluster whose network plugin enforces policies, sandboxes there can reach the API server, the kubelets, cloud metadata and other pods. Apply the one in examples/kubernetes-rbac.yaml (and block metadata endpoints on the nodes)", k.opts.Namespace)
}

// defaultDeny says whether p selects every pod and allows no traffic in
// or out.
func defaultDeny(p networkingv1.NetworkPolicy) bool {
	s := p.Spec
	return len(s.PodSelector.MatchLabels) == 0 && len(s.PodSelector.MatchExpressions) == 0 &&
		slices.Contains(s.PolicyTypes, networkingv1.PolicyTypeIngress) && slices.Contains(s.PolicyTypes, networkingv1.PolicyTypeEgress) &&
		len(s.Ingress) == 0 && len(s.Egress) == 0
}

// added says what the admitted pod has that the requested one did not,
// of what widens a sandbox's reach: containers, volumes, host
// namespaces, privilege, capabilities, a service account's token; ""
// when nothing.
func added(asked, got *corev1.Pod) string {
	var extra []string
	names := func(n int, name func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = name(i)
		}
		return out
	}
	askedContainers := names(len(asked.Spec.Containers), func(i int) string { return asked.Spec.Containers[i].Name })
	for _, c := range got.Spec.Containers {
		if !slices.Contains(askedContainers, c.Name) {
			extra = append(extra, "container "+c.Name)
		}
	}
	for _, c := range got.Spec.InitContainers {
		extra = append(extra, "init container "+c.Name)
	}
	for _, c := range got.Spec.EphemeralContainers {
		extra = append(extra, "ephemeral container "+c.Name)
	}
	askedVolumes := names(len(asked.Spec.Volumes), func(i int) string { return asked.Spec.Volumes[i].Name })
	for _, v := range got.Spec.Volumes {
		if !slices.Contains(askedVolumes, v.Name) {
			extra = append(extra, "volume "+v.Name)
		}
	}
	if got.Spec.HostNetwork || got.Spec.HostPID || got.Spec.HostIPC {
		extra = append(extra, "a host namespace")
	}
	if a := got.Spec.AutomountServiceAccountToken; a == nil || *a {
		extra = append(extra, "the service account's token")
	}
	for _, c := range got.Spec.Containers {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			extra = append(extra, "container "+c.Name+" without its security context")
			continue
		case sc.Privileged != nil && *sc.Privileged:
			extra = append(extra, "privilege to container "+c.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			extra = append(extra, "privilege escalation to container "+c.Name)
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
			extra = append(extra, fmt.Sprintf("capabilities %v to container %s", sc.Capabilities.Add, c.Name))
		}
		i := slices.IndexFunc(asked.Spec.Containers, func(a corev1.Container) bool { return a.Name == c.Name })
		for _, m := range c.VolumeMounts {
			if i < 0 || !slices.ContainsFunc(asked.Spec.Containers[i].VolumeMounts, func(a corev1.VolumeMount) bool {
				return a.Name == m.Name && a.MountPath == m.MountPath
			}) {
				extra = append(extra, "mount "+m.MountPath+" to container "+c.Name)
			}
		}
	}
	return strings.Join(extra, ", ")
}

// token is the channel token of pod name: an HMAC of its name under the
// runtime's key. The pod's spec holds only its SHA-256 (anyone who may
// read pods in the namespace reads the spec, and may port-forward to the
// supervisor), and a restarted sandboxd, with the same key, knows it.
func (k *Kubernetes) token(name string) string {
	mac := hmac.New(sha256.New, k.opts.ChannelKey)
	mac.Write([]byte(name))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}
