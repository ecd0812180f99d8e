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
# What every image has for agents working on projects, beyond minbase,
# and the archives its apt reads beside the release's own: its updates and
# Debian's security archive. A base made otherwise is made again (its
# label says how it was made).
tools=ca-certificates,curl,git,jq,less,procps,vim-tiny,wget
security=${DEBIAN_SECURITY_MIRROR:-http://security.debian.org/debian-security}
recipe="$tools+updates+security"

# base_of LANG: the image LANG's Dockerfile builds FROM: the default of its
# BASE argument (sandboxd/base:trixie for every shipped one; a Dockerfile
# may name another Debian release), or SANDBOXD_BASE_IMAGE for all.
base_of() {
	[ -n "${SANDBOXD_BASE_IMAGE:-}" ] && { echo "$SANDBOXD_BASE_IMAGE"; return; }
	local base
	base=$(sed -n 's/^ARG BASE=//p' "$here/$1/Dockerfile" | head -n 1)
	[ -n "$base" ] || { say "images/$1/Dockerfile has no ARG BASE=IMAGE line naming its base"; return 1; }
	echo "$base"
}

# make_base IMAGE makes sandboxd/base:SUITE with debootstrap, once: any
# other base is the engine's to pull.
make_base() {
	local base=$1 suite
	case "$base" in sandboxd/base:*) suite=${base#sandboxd/base:} ;; *) return 0 ;; esac
	if [ "${FORCE:-0}" != 1 ] &&
		[ "$(docker image inspect -f '{{index .Config.Labels "io.sandboxd.base.recipe"}}' "$base" 2>/dev/null)" = "$recipe" ]; then
		say "$base present"
		return 0
	fi
	rootfs=$(mktemp -d /var/tmp/sandboxd-rootfs.XXXXXX) # global: the trap runs after the function
	trap 'rm -rf "$rootfs" "$rootfs.log"' EXIT
	say "debootstrap $suite (minbase, $tools) into $rootfs ..."
	debootstrap --variant=minbase --include="$tools" "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
		{ tail -n 20 "$rootfs.log" >&2; return 1; }
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
		"$mirror" "$suite" "$mirror" "$suite" "$security" "$suite" >"$rootfs/etc/apt/sources.list"
	# E2B's clients (internal/e2b) find their home, /home/user, in the
	# workspace.
	ln -s /workspace "$rootfs/home/user"
	say "importing $base"
	tar -C "$rootfs" -c . | docker import --change "LABEL io.sandboxd.base.recipe=$recipe" - "$base" >/dev/null
	rm -rf "$rootfs" "$rootfs.log"
	trap - EXIT
}

langs=("$@")
if [ ${#langs[@]} -eq 0 ]; then
	for d in "$here"/*/; do [ -f "$d/Dockerfile" ] && langs+=("$(basename "$d")"); done
fi
for lang in "${langs[@]}"; do
	[ -f "$here/$lang/Dockerfile" ] || { say "no images/$lang/Dockerfile"; exit 1; }
done
bases=$(for lang in "${langs[@]}"; do base_of "$lang" || exit 1; done | sort -u) || exit 1
for base in $bases; do
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
		say "building $tag failed; rerun: images/build.sh $lang"
		return 1
	fi
	sed 's/^/  /' "$log" | grep -E '^  (Step|Successfully)' >&2 || true
	rm -rf "$log" "$context"
	say "$tag built in $(( $(date +%s) - start ))s"
}

# builds_on LANG: whether LANG's Dockerfile builds on another language's
# image (an ARG naming sandboxd/NAME:latest, as code-interpreter's names
# python's and node's): such images wait for the others.
builds_on() { grep -Eq '^ARG [A-Z_]+=sandboxd/[a-z0-9]+:latest' "$here/$1/Dockerfile"; }

# build_all LANG...: two at a time (JOBS): a build waits on the network and
# dpkg as much as on a core.
jobs=${JOBS:-2} failed=0
build_all() {
	local running=0 lang
	for lang in "$@"; do
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
}
first=() later=()
for lang in "${langs[@]}"; do
	if builds_on "$lang"; then later+=("$lang"); else first+=("$lang"); fi
done
build_all "${first[@]}"
[ "$failed" = 0 ] && build_all "${later[@]}"
exit "$failed"
