#!/usr/bin/env bash
# Runs every test of the repository. Works on a fresh machine: it installs
# what the tests need first (today: only the Go toolchain, which the machine
# has). Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
	echo "test.sh: Go 1.26 is required (https://go.dev/dl/); go is not on PATH" >&2
	exit 1
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 "$@" ./...
