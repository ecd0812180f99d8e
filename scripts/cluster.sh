#!/usr/bin/env bash
# cluster.sh — a Kubernetes on this machine, for sandboxd's Kubernetes
# runtime and its tests (`make cluster`, `make cluster-down`).
#
#   scripts/cluster.sh up     build what is missing, start, print KUBECONFIG=
#   scripts/cluster.sh down   stop it and remove what it made
#   scripts/cluster.sh pull IMAGE...   the nodes pull images ahead of pods
#
# NODES=2 adds a second node: a second kubelet and containerd on this
# machine (own root dirs, socket, ports, cgroup root, pod logs and name),
# so that sandboxes spread over two nodes and one can be drained under
# them.
#
# Nothing is downloaded but packages: Kubernetes, etcd and containerd are
# built with the Go toolchain from the Go module proxy (pinned by the
# modules under scripts/cluster/build, cached under $CACHE so a second `up`
# takes seconds), and so is runc (1.2 or later, for pods in user
# namespaces of their own; Debian 12's is 1.1); the CNI plugins, the
# registry, libseccomp and openssl come from Debian; the pause image is
# built here from scripts/cluster/pause.c.
#
# Everything listens on 127.0.0.1 only: etcd, the API server, the
# controller manager, the scheduler, the kubelet, containerd's streaming
# server and the image registry. Pods get a loopback-only network (the
# CNI "loopback" plugin and nothing else): no pod has an address anyone
# can reach, and none can send anywhere. The cluster's service range
# exists only as API objects: no proxy runs and nothing routes it.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/cluster
CACHE=${SANDBOXD_CLUSTER_CACHE:-/var/cache/sandboxd/cluster}
DIR=${SANDBOXD_CLUSTER_DIR:-/var/lib/sandboxd-cluster}
RUN=/run/sandboxd-cluster
LOGS=/var/log/sandboxd-cluster
BIN=$CACHE/bin
PKI=$DIR/pki
NODE=sandboxd-node
NODES=${NODES:-1}
REGISTRY=127.0.0.1:5000
PAUSE=$REGISTRY/sandboxd/pause:3.10
KUBECONFIG_OUT=$DIR/admin.kubeconfig

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# --- build ----------------------------------------------------------------

# build MODULE UPSTREAM [VERSION_VAR...] : builds the tools of
# scripts/cluster/build/MODULE into $BIN, unless they were built from the
# same go.mod, go.sum and flags. Each VERSION_VAR (a package's variable,
# as -X takes it) is set to the version of UPSTREAM the module pins, which
# is what the binaries report (a kubelet's version is the node's).
build() {
	local module=$1 upstream=$2
	shift 2
	local dir=$SRC/build/$module ldflags="-s -w" stamp version
	version=$(cd "$dir" && go list -m -f '{{.Version}}' "$upstream")
	for var in "$@"; do
		ldflags+=" -X $var=$version"
	done
	stamp=$(cat "$dir/go.mod" "$dir/go.sum" <(echo "${TAGS:-} $ldflags") | sha256sum | cut -c1-16)
	if [[ $(cat "$BIN/.$module" 2>/dev/null) == "$stamp" ]]; then
		return
	fi
	log "building $module (once; cached in $BIN)"
	local began=$SECONDS
	mkdir -p "$BIN"
	(cd "$dir" && CGO_ENABLED=${CGO:-1} go build -trimpath -tags "${TAGS:-}" -ldflags "$ldflags" -o "$BIN/" tool)
	if [[ -f $BIN/server ]]; then
		mv "$BIN/server" "$BIN/etcd" # go.etcd.io/etcd/server/v3
	fi
	echo "$stamp" >"$BIN/.$module"
	log "built $module in $((SECONDS - began))s"
}

