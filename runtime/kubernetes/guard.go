package kubernetes

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	deny := false
	for _, p := range list.Items {
		// Policies add up: one that lets anything in or out undoes a
		// default deny for the pods it selects.
		if len(p.Spec.Ingress) > 0 || len(p.Spec.Egress) > 0 {
			return fmt.Sprintf("NetworkPolicy %s in namespace %s lets traffic in or out of sandboxes: on a cluster whose network plugin enforces policies they can reach what it allows. sandboxd's pods need no network: remove it", p.Name, k.opts.Namespace)
		}
		deny = deny || defaultDeny(p)
	}
	if deny {
		return ""
	}
	return fmt.Sprintf("namespace %s has no default-deny NetworkPolicy: on a cluster whose network plugin enforces policies, sandboxes there can reach the API server, the kubelets, cloud metadata and other pods. Apply the one in examples/kubernetes-rbac.yaml (and block metadata endpoints on the nodes)", k.opts.Namespace)
}

// userNamespaces says whether sandboxes' pods can run in user namespaces
// of their own (`hostUsers: false`), so that a pod's uids are nobody's on
// its node: when every node the pods may land on says its default runtime
// handler supports them (runc 1.2 or later under containerd 2). A pod of
// a runtime class (gVisor) keeps the node's uids: its handler is its own
// kernel's, which keeps its own users. why says what stands in the way.
func (k *Kubernetes) userNamespaces(ctx context.Context) (ok bool, why string) {
	if k.opts.RuntimeClass != "" {
		return false, "pods of runtime class " + k.opts.RuntimeClass + " keep the nodes' uids"
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	nodes, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(k.opts.NodeSelector).String()})
	if err != nil {
		return false, fmt.Sprintf("cannot read the nodes (%v): grant the service account list on nodes, as examples/kubernetes-rbac.yaml does", err)
	}
	if len(nodes.Items) == 0 {
		return false, "no node matches the node selector yet"
	}
	for _, n := range nodes.Items {
		if !defaultHandlerHasUserNamespaces(n) {
			return false, fmt.Sprintf("node %s does not run pods in user namespaces (it needs Kubernetes 1.33 or later, containerd 2 and runc 1.2 or later; `make cluster` builds one)", n.Name)
		}
	}
	return true, ""
}

// defaultHandlerHasUserNamespaces says whether n's default runtime
// handler (named "") supports user namespaces.
func defaultHandlerHasUserNamespaces(n corev1.Node) bool {
	for _, h := range n.Status.RuntimeHandlers {
		if h.Name == "" && h.Features != nil && h.Features.UserNamespaces != nil {
			return *h.Features.UserNamespaces
		}
	}
	return false
}

// defaultDeny says whether p selects every pod and allows no traffic in
// or out.
func defaultDeny(p networkingv1.NetworkPolicy) bool {
	s := p.Spec
	return len(s.PodSelector.MatchLabels) == 0 && len(s.PodSelector.MatchExpressions) == 0 &&
		slices.Contains(s.PolicyTypes, networkingv1.PolicyTypeIngress) && slices.Contains(s.PolicyTypes, networkingv1.PolicyTypeEgress) &&
		len(s.Ingress) == 0 && len(s.Egress) == 0
}

// changed names what of the pod sandboxd asked for the cluster admitted
// otherwise ("" when nothing): every field must come back as sent, but
// for the defaults an API server fills in where sandboxd left a field
// empty (acceptDefaults). A webhook's sidecar, volume source, security
// context, runtime class, node, port, environment or toleration is a
// change.
func changed(asked, got *corev1.Pod) string {
	want, have := asked.Spec.DeepCopy(), got.Spec.DeepCopy()
	acceptDefaults(want, have)
	var diff []string
	for _, f := range fieldsDiffering(*want, *have) {
		if f != "Containers" || len(want.Containers) != len(have.Containers) {
			diff = append(diff, f)
			continue
		}
		for i := range want.Containers {
			for _, cf := range fieldsDiffering(want.Containers[i], have.Containers[i]) {
				diff = append(diff, "Containers["+want.Containers[i].Name+"]."+cf)
			}
		}
	}
	return strings.Join(diff, ", ")
}

