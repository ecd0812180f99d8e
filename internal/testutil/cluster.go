package testutil

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is the single-node Kubernetes `make cluster` brings up
// (scripts/cluster.sh), as the tests of the Kubernetes runtime use it.
type Cluster struct {
	Kubeconfig string
	Registry   string // where the cluster pulls the language images from
	Namespace  string
	Client     kubernetes.Interface
	// NodeSelector places the pods, e.g. on the node a test stops.
	NodeSelector map[string]string
}

// ClusterImages are the language images the Kubernetes tests run, pushed
// to the cluster's registry by `make cluster-images`.
var ClusterImages = []string{"sandboxd/python:latest"}

// RequireCluster returns the cluster, or skips the test (fails it when
// CI=true) when none answers or its registry lacks an image.
func RequireCluster(t T) *Cluster {
	t.Helper()
	c := &Cluster{Kubeconfig: "/var/lib/sandboxd-cluster/admin.kubeconfig", Registry: "127.0.0.1:5000", Namespace: "sandboxd"}
	if k := os.Getenv("SANDBOXD_KUBECONFIG"); k != "" {
		c.Kubeconfig = k
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		Missing(t, fmt.Sprintf("no cluster (%v): run `make cluster`", err))
		return nil
	}
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{}); err != nil {
		Missing(t, fmt.Sprintf("the cluster of %s does not answer (%v): run `make cluster`", c.Kubeconfig, err))
		return nil
	}
	for _, img := range ClusterImages {
		ref, tag := splitTag(img)
		req, _ := http.NewRequest(http.MethodHead, fmt.Sprintf("http://%s/v2/%s/manifests/%s", c.Registry, ref, tag), nil)
		req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			Missing(t, fmt.Sprintf("%s/%s is not in the cluster's registry: run `make cluster-images`", c.Registry, img))
			return nil
		}
	}
	return c
}

// Runtime is the runtime block of a daemon that uses the cluster.
func (c *Cluster) Runtime() string {
	selector := ""
	for k, v := range c.NodeSelector {
		selector += fmt.Sprintf("%q = %q\n", k, v)
	}
	return fmt.Sprintf(`runtime "kubernetes" {
  kubeconfig     = %q
  namespace      = %q
  image_registry = %q
  node_selector  = {
%s  }
}
`, c.Kubeconfig, c.Namespace, c.Registry, selector)
}

// Pods lists the names of the cluster's pods with label (k=v).
func (c *Cluster) Pods(t T, label string) []string {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(c.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: label})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	var names []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// DeletePod deletes a pod at once, as an operator or an eviction would.
func (c *Cluster) DeletePod(t T, name string) {
	t.Helper()
	zero := int64(0)
	if err := c.Client.CoreV1().Pods(c.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// nodeSockets are the containerd sockets of the nodes make cluster runs,
// by node name.
func nodeSockets() map[string]string {
	sockets := map[string]string{"sandboxd-node": "/run/sandboxd-cluster/containerd/containerd.sock"}
	more, _ := filepath.Glob("/run/sandboxd-cluster/node-*/containerd/containerd.sock")
	for _, sock := range more {
		sockets["sandboxd-"+filepath.Base(filepath.Dir(filepath.Dir(sock)))] = sock
	}
	return sockets
}

// ctrImages runs `ctr images ARGS` against a node's containerd.
func ctrImages(t T, sock string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/var/cache/sandboxd/cluster/bin/ctr", append([]string{"--address", sock, "-n", "k8s.io", "images"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images %s (%s): %v\n%s", strings.Join(args, " "), sock, err, out)
	}
	return string(out)
}

// RemoveNodeImages removes every image of repository (its tags and the
// digests pulls left) from each node's store, as on nodes that never
// pulled one.
func (c *Cluster) RemoveNodeImages(t T, repository string) {
	t.Helper()
	for _, sock := range nodeSockets() {
		refs := []string{"rm", "--sync"}
		for _, ref := range strings.Fields(ctrImages(t, sock, "ls", "-q")) {
			if strings.HasPrefix(ref, repository+":") || strings.HasPrefix(ref, repository+"@") {
				refs = append(refs, ref)
			}
		}
		if len(refs) > 2 {
			ctrImages(t, sock, refs...)
		}
	}
}

// NodesWithImage are the nodes whose store holds ref.
func (c *Cluster) NodesWithImage(t T, ref string) []string {
	t.Helper()
	var nodes []string
	for node, sock := range nodeSockets() {
		if slices.Contains(strings.Fields(ctrImages(t, sock, "ls", "-q")), ref) {
			nodes = append(nodes, node)
		}
	}
	sort.Strings(nodes)
	return nodes
}

