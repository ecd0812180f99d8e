// Package kubernetes is the runtime that places sandboxes in pods of a
// Kubernetes cluster, one pod per sandbox, so that pools, sessions, files
// and policies work as they do on the local Docker engine while the
// cluster's scheduler decides where each sandbox runs.
//
// The supervisor channel: a pod's stdout goes to the node's logs
// (/var/log/pods), so the supervisor does not speak on its stdio here. It
// listens on the pod's own loopback (runtime/supervisor/sandboxinit/listen.go), and
// this runtime reaches it by port forwarding through the API server and
// the kubelet, opening with a token set in the pod's environment. Port
// forwarding puts no process in the pod (an exec'd relay would be one the
// supervisor's kill-everything must spare) and needs no pod network: the
// kubelet's runtime dials the port inside the pod's network namespace.
package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Options configure the runtime (the `runtime "kubernetes"` block).
type Options struct {
	Kubeconfig    string
	Namespace     string
	RuntimeClass  string
	NodeSelector  map[string]string
	ImageRegistry string
	Instance      string            // the io.sandboxd.instance label of this sandboxd
	Labels        map[string]string // operator labels on every pod
	UIDs          *runtime.UIDs     // shared with the Docker runtime: a host uid is one sandbox's
	Logger        hclog.Logger
	// ChannelKey makes each pod's channel token (see token); kept in
	// sandboxd's state, so that a restarted sandboxd reaches its pods.
	ChannelKey []byte
}

// Kubernetes implements runtime.Runtime on a cluster's API.
type Kubernetes struct {
	client kubernetes.Interface
	rest   *rest.Config // nil in unit tests: no port forwarding
	opts   Options
	uids   *runtime.UIDs
	log    hclog.Logger

	checkCluster sync.Once   // at the first answer of the API server
	userNS       atomic.Bool // pods in user namespaces of their own (see userNamespaces)

	mu       sync.Mutex
	forwards map[string]io.Closer // open port forwards by pod name
	owners   map[string]uint32    // the uid each known pod runs as
	pins     map[string]string    // image refs by digest (see digest.go)
}

// callTimeout bounds one call to the API server.
const callTimeout = 30 * time.Second

// startTimeout bounds a pod's start: scheduling, an image pull, the
// supervisor's first answer.
const startTimeout = 120 * time.Second

var _ runtime.Runtime = (*Kubernetes)(nil)

// New connects to the cluster the kubeconfig names.
func New(opts Options) (*Kubernetes, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	// A client of its own rate: every sandbox is a pod to create, watch,
	// forward to and delete, far past client-go's default 5 per second.
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return newWith(client, cfg, opts), nil
}

func newWith(client kubernetes.Interface, cfg *rest.Config, opts Options) *Kubernetes {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.ChannelKey == nil {
		opts.ChannelKey = []byte(supervisor.NewToken())
	}
	return &Kubernetes{
		client: client, rest: cfg, opts: opts, uids: opts.UIDs, log: opts.Logger.Named("kubernetes"),
		forwards: map[string]io.Closer{}, owners: map[string]uint32{}, pins: map[string]string{},
	}
}

// Ping implements runtime.Runtime.
func (k *Kubernetes) Ping(ctx context.Context) (runtime.EngineInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := k.client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	var v version.Info
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		return runtime.EngineInfo{}, fmt.Errorf("%w: the Kubernetes API server: %v", runtime.ErrUnavailable, err)
	}
	k.checkCluster.Do(func() {
		if warning := k.networkWarning(ctx); warning != "" {
			k.log.Warn("SANDBOXES ARE NOT CUT OFF THE NETWORK: " + warning)
		}
		ok, why := k.userNamespaces(ctx)
		k.userNS.Store(ok)
		if ok {
			k.log.Info("pods run in user namespaces of their own (hostUsers: false): a pod's uids are nobody's on its node")
		} else {
			k.log.Warn("pods share the nodes' uids (hostUsers: true): " + why)
		}
	})
	rc := k.opts.RuntimeClass
	if rc == "" {
		rc = "the cluster's default"
	}
	return runtime.EngineInfo{Version: "kubernetes " + v.GitVersion, APIVersion: v.Major + "." + v.Minor, Runtime: rc}, nil
}

