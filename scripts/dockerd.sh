#!/usr/bin/env bash
# Makes a Docker engine answer for the docker sandbox tests
# (internal/sandbox/docker). When one already answers on the socket
# (DOCKER_HOST=unix://..., else /var/run/docker.sock) it does nothing.
# Otherwise, as root, it installs Debian's docker.io and busybox-static
# when missing and starts dockerd in the background, with its data under
# $TALON_DOCKERD_ROOT (default /tmp/talon-dockerd), then waits for /_ping.
# Where the default network setup cannot work (no iptables, no bridge
# support), it starts dockerd again with --iptables=false --bridge=none:
# sandboxes then have no network even when granted one.
#
# It exits 0 when an engine answers, 1 with the reason otherwise; the
# tests then fail under CI=true and skip elsewhere. The engine it starts
# keeps running after the tests.
set -euo pipefail

sock=/var/run/docker.sock
if [ -n "${DOCKER_HOST:-}" ]; then
	case "$DOCKER_HOST" in
	unix://*) sock=${DOCKER_HOST#unix://} ;;
	*)
		echo "dockerd.sh: DOCKER_HOST=$DOCKER_HOST: only unix:// sockets are supported" >&2
		exit 1
		;;
	esac
fi

ping() {
	[ -S "$sock" ] && curl -sf --max-time 5 --unix-socket "$sock" http://docker/_ping >/dev/null 2>&1
}

if command -v curl >/dev/null 2>&1 && ping; then
	echo "docker engine answers at $sock"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "dockerd.sh: no Docker engine answers at $sock, and starting one needs root: apt-get install -y docker.io busybox-static, then start dockerd" >&2
	exit 1
fi

missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
if [ ${#missing[@]} -gt 0 ]; then
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "dockerd.sh: missing ${missing[*]} and no apt-get to install them" >&2
		exit 1
	fi
	echo "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# policy-rc.d may refuse to start the service: that is fine, it is
	# started below.
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ping; then
	echo "docker engine answers at $sock"
	exit 0
fi

root=${TALON_DOCKERD_ROOT:-/tmp/talon-dockerd}
mkdir -p "$root"
log=$root/dockerd.log

# A dockerd of an earlier run that no longer answers is stopped first.
if [ -f "$root/dockerd.pid" ]; then
	old=$(cat "$root/dockerd.pid")
	if [ -n "$old" ] && kill -0 "$old" 2>/dev/null; then
		kill "$old" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.2; done
	fi
	rm -f "$root/dockerd.pid"
fi

start() {
	echo "starting dockerd $* (data in $root, log in $log)"
	setsid dockerd --data-root "$root/data" --exec-root "$root/exec" \
		--pidfile "$root/dockerd.pid" -H "unix://$sock" "$@" >"$log" 2>&1 </dev/null &
	pid=$!
	for _ in $(seq 1 120); do
		if ping; then
			echo "docker engine answers at $sock (dockerd pid $pid)"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.5
	done
	kill "$pid" 2>/dev/null || true
	return 1
}

if start; then
	exit 0
fi
echo "dockerd did not come up; its log ends with:" >&2
tail -n 15 "$log" >&2 || true
if start --iptables=false --bridge=none; then
	exit 0
fi
echo "dockerd.sh: dockerd does not start here; the end of $log:" >&2
tail -n 30 "$log" >&2 || true
exit 1
