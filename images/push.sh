#!/usr/bin/env bash
# push.sh REGISTRY LANGUAGE... — puts languages' images where a Kubernetes
# cluster pulls them, the way `sandboxctl images build` does for a daemon
# whose languages run there: a sandboxd of its own (no warm pods, its own
# socket and state) with these languages on the cluster builds each image
# and pushes REGISTRY/IMAGE with the supervisor in it.
#
#   images/push.sh 127.0.0.1:5000 python node
set -euo pipefail

registry=${1:?usage: $0 REGISTRY LANGUAGE...}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
kubeconfig=${KUBECONFIG:-/var/lib/sandboxd-cluster/admin.kubeconfig}
for b in sandboxd sandboxctl sandbox-init; do
	[[ -x $here/bin/$b ]] || { echo "push: $here/bin/$b is missing: make build" >&2; exit 1; }
done

tmp=$(mktemp -d)
pid=
cleanup() {
	[[ -z $pid ]] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT
{
	printf 'plugin_dir = "%s"\nsupervisor = "%s"\nimages_dir = "%s"\n' "$here/bin/plugins" "$here/bin/sandbox-init" "$here/images"
	printf 'runtime "kubernetes" {\n  kubeconfig = "%s"\n  image_registry = "%s"\n}\n' "$kubeconfig" "$registry"
	for lang in "$@"; do
		printf 'language "%s" {\n  runtime = "kubernetes"\n  pool {\n    min_idle = 0\n  }\n}\n' "$lang"
	done
} >"$tmp/push.hcl"

"$here/bin/sandboxd" --config "$tmp/push.hcl" --socket "$tmp/sandboxd.sock" --state-dir "$tmp/state" 2>"$tmp/sandboxd.log" &
pid=$!
for _ in $(seq 100); do
	[[ -S $tmp/sandboxd.sock ]] && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/sandboxd.log" >&2; exit 1; }
	sleep 0.1
done
began=$SECONDS
"$here/bin/sandboxctl" --socket "$tmp/sandboxd.sock" images build "$@"
echo "push: $* to $registry in $((SECONDS - began))s"
