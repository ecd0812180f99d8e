package kubernetes

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxd/sandboxd/runtime"
)

// The pull DaemonSet goes where the sandboxes go, runs as nobody with
// nothing, and carries the operator's labels under its own.
func TestPullerGoesWhereSandboxesGo(t *testing.T) {
	k, _ := testRuntime(t)
	pin, err := k.pin(context.Background(), "sandboxd/python:latest")
	if err != nil {
		t.Fatal(err)
	}
	ds := k.pullerFor("python", "sandboxd/python:latest")
	spec := ds.Spec.Template.Spec
	c := spec.Containers[0]
	switch {
	case c.Image != pin || !strings.Contains(pin, "/sandboxd/python@sha256:"):
		t.Errorf("image %q", c.Image)
	case spec.NodeSelector["pool"] != "sandboxes" || spec.RuntimeClassName == nil || *spec.RuntimeClassName != "gvisor":
		t.Errorf("placement: %v %v", spec.NodeSelector, spec.RuntimeClassName)
	case *spec.SecurityContext.RunAsUser != 65534 || !*c.SecurityContext.ReadOnlyRootFilesystem || len(c.SecurityContext.Capabilities.Drop) != 1 || *spec.AutomountServiceAccountToken:
		t.Errorf("hardening: %+v %+v", spec.SecurityContext, c.SecurityContext)
	case ds.Spec.Template.Labels["team"] != "a" || ds.Spec.Template.Labels[runtime.LabelInstance] != "inst1" || ds.Labels[LabelPull] != "python":
		t.Errorf("labels: %v %v", ds.Labels, ds.Spec.Template.Labels)
	case ds.Spec.Template.Labels[runtime.LabelManaged] != "":
		t.Error("a pull pod must not pass for a sandbox")
	}
}

// A node has the image once its container was made from it, even one
// that cannot run; it cannot when the pull fails; the result names the
// nodes that cannot.
func TestPullStateAndResult(t *testing.T) {
	status := func(cs corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}}}
	}
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}
	}
	crashing := waiting("CrashLoopBackOff")
	crashing.ImageID = "sha256:1"
	for _, tc := range []struct {
		pod    corev1.Pod
		pulled bool
		why    string
	}{
		{status(waiting("ContainerCreating")), false, ""},
		{status(crashing), true, ""},
		{status(corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), true, ""},
		{status(waiting("ImagePullBackOff")), false, "ImagePullBackOff: m"},
	} {
		if pulled, why := pullState(tc.pod); pulled != tc.pulled || why != tc.why {
			t.Errorf("%+v: pulled %v %q", tc.pod.Status.ContainerStatuses[0], pulled, why)
		}
	}
	done := map[string]string{"b": "", "a": "", "c": "ErrImagePull: denied"}
	if nodes := pulled(done); strings.Join(nodes, ",") != "a,b" {
		t.Errorf("pulled by %v", nodes)
	}
	if err := pullResult(done, "img"); err == nil || err.Error() != "cannot pull img on c: ErrImagePull: denied" {
		t.Errorf("result: %v", err)
	}
	if err := pullResult(map[string]string{}, "img"); err == nil || !strings.Contains(err.Error(), "no node takes") {
		t.Errorf("no node: %v", err)
	}
}