packages() {
	local missing=()
	[[ -f /usr/include/seccomp.h ]] || missing+=(libseccomp-dev)
	command -v pkg-config >/dev/null || missing+=(pkg-config)
	[[ -x /usr/lib/cni/loopback ]] || missing+=(containernetworking-plugins)
	command -v docker-registry >/dev/null || missing+=(docker-registry)
	command -v openssl >/dev/null || missing+=(openssl)
	command -v gcc >/dev/null || missing+=(gcc libc6-dev)
	if ((${#missing[@]})); then
		log "installing ${missing[*]}"
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	# Debian's package starts its own registry on :5000 (all addresses):
	# this cluster runs one of its own on loopback instead.
	if [[ -f /etc/init.d/docker-registry ]] && pgrep -x docker-registry -u docker-registry >/dev/null 2>&1; then
		/etc/init.d/docker-registry stop >/dev/null 2>&1 || true
	fi
}

# --- certificates ---------------------------------------------------------

# cert NAME CN O SANS : a key and a certificate signed by the cluster's CA.
cert() {
	local name=$1 cn=$2 org=$3 sans=$4
	[[ -f $PKI/$name.crt ]] && return
	local subj="/CN=$cn"
	[[ -n $org ]] && subj="/O=$org$subj"
	openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
	local ext="keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth"
	[[ -n $sans ]] && ext+=$'\n'"subjectAltName=$sans"
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 3650 -out "$PKI/$name.crt" -extfile <(echo "$ext") 2>/dev/null
	rm -f "$PKI/$name.csr"
}

certificates() {
	mkdir -p "$PKI"
	chmod 700 "$PKI"
	if [[ ! -f $PKI/ca.crt ]]; then
		openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -subj "/CN=sandboxd-cluster-ca" \
			-days 3650 -out "$PKI/ca.crt" 2>/dev/null
	fi
	local local_sans="IP:127.0.0.1,DNS:localhost"
	cert apiserver kube-apiserver "" "$local_sans,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1"
	cert apiserver-kubelet kube-apiserver-kubelet-client system:masters ""
	cert kubelet "system:node:$NODE" system:nodes "$local_sans,DNS:$NODE"
	for ((n = 2; n <= NODES; n++)); do
		cert "kubelet-$n" "system:node:$NODE-$n" system:nodes "$local_sans,DNS:$NODE-$n"
	done
	cert controller-manager system:kube-controller-manager "" ""
	cert scheduler system:kube-scheduler "" ""
	cert admin sandboxd-admin system:masters ""
	if [[ ! -f $PKI/sa.key ]]; then
		openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
		openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	fi
}

# kubeconfig NAME CERT : a kubeconfig for the API server with CERT's key.
kubeconfig() {
	local out=$DIR/$1.kubeconfig cert=$2
	cat >"$out" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandboxd
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$cert.crt")
    client-key-data: $(base64 -w0 "$PKI/$cert.key")
contexts:
- name: sandboxd
  context: {cluster: sandboxd, user: $1}
current-context: sandboxd
EOF
	chmod 600 "$out"
}

# --- processes ------------------------------------------------------------

# start NAME CMD... : starts CMD in the background, logging to
# $LOGS/NAME.log, its pid and the path of the program it runs in
# $RUN/NAME.pid (past an `env VAR=...` in front, which execs it); nothing
# if it runs already.
start() {
	local name=$1 prog=$2
	shift
	if running "$name"; then
		return
	fi
	if [[ $prog == env ]]; then
		for prog in "${@:2}"; do
			[[ $prog == *=* ]] || break
		done
	fi
	"$@" >>"$LOGS/$name.log" 2>&1 &
	echo "$! $prog" >"$RUN/$name.pid"
}

# ours NAME : prints the pid $RUN/NAME.pid records if that process runs
# still, and is what we started: a pid file outlives its process (a
# machine that restarted without emptying /run), and its number may be
# another program's by now. A file with no path (written before paths
# were) is taken for a process whose command line names NAME's program.
ours() {
	local pid cmd argv
	read -r pid cmd <"$RUN/$1.pid" 2>/dev/null || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	argv=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	if [[ -n $cmd ]]; then
		[[ ${argv%% *} == "$cmd" ]] || return 1
	else
		[[ $argv == *"${1%-[0-9]*}"* ]] || return 1
	fi
	echo "$pid"
}

running() {
	ours "$1" >/dev/null
}

# await WHAT SECONDS CMD... : polls CMD until it succeeds.
await() {
	local what=$1 limit=$2
	shift 2
	local deadline=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS > deadline)); then
			die "$what did not come up in ${limit}s; its log is under $LOGS"
		fi
		sleep 0.5
	done
}

stop() {
	local name=$1 pid
	if pid=$(ours "$name"); then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$RUN/$name.pid"
}

# --- the parts ------------------------------------------------------------

registry() {
	mkdir -p "$DIR/registry"
	cat >"$DIR/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $DIR/registry}
  delete: {enabled: true}
http:
  addr: $REGISTRY
EOF
	start registry docker-registry serve "$DIR/registry.yml"
	await "the image registry" 30 curl -sf "http://$REGISTRY/v2/"
}

pause_image() {
	if curl -sf "http://$REGISTRY/v2/sandboxd/pause/manifests/3.10" -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' >/dev/null; then
		return
	fi
	local ctx
	ctx=$(mktemp -d)
	gcc -static -Os -s -o "$ctx/pause" "$SRC/pause.c"
	printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
	docker build -q --network none -t "$PAUSE" "$ctx" >/dev/null
	docker push -q "$PAUSE" >/dev/null
	rm -rf "$ctx"
}

# node N : the names of node N's parts (node 1's as they were before
# there was a second): NODE_NAME, NODE_DIR and NODE_RUN (its dirs),
# NODE_SOCK (its containerd), NODE_SUFFIX (of its processes' names) and
# NODE_PORT (its kubelet's; healthz two below).
node() {
	if (($1 == 1)); then
		NODE_NAME=$NODE NODE_DIR=$DIR NODE_RUN=$RUN NODE_SUFFIX="" NODE_PORT=10250
	else
		NODE_NAME=$NODE-$1 NODE_DIR=$DIR/node-$1 NODE_RUN=$RUN/node-$1 NODE_SUFFIX=-$1 NODE_PORT=$((10250 + 100 * ($1 - 1)))
	fi
	NODE_SOCK=$NODE_RUN/containerd/containerd.sock
}

containerd_up() {
	node "$1"
	mkdir -p "$NODE_RUN/containerd" "$NODE_DIR/containerd" "$DIR/cni" "$DIR/certs.d/$REGISTRY"
	cat >"$DIR/cni/10-loopback.conflist" <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "loopback-only",
  "plugins": [{"type": "loopback"}, {"type": "sandboxd-nonet"}]
}
EOF
	cat >"$DIR/certs.d/$REGISTRY/hosts.toml" <<EOF
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
	cat >"$NODE_DIR/containerd.toml" <<EOF
version = 3
root = "$NODE_DIR/containerd"
state = "$NODE_RUN/containerd"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$NODE_SOCK"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$DIR/certs.d"

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  # The kubelet asks for negative OOM scores (-998 for a pod's sandbox),
  # which need CAP_SYS_RESOURCE, which these machines do not give even to
  # root: pods keep containerd's own score, as Docker's containers do.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni", "$SRC/cni"]
    conf_dir = "$DIR/cni"
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "${RUNC:-$BIN/runc}"
        SystemdCgroup = false
        Root = "$NODE_RUN/runc"
EOF
	# Its own shim first in PATH: Docker's containerd has an older one.
	start "containerd$NODE_SUFFIX" env PATH="$BIN:$PATH" "$BIN/containerd" --config "$NODE_DIR/containerd.toml"
	await "containerd$NODE_SUFFIX" 30 test -S "$NODE_SOCK"
}