// changedError is Create's error for a pod admitted otherwise than asked.
func (k *Kubernetes) changedError(name, diff string) error {
	return fmt.Errorf("the cluster admits sandbox pod %s changed (%s): sandboxd runs only the pod it asked for. Exempt namespace %s from the admission webhook or policy that changes pods", name, diff, k.opts.Namespace)
}

// fieldsDiffering names the fields of two structs of one type that are
// not semantically equal (quantities by value).
func fieldsDiffering[T any](a, b T) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		if !equality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}

// defaultTolerations are what the API server adds to every pod (the
// DefaultTolerationSeconds admission): leave a node gone NotReady or
// unreachable after a while.
func defaultTolerations(ts []corev1.Toleration) bool {
	for _, t := range ts {
		if t.Operator != corev1.TolerationOpExists || t.Effect != corev1.TaintEffectNoExecute || t.TolerationSeconds == nil ||
			t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
			return false
		}
	}
	return true
}

// acceptDefaults copies into want what an API server fills in of have
// where want left it empty, and nothing else: what sandboxd set is
// compared as set.
func acceptDefaults(want, have *corev1.PodSpec) {
	fill := func(w *string, h string) {
		if *w == "" {
			*w = h
		}
	}
	fill(&want.SchedulerName, have.SchedulerName)
	if want.ServiceAccountName == "" && have.ServiceAccountName == "default" {
		want.ServiceAccountName, want.DeprecatedServiceAccount = have.ServiceAccountName, have.DeprecatedServiceAccount
	}
	if want.Priority == nil {
		want.Priority = have.Priority
	}
	if want.PreemptionPolicy == nil {
		want.PreemptionPolicy = have.PreemptionPolicy
	}
	if len(want.Tolerations) == 0 && defaultTolerations(have.Tolerations) {
		want.Tolerations = have.Tolerations
	}
	for i := range min(len(want.Containers), len(have.Containers)) {
		w, h := &want.Containers[i], &have.Containers[i]
		fill(&w.TerminationMessagePath, h.TerminationMessagePath)
		if w.ImagePullPolicy == "" {
			w.ImagePullPolicy = h.ImagePullPolicy
		}
	}
}

// A pod carries the spec sandboxd asked for, and its MAC under the
// channel key, in its annotations: Attach (after a restart) compares the
// pod running with it, as Create compares the pod admitted, so that what
// was changed since (an ephemeral container, another image) is caught.
// Anyone who may patch pods may change the annotations too, not the MAC.
const (
	annotationSpec    = "io.sandboxd.spec"
	annotationSpecMAC = "io.sandboxd.spec-mac"
)

// seal records pod's spec in its annotations.
func (k *Kubernetes) seal(pod *corev1.Pod) {
	spec, _ := json.Marshal(pod.Spec)
	pod.Annotations = map[string]string{annotationSpec: string(spec), annotationSpecMAC: k.specMAC(pod.Name, spec)}
}

func (k *Kubernetes) specMAC(name string, spec []byte) string {
	mac := hmac.New(sha256.New, k.opts.ChannelKey)
	mac.Write([]byte("spec\x00" + name + "\x00")) // apart from the tokens' input, a bare name
	mac.Write(spec)
	return hex.EncodeToString(mac.Sum(nil))
}

// changedSince names what of pod differs from the spec it was created
// with (see seal), or why that cannot be told. A container that was
// restarted (with restartPolicy Never, only a change of its spec does
// that, since undone perhaps) or an ephemeral container that ran is a
// change too: either may have left anything in the pod's volumes.
func (k *Kubernetes) changedSince(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			return fmt.Sprintf("its container %s was restarted %d times", cs.Name, cs.RestartCount)
		}
	}
	if len(pod.Status.EphemeralContainerStatuses) > 0 {
		return "an ephemeral container ran in it"
	}
	spec := pod.Annotations[annotationSpec]
	if !hmac.Equal([]byte(pod.Annotations[annotationSpecMAC]), []byte(k.specMAC(pod.Name, []byte(spec)))) {
		return "the record of the spec it was created with is missing or altered"
	}
	asked := &corev1.Pod{}
	if err := json.Unmarshal([]byte(spec), &asked.Spec); err != nil {
		return "the record of the spec it was created with cannot be read"
	}
	running := pod.DeepCopy()
	if asked.Spec.NodeName == "" {
		running.Spec.NodeName = "" // the scheduler's, since
	}
	return changed(asked, running)
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
