#!/usr/bin/env bash
# push.sh REGISTRY IMAGE... — puts language images where a Kubernetes
# cluster pulls them: REGISTRY/IMAGE, built from the local IMAGE with the
# supervisor (bin/sandbox-init) at /.sandboxd/init, where the Docker
# runtime bind-mounts it. A pod cannot mount a file of sandboxd's host, so
# the supervisor travels in the image: push again after a new build.
#
#   images/push.sh 127.0.0.1:5000 sandboxd/python:latest sandboxd/node:latest
set -euo pipefail

registry=${1:?usage: $0 REGISTRY IMAGE...}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
init=$here/bin/sandbox-init
[[ -x $init ]] || { echo "push: $init is missing: make build" >&2; exit 1; }

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
install -m 0555 "$init" "$ctx/init"
for image in "$@"; do
	target=$registry/$image
	printf 'FROM %s\nCOPY init /.sandboxd/init\n' "$image" >"$ctx/Dockerfile"
	began=$SECONDS
	docker build -q --network none -t "$target" "$ctx" >/dev/null
	docker push -q "$target" >/dev/null
	echo "push: $target in $((SECONDS - began))s"
done
