#!/usr/bin/env bash
# Builds sandboxd's images offline: the Debian bases their Dockerfiles name,
# from debootstrap and imported with `docker import`, then one image per
# language directory under images/ (FROM its base through the BASE build
# argument, so the same Dockerfile builds on an official image elsewhere).
#
# Usage: [JOBS=2] images/build.sh [LANGUAGE...]   (default: every language directory)
# Idempotent: the base is kept once made, and language images are rebuilt
# from Docker's layer cache (a second or so each when nothing changed), so
# an edited Dockerfile always takes effect. FORCE=1 rebuilds everything.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What builds trust for HTTPS: the host's bundle (with a TLS-inspecting
# proxy's CA, where there is one), or BUILD_CA_FILE.
build_ca=${BUILD_CA_FILE:-/etc/ssl/certs/ca-certificates.crt}
[ -r "$build_ca" ] || build_ca=/dev/null
say() { printf 'images: %s\n' "$*" >&2; }
# What every image has for agents working on projects, beyond minbase. A
# base made with another list is made again (its label says which).
tools=ca-certificates,curl,git,jq,less,procps,vim-tiny,wget

# base_of LANG: the image LANG's Dockerfile builds FROM: the default of its
# BASE argument (sandboxd/base:trixie for every shipped one; a Dockerfile
# may name another Debian release), or SANDBOXD_BASE_IMAGE for all.
base_of() {
	[ -n "${SANDBOXD_BASE_IMAGE:-}" ] && { echo "$SANDBOXD_BASE_IMAGE"; return; }
	sed -n 's/^ARG BASE=//p' "$here/$1/Dockerfile" | head -n 1
}

# make_base IMAGE makes sandboxd/base:SUITE with debootstrap, once: any
# other base is the engine's to pull.
make_base() {
	local base=$1 suite rootfs
	case "$base" in sandboxd/base:*) suite=${base#sandboxd/base:} ;; *) return 0 ;; esac
	if [ "${FORCE:-0}" != 1 ] &&
		[ "$(docker image inspect -f '{{index .Config.Labels "io.sandboxd.base.tools"}}' "$base" 2>/dev/null)" = "$tools" ]; then
		say "$base present"
		return 0
	fi
	rootfs=$(mktemp -d /var/tmp/sandboxd-rootfs.XXXXXX)
	say "debootstrap $suite (minbase, $tools) into $rootfs ..."
	if ! debootstrap --variant=minbase --include="$tools" "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1; then
		tail -n 20 "$rootfs.log" >&2
		rm -rf "$rootfs" "$rootfs.log"
		return 1
	fi
	rm -f "$rootfs.log"
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	# E2B's clients (internal/e2b) find their home, /home/user, in the
	# workspace.
	ln -s /workspace "$rootfs/home/user"
	say "importing $base"
	tar -C "$rootfs" -c . | docker import --change "LABEL io.sandboxd.base.tools=$tools" - "$base" >/dev/null
	rm -rf "$rootfs"
}

langs=("$@")
if [ ${#langs[@]} -eq 0 ]; then
	for d in "$here"/*/; do [ -f "$d/Dockerfile" ] && langs+=("$(basename "$d")"); done
fi
for lang in "${langs[@]}"; do
	[ -f "$here/$lang/Dockerfile" ] || { say "no images/$lang/Dockerfile"; exit 1; }
done
for base in $(for lang in "${langs[@]}"; do base_of "$lang"; done | sort -u); do
	make_base "$base"
done

# build LANG builds sandboxd/LANG:latest; a failed build fails even when
# an older image of that tag exists.
build() {
	local lang=$1 tag="sandboxd/$1:latest" base start log context nocache=()
	base=$(base_of "$lang")
	say "building $tag ..."
	start=$(date +%s)
	[ "${FORCE:-0}" = 1 ] && nocache=(--no-cache)
	log=$(mktemp)
	# The context holds, beside the Dockerfile, the CA bundle the build
	# trusts for HTTPS (as sandboxd's own builds give it: images/images.go).
	context=$(mktemp -d)
	cp -a "$here/$lang/." "$context/"
	cp "$build_ca" "$context/build-ca.crt"
	if ! docker build "${nocache[@]}" --network host --build-arg "BASE=$base" -t "$tag" "$context" >"$log" 2>&1; then
		sed 's/^/  /' "$log" | tail -n 30 >&2
		rm -rf "$log" "$context"
		say "building $tag failed; rerun: docker build --network host --build-arg BASE=$base images/$lang"
		return 1
	fi
	sed 's/^/  /' "$log" | grep -E '^  (Step|Successfully)' >&2 || true
	rm -rf "$log" "$context"
	say "$tag built in $(( $(date +%s) - start ))s"
}

# Two at a time (JOBS): a build waits on the network and dpkg as much as
# on a core.
jobs=${JOBS:-2} running=0 failed=0
for lang in "${langs[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n || failed=1
		running=$((running - 1))
	fi
	build "$lang" &
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
	wait -n || failed=1
	running=$((running - 1))
done
exit "$failed"
