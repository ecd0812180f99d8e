package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandboxd/sandboxd/runtime"
)

// LabelPull names the language whose image a pre-pull DaemonSet pulls.
const LabelPull = "io.sandboxd.pull"

// pullTimeout bounds a pre-pull: every node pulling the image.
const pullTimeout = 5 * time.Minute

var _ runtime.Puller = (*Kubernetes)(nil)

// Pull implements runtime.Puller: a DaemonSet, whose pods go to every node
// the language's sandboxes may go to (the same node selector and runtime
// class) and start from its image, makes each node pull it; it is deleted
// once each node has the image or has said why it cannot. Kubernetes has
// no API to pull an image onto a node; this is the usual way.
func (k *Kubernetes) Pull(ctx context.Context, _, language, ref string, progress func(line string)) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	if _, err := k.pin(ctx, ref); err != nil {
		return nil, err
	}
	ds := k.pullerFor(language, ref)
	daemonSets := k.client.AppsV1().DaemonSets(k.opts.Namespace)
	// One of an earlier pull that sandboxd did not live to delete.
	if err := k.deletePuller(ctx, ds.Name); err != nil {
		return nil, err
	}
	if _, err := daemonSets.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return nil, k.apiError("creating the DaemonSet that pulls "+ds.Spec.Template.Spec.Containers[0].Image, err)
	}
	defer func() { _ = k.deletePuller(context.WithoutCancel(ctx), ds.Name) }()
	return k.followPull(ctx, ds, progress)
}

// pullerFor is the DaemonSet that pulls language's image ref onto the nodes.
func (k *Kubernetes) pullerFor(language, ref string) *appsv1.DaemonSet {
	name := "sandboxd-pull-" + language
	if k.opts.Instance != "" {
		name += "-" + k.opts.Instance[:min(8, len(k.opts.Instance))]
	}
	match := map[string]string{LabelPull: language, runtime.LabelInstance: k.opts.Instance}
	labels := map[string]string{} // the operator's, as on every pod, then match
	for key, v := range k.opts.Labels {
		labels[key] = v
	}
	for key, v := range match {
		labels[key] = v
	}
	nobody := int64(65534)
	tiny := corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse("16Mi"),
		corev1.ResourceCPU:    resource.MustParse("10m"),
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.opts.Namespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: match},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr(false),
					EnableServiceLinks:            ptr(false),
					TerminationGracePeriodSeconds: ptr(int64(0)),
					NodeSelector:                  k.opts.NodeSelector,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsUser: &nobody, RunAsGroup: &nobody, RunAsNonRoot: ptr(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "pull",
						Image: k.pinned(ref),
						// Idles until deleted; an image without sleep fails
						// to start, and has been pulled all the same.
						Command:   []string{"sleep", "3600"},
						Resources: corev1.ResourceRequirements{Limits: tiny, Requests: tiny},
						SecurityContext: &corev1.SecurityContext{
							Privileged: ptr(false), AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
	if k.opts.RuntimeClass != "" {
		ds.Spec.Template.Spec.RuntimeClassName = ptr(k.opts.RuntimeClass)
	}
	return ds
}

// followPull tells progress of each node that has pulled the image or
// cannot, until every node the DaemonSet went to has done one or the
// other, and returns those that have it; an error names those that cannot.
func (k *Kubernetes) followPull(ctx context.Context, ds *appsv1.DaemonSet, progress func(string)) ([]string, error) {
	image := ds.Spec.Template.Spec.Containers[0].Image
	selector := labels.SelectorFromSet(ds.Spec.Selector.MatchLabels).String()
	done := map[string]string{} // node -> "" (pulled) or why not
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	began := time.Now()
	for {
		got, err := k.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return nil, k.apiError("following the image pull", err)
		}
		pods, err := k.client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, k.apiError("following the image pull", err)
		}
		for _, pod := range pods.Items {
			node := pod.Spec.NodeName
			if _, seen := done[node]; seen || node == "" {
				continue
			}
			pulled, why := pullState(pod)
			switch {
			case pulled:
				done[node] = ""
				progress(fmt.Sprintf("node %s has %s (%.1f s)", node, image, time.Since(began).Seconds()))
			case why != "":
				done[node] = why
				progress(fmt.Sprintf("node %s cannot pull %s: %s", node, image, why))
			}
		}
		desired := int(got.Status.DesiredNumberScheduled)
		if got.Status.ObservedGeneration >= got.Generation && len(done) >= desired {
			if desired == 0 && time.Since(began) < 10*time.Second {
				// The DaemonSet controller may not have counted the nodes yet.
			} else {
				return pulled(done), pullResult(done, image)
			}
		}
		select {
		case <-ctx.Done():
			return pulled(done), fmt.Errorf("%d of %d nodes have %s after %s: %w", len(done), desired, image, time.Since(began).Round(time.Second), ctx.Err())
		case <-tick.C:
		}
	}
}

// pullState says whether a pull pod's node has the image, or why it
// cannot have it.
func pullState(pod corev1.Pod) (pulled bool, why string) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.ImageID != "" || cs.State.Running != nil || cs.State.Terminated != nil {
			return true, ""
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
				return false, w.Reason + ": " + w.Message
			}
		}
	}
	return false, ""
}

// pulled are the nodes that have the image, sorted.
func pulled(done map[string]string) []string {
	var nodes []string
	for node, why := range done {
		if why == "" {
			nodes = append(nodes, node)
		}
	}
	sort.Strings(nodes)
	return nodes
}

// pullResult is nil when every node has the image, and names those that
// cannot otherwise.
func pullResult(done map[string]string, image string) error {
	if len(done) == 0 {
		return fmt.Errorf("no node takes the sandboxes' pods (check the node selector and the nodes' taints): nothing pulled %s", image)
	}
	var failed []string
	for node, why := range done {
		if why != "" {
			failed = append(failed, node+": "+why)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	sort.Strings(failed)
	return errors.New("cannot pull " + image + " on " + strings.Join(failed, "; "))
}

// deletePuller deletes a pull DaemonSet and its pods, if it is there.
func (k *Kubernetes) deletePuller(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := k.client.AppsV1().DaemonSets(k.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr(metav1.DeletePropagationBackground), GracePeriodSeconds: ptr(int64(0)),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return k.apiError("deleting the DaemonSet "+name, err)
	}
	return nil
}