// Create implements runtime.Runtime: create the pod, wait until it runs,
// forward to its supervisor, hello.
func (k *Kubernetes) Create(ctx context.Context, spec runtime.Spec) (sb *runtime.Sandbox, err error) {
	if len(spec.Mounts) > 0 {
		return nil, errors.New("a pod cannot mount a directory of sandboxd's host: projects are for the Docker runtime")
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := k.pin(ctx, spec.Image); err != nil {
		return nil, err
	}
	uid, err := k.uids.Take()
	if err != nil {
		return nil, err
	}
	name := "sbx-" + randomHex(8)
	token := k.token(name)
	pod := k.podFor(spec, name, token, uid)
	// Admission is asked first without storing anything, so that a pod a
	// webhook changes is never scheduled; the stored one is checked too.
	pods := k.client.CoreV1().Pods(k.opts.Namespace)
	admitted, err := pods.Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		if diff := changed(pod, admitted); diff != "" {
			k.uids.Release(uid)
			return nil, k.changedError(name, diff)
		}
		admitted, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	}
	if err != nil {
		k.uids.Release(uid)
		return nil, k.apiError("creating a pod", err)
	}
	k.own(name, uid)
	defer runtime.RemoveOnFailure(&err, name, k.Remove)
	if diff := changed(pod, admitted); diff != "" {
		return nil, k.changedError(name, diff)
	}
	if err := k.waitRunning(ctx, name, spec.Image, spec.Waiting); err != nil {
		return nil, err
	}
	sb = &runtime.Sandbox{ID: name, Language: spec.Language, Labels: pod.Labels, Created: time.Now(), OOMKilled: k.oomKilled(name)}
	if sb.Conn, err = k.connect(ctx, name, token); err != nil {
		return nil, err
	}
	if err := sb.Hello(ctx); err != nil {
		return nil, fmt.Errorf("sandbox supervisor did not start: %w", err)
	}
	return sb, nil
}

// waitRunning polls the pod until its container runs, and says why when
// it cannot. A pod slow to start tells waiting (if set) what it waits on.
func (k *Kubernetes) waitRunning(ctx context.Context, name, image string, waiting func(string)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	began, created := time.Now(), time.Now()
	var told string
	var lastLook time.Time
	for {
		pod, err := k.client.CoreV1().Pods(k.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return k.apiError("waiting for a pod", err)
		}
		switch pod.Status.Phase {
		case corev1.PodRunning:
			return nil
		case corev1.PodFailed, corev1.PodSucceeded:
			return fmt.Errorf("pod %s ended before its supervisor answered: %s", name, describe(pod))
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "InvalidImageName":
					return fmt.Errorf("%w: the cluster cannot pull %s (%s): push the images with `make images-push` or images/push.sh", runtime.ErrImageMissing, k.pinned(image), w.Message)
				case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
					return fmt.Errorf("pod %s: %s: %s", name, w.Reason, w.Message)
				}
			}
		}
		if waiting != nil && time.Since(created) > waitingAfter && time.Since(lastLook) > waitingAfter {
			lastLook = time.Now()
			if why := k.waitingOn(ctx, pod); why != told {
				told = why
				waiting(why)
			}
		}
		// A pod placed on a node whose kubelet is away would wait for the
		// whole start timeout (the node is marked NotReady only after a
		// grace period of its own): the kubelet's lease is read, once the
		// pod is slower than a start usually is.
		if node := pod.Spec.NodeName; node != "" && time.Since(began) > kubeletCheckAfter {
			if err := k.kubeletReports(ctx, node); err != nil {
				return err
			}
			began = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s did not start in time (%s): %w", name, describe(pod), ctx.Err())
		case <-tick.C:
		}
	}
}

// waitingAfter is how long a pod may take to start before what it waits
// on is looked for, and how often after that.
const waitingAfter = time.Second

// waitingOn says what a pending pod waits on, when it is something other
// than a pod's usual start: a node for it, or the image its node pulls
// (the kubelet tells that in events only).
func (k *Kubernetes) waitingOn(ctx context.Context, pod *corev1.Pod) string {
	node := pod.Spec.NodeName
	if node == "" {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				return "no node can take the pod yet: " + c.Message
			}
		}
		return ""
	}
	events, err := k.client.CoreV1().Events(k.opts.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod.Name,
	})
	if err != nil {
		return "" // a Role without events: nothing to tell
	}
	var last *corev1.Event
	for i, ev := range events.Items {
		if last == nil || eventTime(ev).After(eventTime(*last)) {
			last = &events.Items[i]
		}
	}
	if last != nil && last.Reason == "Pulling" {
		return fmt.Sprintf("node %s is pulling image %s", node, pod.Spec.Containers[0].Image)
	}
	return ""
}