etcd_up() {
	start etcd "$BIN/etcd" --name sandboxd --data-dir "$DIR/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster sandboxd=http://127.0.0.1:2380 --listen-metrics-urls "" \
		--quota-backend-bytes $((1 << 30)) --log-level warn
	await etcd 30 curl -sf http://127.0.0.1:2379/health
}

apiserver_up() {
	start kube-apiserver "$BIN/kube-apiserver" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port 6443 \
		--etcd-servers http://127.0.0.1:2379 \
		--service-cluster-ip-range 10.96.0.0/24 --endpoint-reconciler-type none \
		--client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
		--kubelet-client-certificate "$PKI/apiserver-kubelet.crt" --kubelet-client-key "$PKI/apiserver-kubelet.key" \
		--kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
		--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
		--service-account-issuer https://127.0.0.1:6443 \
		--authorization-mode Node,RBAC --allow-privileged=false --anonymous-auth=false \
		--profiling=false --v=1
	await "the API server" 90 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" https://127.0.0.1:6443/readyz
}

controllers_up() {
	start kube-controller-manager "$BIN/kube-controller-manager" \
		--kubeconfig "$DIR/controller-manager.kubeconfig" --bind-address 127.0.0.1 --leader-elect=false \
		--use-service-account-credentials \
		--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
		--cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
		--controllers '*,-nodeipam,-service-lb-controller,-route,-cloud-node-lifecycle' \
		--profiling=false --v=1
	start kube-scheduler "$BIN/kube-scheduler" \
		--kubeconfig "$DIR/scheduler.kubeconfig" --bind-address 127.0.0.1 --leader-elect=false \
		--profiling=false --v=1
}