// Nodes are the names of the cluster's nodes; with fewer than n, the test
// is skipped (failed when CI=true): `make cluster NODES=2` makes two.
func (c *Cluster) Nodes(t T, n int) []string {
	t.Helper()
	list, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	var names []string
	for _, node := range list.Items {
		names = append(names, node.Name)
	}
	if len(names) < n {
		Missing(t, fmt.Sprintf("the cluster has %d nodes, the test needs %d: run `make cluster NODES=%d`", len(names), n, n))
	}
	return names
}

// Drain cordons node and evicts the pods of the test run on it, as
// `kubectl drain` would; the node is made schedulable again when the test
// ends.
func (c *Cluster) Drain(t T, node string) {
	t.Helper()
	cordon := func(on bool) error {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
		_, err := c.Client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if err := cordon(true); err != nil {
		t.Fatalf("cordoning %s: %v", node, err)
	}
	t.Cleanup(func() { _ = cordon(false) })
	// Until none is left: a pod placed just before the cordon may show up
	// on the node after a first look.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		list, err := c.Client.CoreV1().Pods(c.Namespace).List(context.Background(), metav1.ListOptions{
			LabelSelector: TestLabel, FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			t.Fatalf("listing the pods of %s: %v", node, err)
		}
		if len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods still on %s a minute after it was drained", len(list.Items), node)
		}
		for _, pod := range list.Items {
			if pod.DeletionTimestamp != nil {
				continue
			}
			eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
			if err := c.Client.CoreV1().Pods(c.Namespace).EvictV1(context.Background(), eviction); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("evicting %s: %v", pod.Name, err)
			}
		}
	}
}

// PodNode is the node pod runs on.
func (c *Cluster) PodNode(t T, pod string) string {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(c.Namespace).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod %s: %v", pod, err)
	}
	return p.Spec.NodeName
}

// ServiceAccountKubeconfig applies manifest (examples/kubernetes-rbac.yaml)
// with kubectl and writes, in a test directory, a kubeconfig for the
// service account sandboxd/sandboxd with an hour's token: the cluster as an
// operator who grants sandboxd only what the manifest says would give it.
func (c *Cluster) ServiceAccountKubeconfig(t T, manifest string) string {
	t.Helper()
	apply := exec.Command("/var/cache/sandboxd/cluster/bin/kubectl", "--kubeconfig", c.Kubeconfig, "apply", "-f", manifest)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", manifest, err, out)
	}
	hour := int64(3600)
	tok, err := c.Client.CoreV1().ServiceAccounts("sandboxd").CreateToken(context.Background(), "sandboxd",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for sandboxd/sandboxd: %v", err)
	}
	admin, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	for name, cl := range admin.Clusters {
		cfg.Clusters[name] = cl
		cfg.AuthInfos["sandboxd"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
		cfg.Contexts["sandboxd"] = &clientcmdapi.Context{Cluster: name, AuthInfo: "sandboxd"}
		cfg.CurrentContext = "sandboxd"
	}
	path := filepath.Join(t.TempDir(), "sandboxd.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// removeTestPods deletes every pod of a test run, and its image pulls'
// DaemonSets.
func (c *Cluster) removeTestPods(runID string) {
	zero := int64(0)
	_ = c.Client.AppsV1().DaemonSets(c.Namespace).DeleteCollection(context.Background(),
		metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: TestLabel + "=" + runID})
	_ = c.Client.CoreV1().Pods(c.Namespace).DeleteCollection(context.Background(),
		metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: TestLabel + "=" + runID})
}

func splitTag(img string) (string, string) {
	for i := len(img) - 1; i >= 0 && img[i] != '/'; i-- {
		if img[i] == ':' {
			return img[:i], img[i+1:]
		}
	}
	return img, "latest"
}

// RestartComponent kills one of the cluster's processes (SIGKILL, as a
// crash would: "kube-apiserver", "kubelet", ...), by the pid make cluster
// recorded, if it is that process still, and starts it again with scripts/cluster.sh up, which returns
// once the cluster answers; between runs while it is down.
func (c *Cluster) RestartComponent(t T, name string, between func()) {
	t.Helper()
	pidFile := "/run/sandboxd-cluster/" + name + ".pid"
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// "PID PATH" (see start in scripts/cluster.sh): the process is killed
	// only if it runs PATH still.
	fields := strings.Fields(string(raw))
	pid, err := strconv.Atoi(strings.Join(fields[:min(len(fields), 1)], ""))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); len(fields) < 2 || argv0 != fields[1] {
		t.Fatalf("%s: pid %d runs %q, not what %s records", name, pid, argv0, pidFile)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s (pid %d): %v", name, pid, err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if between != nil {
		between()
	}
	up := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "cluster.sh"), "up")
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("starting %s again: %v\n%s", name, err, out)
	}
}