// eventTime is when an event last happened, in whichever field its
// reporter filled.
func eventTime(ev corev1.Event) time.Time {
	switch {
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

// kubeletCheckAfter is how long a pod may take to start before its node's
// kubelet is looked for.
const kubeletCheckAfter = 3 * time.Second

// kubeletReports says whether node's kubelet still runs, from the lease it
// renews every 10 s: ErrUnavailable when the lease is older than
// kubeletLeaseFresh. It reads an API object only; asking the kubelet
// itself goes through the API server's node proxy, which a cluster may
// refuse (it does for a node on a loopback address).
func (k *Kubernetes) kubeletReports(ctx context.Context, node string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	lease, err := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // a cluster without node leases: the start timeout tells
	}
	if err != nil {
		return k.apiError("reading the lease of node "+node, err)
	}
	if lease.Spec.RenewTime == nil {
		return nil
	}
	if age := time.Since(lease.Spec.RenewTime.Time); age > kubeletLeaseFresh {
		return fmt.Errorf("%w: the kubelet of node %s has not reported for %s", runtime.ErrUnavailable, node, age.Round(time.Second))
	}
	return nil
}

// kubeletLeaseFresh is how old a kubelet's lease may be while it runs.
const kubeletLeaseFresh = 15 * time.Second

// describe says what holds a pod back, or how it ended.
func describe(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return "evicted (" + c.Reason + "): " + c.Message
		}
	}
	if pod.DeletionTimestamp != nil {
		return "being deleted"
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("its container ended: %s (exit %d) %s", t.Reason, t.ExitCode, t.Message)
		}
		if w := cs.State.Waiting; w != nil && w.Message != "" {
			return w.Reason + ": " + w.Message
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return string(c.Type) + ": " + c.Message
		}
	}
	return string(pod.Status.Phase)
}

