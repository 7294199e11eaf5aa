#!/usr/bin/env bash
# Runs every fuzz target of the repository for a bounded time each: the
# targets are whatever `go test -list '^Fuzz'` finds, so a new Fuzz function
# is fuzzed without touching this script. (`go test ./...` already runs each
# target's seed corpus, f.Add and testdata/fuzz, as ordinary tests.)
#
#   FUZZTIME          time per target (go test -fuzztime), default 5s
#   FUZZMINIMIZETIME  time to minimise a new input (-fuzzminimizetime), default 1s
#
# Extra arguments are package patterns to limit the run (default ./...).
# A failing input is written to <package>/testdata/fuzz/<Target>/<hash>;
# the script prints that path, the input and the command that re-runs it,
# goes on with the other targets and exits 1 at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-5s}
minimize=${FUZZMINIMIZETIME:-1s}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(./...)

# Only packages whose tests declare a Fuzz function are listed: listing
# runs every test binary, and some (e2e) build talon first in TestMain.
mapfile -t pkgs < <(go list -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' "${patterns[@]}" |
	while read -r pkg dir files; do
		for f in $files; do
			if grep -q '^func Fuzz' "$dir/$f"; then
				echo "$pkg"
				break
			fi
		done
	done)
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "fuzz.sh: no fuzz targets in ${patterns[*]}" >&2
	exit 1
fi

# "pkg Target" pairs from `go test -list`, which prints a package's names
# before its "ok <pkg>" line.
mapfile -t targets < <(go test -list '^Fuzz' "${pkgs[@]}" | awk '
	/^Fuzz/ { names[n++] = $1; next }
	/^ok[ \t]/ { for (i = 0; i < n; i++) print $2, names[i]; n = 0 }')
echo "fuzz.sh: ${#targets[@]} targets, $fuzztime each"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
start=$SECONDS
for t in "${targets[@]}"; do
	pkg=${t% *} name=${t#* }
	echo "== $name ($pkg)"
	if go test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" >"$log" 2>&1; then
		tail -n 1 "$log"
		continue
	fi
	cat "$log"
	failed+=("$name ($pkg)")
	dir=$(go list -f '{{.Dir}}' "$pkg")
	rel=${dir#"$PWD"/}
	input=$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | tail -n 1)
	if [ -n "$input" ]; then
		echo "fuzz.sh: $name failed; input: $rel/$input"
		head -c 4096 "$dir/$input"
		echo
		echo "fuzz.sh: re-run it with: go test -run '^$name/${input##*/}\$' ./$rel"
	else
		echo "fuzz.sh: $name failed without a saved input (see the output above)"
	fi
done
echo "fuzz.sh: $((SECONDS - start))s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz.sh: FAILED: ${failed[*]}" >&2
	exit 1
fi
