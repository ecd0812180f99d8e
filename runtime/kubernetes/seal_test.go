package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxd/sandboxd/runtime"
)

// A pod read back after a restart is the pod sandboxd created, with the
// API server's defaults and the scheduler's node; anything changed since,
// or a record of its spec that was touched, is named.
func TestChangedSinceCreated(t *testing.T) {
	k, _ := testRuntime(t)
	spec := runtime.Spec{Language: "python", Image: "sandboxd/python:latest", Limits: runtime.Limits{Memory: 64 << 20, CPUs: 0.5, Disk: 16 << 20, Pids: 64}}
	stored := func() *corev1.Pod {
		p := k.podFor(spec, "sbx-1", "tok", 61000)
		p.Spec.NodeName, p.Spec.SchedulerName = "node-2", "default-scheduler"
		p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
		return p
	}
	if diff := k.changedSince(stored()); diff != "" {
		t.Fatalf("the pod as created: %s", diff)
	}
	cases := map[string]struct {
		change func(p *corev1.Pod)
		want   string
	}{
		"an ephemeral container": {func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}, "EphemeralContainers"},
		"another image": {func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil/python:latest" }, "Containers[sandbox].Image"},
		"a toleration": {func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: "Exists"})
		}, "Tolerations"},
		"an unreachable node tolerated for ever": {func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		}, "Tolerations"},
		"the termination log moved": {func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePath = "/tmp/log" }, "TerminationMessagePath"},
		"a restart (a change since undone)": {func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sandbox", RestartCount: 1}}
		}, "restarted"},
		"an ephemeral container that ran": {func(p *corev1.Pod) {
			p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug"}}
		}, "ephemeral"},
		"no record": {func(p *corev1.Pod) { p.Annotations = nil }, "missing or altered"},
		"record changed": {func(p *corev1.Pod) {
			p.Annotations[annotationSpec] = strings.Replace(p.Annotations[annotationSpec], "sandboxd/python", "evil/python", 1)
		}, "missing or altered"},
		"another pod's record": {func(p *corev1.Pod) {
			other := k.podFor(spec, "sbx-2", "tok", 61000)
			p.Annotations = other.Annotations
		}, "missing or altered"},
	}
	for name, tc := range cases {
		p := stored()
		tc.change(p)
		if diff := k.changedSince(p); !strings.Contains(diff, tc.want) {
			t.Errorf("%s: %q, want %q named", name, diff, tc.want)
		}
	}
}