// connect forwards a stream to the pod's supervisor and opens it with the
// token. The supervisor may not listen yet when the container has just
// started: it is tried again until ctx ends.
func (k *Kubernetes) connect(ctx context.Context, name, token string) (*supervisor.Conn, error) {
	if k.rest == nil {
		return nil, errors.New("no cluster to forward to")
	}
	for {
		stream, closer, err := k.forward(name)
		if err == nil {
			if _, err = io.WriteString(stream, token+"\n"); err == nil {
				k.mu.Lock()
				if old := k.forwards[name]; old != nil {
					_ = old.Close()
				}
				k.forwards[name] = closer
				k.mu.Unlock()
				conn := supervisor.NewConn(stream, stream)
				// Its diagnostics come here, not to the node's log.
				conn.TakeLogs(k.supervisorLog(name))
				return conn, nil
			}
			_ = closer.Close()
		}
		select {
		case <-ctx.Done():
			// The pod runs, as far as the API server knows: its node's
			// kubelet cannot be reached, which may pass.
			return nil, fmt.Errorf("%w: forwarding to the supervisor of pod %s: %v", runtime.ErrUnavailable, name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// supervisorLog logs what the supervisor of pod name says, 64 KiB of it
// for each connection.
func (k *Kubernetes) supervisorLog(name string) func(line string) {
	log, left := k.log.With("pod", name), 64<<10
	return func(line string) {
		if left > 0 {
			left -= len(line)
			log.Warn("supervisor says", "message", line)
		}
	}
}

// forward opens a port-forward connection to the pod and one data stream
// in it to the supervisor's port. An error the kubelet reports for the
// stream (nothing listens yet) closes it, so the first read fails.
func (k *Kubernetes) forward(name string) (httpstream.Stream, io.Closer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(k.rest)
	if err != nil {
		return nil, nil, err
	}
	url := k.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(k.opts.Namespace).Name(name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, nil, err
	}
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(SupervisorPort))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	_ = errStream.Close() // nothing to say on it
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	failed := make(chan error, 1)
	go func() {
		msg, _ := io.ReadAll(errStream)
		if len(msg) > 0 {
			failed <- errors.New(strings.TrimSpace(string(msg)))
			_ = conn.Close()
		}
		close(failed)
	}()
	// A refused dial shows on the error stream at once; a moment's wait
	// keeps the retry loop from taking a dead stream for a live one.
	select {
	case err := <-failed:
		if err != nil {
			return nil, nil, err
		}
	case <-time.After(20 * time.Millisecond):
	}
	return data, conn, nil
}

// Attach implements runtime.Runtime: the token is the pod's (see token).
func (k *Kubernetes) Attach(ctx context.Context, c runtime.Container) (*runtime.Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	pod, err := k.client.CoreV1().Pods(k.opts.Namespace).Get(ctx, c.ID, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %s was deleted from the cluster", c.ID)
	}
	if err != nil {
		return nil, k.apiError("reading pod "+c.ID, err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return nil, fmt.Errorf("pod %s on node %s is not running: %s", c.ID, pod.Spec.NodeName, describe(pod))
	}
	if diff := k.changedSince(pod); diff != "" {
		return nil, fmt.Errorf("pod %s was changed since sandboxd created it (%s): sandboxd runs only the pod it asked for", c.ID, diff)
	}
	conn, err := k.connect(ctx, c.ID, k.token(c.ID))
	if err != nil {
		return nil, err
	}
	sb := &runtime.Sandbox{ID: c.ID, Language: c.Language, Labels: c.Labels, Created: c.Created, Conn: conn, OOMKilled: k.oomKilled(c.ID)}
	if err := sb.Hello(ctx); err != nil {
		k.detach(c.ID)
		return nil, fmt.Errorf("sandbox supervisor did not answer: %w", err)
	}
	return sb, nil
}

// oomKilled is Sandbox.OOMKilled for a pod: its container's last end,
// as the kubelet reports it a moment after the channel drops.
func (k *Kubernetes) oomKilled(name string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for {
			pod, err := k.client.CoreV1().Pods(k.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, cs := range pod.Status.ContainerStatuses {
				if t := cs.State.Terminated; t != nil {
					return t.Reason == "OOMKilled"
				}
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// Update implements runtime.Runtime. Resizing a running pod goes through
// the kubelet's in-place resize, which may wait for room on the node; a
// sandbox asked for less than its warm pod has is made fresh instead.
func (k *Kubernetes) Update(ctx context.Context, id string, l runtime.Limits) error {
	return fmt.Errorf("%w: kubernetes pods are made with the limits asked for", runtime.ErrFixedLimits)
}

// Remove implements runtime.Runtime: the pod goes at once (no grace: the
// supervisor keeps nothing worth a graceful end).
func (k *Kubernetes) Remove(ctx context.Context, id string) error {
	k.detach(id)
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := k.client.CoreV1().Pods(k.opts.Namespace).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	if err != nil && !apierrors.IsNotFound(err) {
		return k.apiError("removing pod "+id, err)
	}
	k.mu.Lock()
	uid, ok := k.owners[id]
	delete(k.owners, id)
	k.mu.Unlock()
	if ok {
		k.uids.Release(uid)
	}
	return nil
}

func (k *Kubernetes) detach(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.forwards[name]; c != nil {
		_ = c.Close()
		delete(k.forwards, name)
	}
}

func (k *Kubernetes) own(name string, uid uint32) {
	k.uids.Mark(uid)
	k.mu.Lock()
	k.owners[name] = uid
	k.mu.Unlock()
}

// List implements runtime.Runtime: the pods labelled as this sandboxd's.
func (k *Kubernetes) List(ctx context.Context) ([]runtime.Container, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	selector := labels.SelectorFromSet(labels.Set{runtime.LabelManaged: "true", runtime.LabelInstance: k.opts.Instance})
	pods, err := k.client.CoreV1().Pods(k.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, k.apiError("listing pods", err)
	}
	out := make([]runtime.Container, 0, len(pods.Items))
	for _, p := range pods.Items {
		if uid, err := strconv.ParseUint(p.Labels[runtime.LabelUID], 10, 32); err == nil {
			k.own(p.Name, uint32(uid))
		}
		out = append(out, runtime.Container{
			ID: p.Name, Labels: p.Labels, Created: p.CreationTimestamp.Time,
			Running: p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil, Language: p.Labels[runtime.LabelLanguage],
		})
	}
	return out, nil
}

// Image implements runtime.Runtime. The cluster pulls images itself,
// each node from the registry: what sandboxd can tell is the reference.
func (k *Kubernetes) Image(ctx context.Context, ref string) (runtime.Image, error) {
	if k.opts.ImageRegistry == "" {
		return runtime.Image{ID: ref}, nil
	}
	pin, err := k.resolve(ctx, ref)
	return runtime.Image{ID: pin}, err
}

// BuildImage implements runtime.Runtime: a cluster builds nothing.
func (k *Kubernetes) BuildImage(ctx context.Context, b runtime.ImageBuild, progress func(string)) error {
	return errors.New("the kubernetes runtime builds no images: build them with Docker (make images) and push them to the registry (make images-push)")
}

// Close implements runtime.Runtime.
func (k *Kubernetes) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, c := range k.forwards {
		_ = c.Close()
		delete(k.forwards, name)
	}
	return nil
}

func (k *Kubernetes) apiError(what string, err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%w: %s: %v", runtime.ErrUnavailable, what, err)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