kubelet_up() {
	node "$1"
	mkdir -p "$NODE_DIR/kubelet/seccomp"
	# The sandboxes' seccomp profile, as Localhost profile "sandboxd.json".
	(cd "$HERE/.." && go run ./cmd/sandboxd -seccomp-profile) >"$NODE_DIR/kubelet/seccomp/sandboxd.json"
	local cgroup_root=/ logs=/var/log/pods
	if (($1 > 1)); then
		# Its pods' cgroups and logs apart from the first node's, which
		# would otherwise take them for orphans of its own.
		cgroup_root=/$NODE_NAME logs=$NODE_DIR/pod-logs
		mkdir -p "$logs"
		for hierarchy in /sys/fs/cgroup/*/; do
			[[ -L ${hierarchy%/} ]] || mkdir -p "$hierarchy$NODE_NAME"
		done
	fi
	cat >"$NODE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $NODE_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((NODE_PORT - 2))
cgroupRoot: $cgroup_root
podLogsDir: $logs
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
tlsCertFile: $PKI/kubelet$NODE_SUFFIX.crt
tlsPrivateKeyFile: $PKI/kubelet$NODE_SUFFIX.key
containerRuntimeEndpoint: unix://$NODE_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podPidsLimit: 4096
maxPods: 250
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
enableDebuggingHandlers: true
EOF
	start "kubelet$NODE_SUFFIX" "$BIN/kubelet" --config "$NODE_DIR/kubelet.yaml" --kubeconfig "$DIR/kubelet$NODE_SUFFIX.kubeconfig" \
		--root-dir "$NODE_DIR/kubelet" --hostname-override "$NODE_NAME" --node-ip 127.0.0.1 --v=1
}

# node_register N : waits for node N to register, gives it its address,
# and waits until it is Ready.
node_register() {
	node "$1"
	await "the node $NODE_NAME to register" 120 kubectl get node "$NODE_NAME"
	# A kubelet refuses a loopback node IP and then reports no address at
	# all, and the API server reaches a kubelet (exec, logs) only at one
	# of its node's addresses: 127.0.0.1 is given here, and the kubelet,
	# whose own address setter fails, leaves it as it is.
	kubectl patch node "$NODE_NAME" --subresource=status --type=merge \
		-p '{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"},{"type":"Hostname","address":"'"$NODE_NAME"'"}]}}' >/dev/null
	await "the node $NODE_NAME" 120 node_ready "$NODE_NAME"
}

kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_OUT" "$@"; }

node_ready() {
	kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True
}

up() {
	[[ $(id -u) == 0 ]] || die "run as root: it starts containerd and a kubelet"
	docker version >/dev/null 2>&1 || die "needs the Docker engine for the registry's images: make engine"
	packages
	build kubernetes k8s.io/kubernetes k8s.io/component-base/version.gitVersion k8s.io/client-go/pkg/version.gitVersion
	build etcd go.etcd.io/etcd/server/v3
	CGO=0 TAGS=no_btrfs,no_devmapper,no_zfs build containerd github.com/containerd/containerd/v2 github.com/containerd/containerd/v2/version.Version
	TAGS=seccomp,urfave_cli_no_docs build runc github.com/opencontainers/runc main.version
	mkdir -p "$DIR" "$RUN" "$LOGS"
	certificates
	kubeconfig admin admin
	kubeconfig controller-manager controller-manager
	kubeconfig scheduler scheduler
	kubeconfig kubelet kubelet
	for ((n = 2; n <= NODES; n++)); do
		kubeconfig "kubelet-$n" "kubelet-$n"
	done
	registry
	pause_image
	for ((n = 1; n <= NODES; n++)); do
		containerd_up "$n"
	done
	etcd_up
	apiserver_up
	controllers_up
	for ((n = 1; n <= NODES; n++)); do
		kubelet_up "$n"
	done
	for ((n = 1; n <= NODES; n++)); do
		node_register "$n"
	done
	# The namespace as sandboxd's example sets it up: Pod Security
	# "restricted", a default-deny NetworkPolicy, the service account.
	kubectl apply -f "$HERE/../examples/kubernetes-rbac.yaml" >/dev/null
	await "the namespace's service account" 60 kubectl -n sandboxd get serviceaccount default
	log "up: logs under $LOGS; stop it with make cluster-down"
	echo "KUBECONFIG=$KUBECONFIG_OUT"
}

# nodes : the numbers of the nodes that were started (by their
# containerds' pid files).
nodes() {
	local f n
	for f in "$RUN"/containerd*.pid; do
		[[ -e $f ]] || continue
		n=${f#"$RUN"/containerd}
		n=${n%.pid}
		n=${n#-}
		echo "${n:-1}"
	done
}

down() {
	local n started
	started=$(nodes)
	# Pods first, while the kubelets can still end them; then the parts.
	if running kubelet && running kube-apiserver; then
		kubectl delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
	fi
	for n in $started; do
		node "$n"
		stop "kubelet$NODE_SUFFIX"
	done
	for name in kube-scheduler kube-controller-manager kube-apiserver etcd; do
		stop "$name"
	done
	# The pods' containers and their shims, through containerd itself.
	for n in $started; do
		node "$n"
		local ctr=("$BIN/ctr" --address "$NODE_SOCK" -n k8s.io)
		for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
			"${ctr[@]}" tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
		done
		sleep 1
		for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
			"${ctr[@]}" tasks delete -f "$task" >/dev/null 2>&1 || true
		done
		stop "containerd$NODE_SUFFIX"
		# A shim whose task went before it did waits, with parent 1, for
		# a containerd that is gone: found by the node's socket in its
		# arguments, ended by PID.
		local proc
		for proc in /proc/[0-9]*; do
			if tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -qF -- "-address $NODE_SOCK "; then
				kill -9 "${proc#/proc/}" 2>/dev/null || true
			fi
		done
		if ((n > 1)); then
			for hierarchy in /sys/fs/cgroup/*/; do
				[[ -L ${hierarchy%/} ]] || find "$hierarchy$NODE_NAME" -depth -type d -exec rmdir {} + 2>/dev/null || true
			done
		fi
	done
	stop registry
	# What the kubelets and containerds mounted under the cluster's dirs.
	if [[ -d $DIR ]]; then
		{ grep -E " ($DIR|$RUN)/" /proc/mounts || true; } | cut -d' ' -f2 | sort -r | while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done
	fi
	rm -rf "$DIR" "$RUN" "$LOGS"
	log "down: removed $DIR, $RUN and $LOGS (the builds stay in $CACHE)"
}

# pull IMAGE... : every node pulls images from the registry ahead of the
# first pod that needs them.
pull() {
	local n
	for n in $(nodes); do
		node "$n"
		for image in "$@"; do
			"$BIN/ctr" --address "$NODE_SOCK" -n k8s.io images pull --hosts-dir "$DIR/certs.d" "$image" >/dev/null
			log "$NODE_NAME pulled $image"
		done
	done
}

case ${1:-} in
up) up ;;
down) down ;;
pull)
	shift
	pull "$@"
	;;
*) die "usage: $0 up|down|pull IMAGE..." ;;
esac
