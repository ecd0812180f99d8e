package kubernetes

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// The pod's fixed parts.
const (
	containerName = "sandbox"
	// SupervisorPort is where the supervisor listens on the pod's own
	// loopback; port forwarding reaches it, nothing else can.
	SupervisorPort = 7073
	// SeccompProfile is the Localhost profile every sandbox runs under:
	// `sandboxd -seccomp-profile` prints it, to be put in each node's
	// kubelet seccomp directory (make cluster does).
	SeccompProfile = "sandboxd.json"
	// userNSUID is the uid of a pod in a user namespace of its own.
	userNSUID = 1000
	// ephemeralStorage is a pod's share of its node's disk.
	ephemeralStorage = 64 << 20
)

// podFor is the pod of a sandbox: the Docker runtime's hardening carried
// over field by field (runtime/docker's containerConfig), with what a pod
// cannot have said where it is left out.
func (k *Kubernetes) podFor(spec runtime.Spec, name, token string, uid uint32) *corev1.Pod {
	labels := map[string]string{}
	for key, v := range k.opts.Labels {
		labels[key] = v
	}
	for key, v := range spec.Labels {
		labels[key] = v
	}
	// Mandatory labels last: nothing above can override them.
	labels[runtime.LabelManaged] = "true"
	labels[runtime.LabelInstance] = k.opts.Instance
	labels[runtime.LabelLanguage] = spec.Language
	labels[runtime.LabelUID] = strconv.FormatUint(uint64(uid), 10)

	id := int64(uid)
	env := []corev1.EnvVar{
		{Name: "HOME", Value: cmp.Or(spec.WorkspaceAt, runtime.Workspace)}, {Name: "LANG", Value: "C.UTF-8"}, {Name: "TMPDIR", Value: "/tmp"},
		{Name: supervisor.EnvListen, Value: fmt.Sprintf("127.0.0.1:%d", SupervisorPort)},
		{Name: supervisor.EnvTokenSum, Value: supervisor.TokenSum(token)},
		{Name: supervisor.EnvNproc, Value: strconv.FormatInt(spec.Limits.Pids+supervisor.ReservedThreads, 10)},
	}
	for _, kv := range spec.Env {
		key, value, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: key, Value: value})
	}
	// Limits equal to requests: the Guaranteed class, so the scheduler
	// places a sandbox only where its memory and cpu are free. Its share
	// of the node's disk is small: its files are in memory, the root is
	// read-only, and the supervisor writes little.
	resources := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(spec.Limits.Memory, resource.BinarySI),
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(spec.Limits.CPUs*1000), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(ephemeralStorage, resource.BinarySI),
	}
	// Memory-backed, like the Docker runtime's tmpfs: the files count
	// toward the pod's memory, and a full one is ENOSPC inside.
	scratch := func(name string) corev1.Volume {
		size := resource.NewQuantity(spec.Limits.Disk, resource.BinarySI)
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.opts.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         ptr(false),
			Hostname:                      "sandbox",
			TerminationGracePeriodSeconds: ptr(int64(0)),
			// No resolver to ask: the sandbox has no network.
			DNSPolicy:    corev1.DNSNone,
			DNSConfig:    &corev1.PodDNSConfig{Nameservers: []string{"127.0.0.1"}},
			NodeSelector: k.opts.NodeSelector,
			// A language's sandboxes spread over the nodes, where they
			// may: a node that goes takes as few of them as it can.
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew:           1,
				TopologyKey:       corev1.LabelHostname,
				WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
					runtime.LabelInstance: k.opts.Instance, runtime.LabelLanguage: spec.Language}},
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      &id,
				RunAsGroup:     &id,
				RunAsNonRoot:   ptr(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr(SeccompProfile)},
			},
			Containers: []corev1.Container{{
				Name:       containerName,
				Image:      k.pinned(spec.Image), // see digest.go
				Command:    []string{runtime.SupervisorPath},
				WorkingDir: runtime.Workspace,
				Env:        env,
				Resources:  corev1.ResourceRequirements{Limits: resources, Requests: resources},
				SecurityContext: &corev1.SecurityContext{
					Privileged:               ptr(false),
					AllowPrivilegeEscalation: ptr(false),
					ReadOnlyRootFilesystem:   ptr(true),
					RunAsNonRoot:             ptr(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: cmp.Or(spec.WorkspaceAt, runtime.Workspace)},
					{Name: "tmp", MountPath: "/tmp"},
				},
				// Set, not left to the API server's default: a webhook
				// that moves it (where the supervisor would not keep
				// programs from writing it, see keepTerminationLog in
				// sandboxinit) changes the pod.
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{scratch("workspace"), scratch("tmp")},
		},
	}
	if k.opts.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = ptr(k.opts.RuntimeClass)
	}
	if k.userNS.Load() {
		// The pod's uids map to a range of the node's that is its alone,
		// so one uid serves every pod: sandboxd's own (the label) stays
		// its bookkeeping. A uid past 65535 would be outside the map.
		pod.Spec.HostUsers = ptr(false)
		pod.Spec.SecurityContext.RunAsUser = ptr(int64(userNSUID))
		pod.Spec.SecurityContext.RunAsGroup = ptr(int64(userNSUID))
	}
	k.seal(pod)
	return pod
}

// image is where the cluster pulls ref from.
func (k *Kubernetes) image(ref string) string {
	if k.opts.ImageRegistry == "" {
		return ref
	}
	return k.opts.ImageRegistry + "/" + ref
}

func ptr[T any](v T) *T { return &v }
