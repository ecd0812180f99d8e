#!/usr/bin/env bash
# Makes sure a Docker engine answers on this machine.
#
# If `docker info` already works (local socket or DOCKER_HOST), nothing is
# touched. Otherwise docker.io, debootstrap and runsc (gVisor) are installed
# from Debian's packages when missing, and dockerd is started with the
# network rules this project lives by: no bridge, no iptables, no
# masquerading, and with runsc registered as an OCI runtime. Sandboxes use
# network "none"; nothing here opens a route to a container.
set -euo pipefail

log=${SANDBOXD_DOCKERD_LOG:-/var/log/sandboxd-dockerd.log}
say() { printf 'docker-engine: %s\n' "$*" >&2; }

# The engine's settings file is this project's own. runsc's network stack
# stays off: sandboxes have no network, and bytes that must leave one travel
# over a channel sandboxd owns: the egress proxy's Unix socket, mounted
# into the sandbox, which runsc may open (--host-uds=open) but not create.
# The container's seccomp profile is left to runc: under runsc a program's
# system calls reach gVisor's kernel, not the host's, and sandboxd locks
# each program down with a filter of its own (gVisor's 2022 release
# answered EPERM where the profile says ENOSYS, for clone3, which broke
# every thread start). Experimental features give the checkpoint API, with which a
# hibernating gVisor session keeps its memory (runsc checkpoint/restore).
#
# dockerd runs runsc through a wrapper of ours. containerd pauses a task
# before it checkpoints it, and gVisor's 2022 release could not end a
# paused sandbox: "invalid state transition: paused => stopped". A sandbox
# restored from a checkpoint and checkpointed again is left "paused" with
# nothing behind it, its task can never be deleted, its shim runs for good,
# and the next restore fails ("id already in use"), so a session kept its
# memory through one hibernation only. The wrapper resumes a paused sandbox
# before runsc checkpoints it; runsc stops the sandbox's world itself while
# it saves, and the sandbox exits after the save, so nothing runs between.
conf=/etc/sandboxd/dockerd.json
wrapper=/usr/local/libexec/sandboxd/runsc
write_settings() {
	runsc=$(command -v runsc)
	script="#!/bin/bash
# Written by sandboxd's scripts/docker-engine.sh: runsc, resumed before a checkpoint.
for ((i = 1; i <= \$#; i++)); do
	if [ \"\${!i}\" = checkpoint ]; then
		if $runsc \"\${@:1:i-1}\" state \"\${!#}\" 2>/dev/null | grep -q '\"status\": \"paused\"'; then
			$runsc \"\${@:1:i-1}\" resume \"\${!#}\"
		fi
		break
	fi
done
exec $runsc \"\$@\""
	want="{\"experimental\": true, \"runtimes\": {\"runsc\": {\"path\": \"$wrapper\", \"runtimeArgs\": [\"--network=none\", \"--host-uds=open\"]}}}"
	[ "$(cat "$conf" 2>/dev/null)" != "$want" ] || [ "$(cat "$wrapper" 2>/dev/null)" != "$script" ] || return 1
	mkdir -p "$(dirname "$conf")" "$(dirname "$wrapper")"
	printf '%s\n' "$script" >"$wrapper.new" && chmod 755 "$wrapper.new" && mv "$wrapper.new" "$wrapper"
	printf '%s\n' "$want" >"$conf"
}

# gVisor before 2023 refuses AT_NO_AUTOMOUNT in stat calls, which coreutils
# 9.2 and later pass: ls, stat and find fail in Debian 13's images. Debian
# 12 has a current runsc in its backports (Debian 13 in its release).
runsc_min=20240729
current_runsc() {
	local v
	v=$(runsc --version 2>/dev/null | sed -n 's/^runsc version [^0-9]*\([0-9]\{8\}\).*/\1/p;s/^runsc version 0\.0~\([0-9]\{8\}\).*/\1/p' | head -1)
	[ -n "$v" ] && [ "$v" -ge "$runsc_min" ]
}

if docker info >/dev/null 2>&1; then
	current_runsc || say "runsc is missing or older than $runsc_min: run this script as root with the engine stopped to install a current one; gVisor sandboxes fail until then"
	# The dockerd this script started takes new settings (runtimes are
	# among those it reloads on SIGHUP); any other engine is left alone.
	pid=$(cat /var/run/sandboxd-dockerd.pid 2>/dev/null || true)
	if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && command -v runsc >/dev/null && write_settings; then
		kill -HUP "$pid"
		say "sent dockerd the new settings in $conf"
	fi
	say "engine answers: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
	if [ "$(docker version --format '{{.Server.Experimental}}')" != true ]; then
		say "its experimental features are off (they take a restart): hibernated gVisor sessions keep their files, not their memory"
	fi
	exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1 || ! current_runsc; then
	[ "$(id -u)" = 0 ] || { say "docker.io or a current runsc is not installed; run this script as root to install them"; exit 1; }
	say "installing docker.io, debootstrap and runsc from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	runsc_from=()
	if [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ]; then
		printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			>/etc/apt/sources.list.d/sandboxd-bookworm-backports.sources
		runsc_from=(-t bookworm-backports)
	fi
	apt-get update -qq
	# policy-rc.d keeps the package from trying to start a service manager we do not have.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
	apt-get install -y -qq --no-install-recommends docker.io debootstrap ca-certificates >/dev/null
	apt-get install -y -qq --no-install-recommends "${runsc_from[@]}" runsc >/dev/null
	rm -f /usr/sbin/policy-rc.d
	current_runsc || { say "runsc $(runsc --version 2>/dev/null | head -1) is older than $runsc_min"; exit 1; }
fi

# Each sandbox holds about 30 threads (its containerd shim, its supervisor,
# its interpreters), and every thread takes a pid: a host left at the
# kernel's old default of 32768 pids runs out near a thousand sessions, and
# then no program on it can start a thread. systemd raises it to 4194304
# where it runs; here, nothing does.
pid_max_wanted=4194304
if [ "$(cat /proc/sys/kernel/pid_max)" -lt "$pid_max_wanted" ]; then
	if echo "$pid_max_wanted" >/proc/sys/kernel/pid_max 2>/dev/null; then
		say "kernel.pid_max raised to $pid_max_wanted (as systemd sets it)"
	else
		say "kernel.pid_max is $(cat /proc/sys/kernel/pid_max), and could not be raised: about 1000 sessions at most"
	fi
fi

# A dockerd that is still starting or shutting down owns the pid file: wait
# for it. Files left by one that died (a machine's previous session) go.
running_dockerd() {
	local pid
	pid=$(cat /var/run/docker.pid 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]
}
for _ in $(seq 1 60); do
	running_dockerd || break
	if docker info >/dev/null 2>&1; then
		say "engine answers"
		exit 0
	fi
	sleep 0.5
done
if running_dockerd; then
	say "dockerd $(cat /var/run/docker.pid) runs but does not answer; stop it, then run this again"
	exit 1
fi
rm -f /var/run/docker.pid /var/run/docker.sock
write_settings || true
say "starting dockerd (settings: $conf, log: $log)"
nohup dockerd --config-file "$conf" --bridge=none --iptables=false --ip-masq=false >>"$log" 2>&1 </dev/null &
echo $! >/var/run/sandboxd-dockerd.pid
for _ in $(seq 1 60); do
	if docker info >/dev/null 2>&1; then
		say "engine up: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
		exit 0
	fi
	sleep 0.5
done
say "dockerd did not answer within 30s; last lines of $log:"
tail -n 20 "$log" >&2
exit 1
