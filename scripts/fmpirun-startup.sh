#!/usr/bin/env bash
# Median wall-clock time of 10 runs of `fmpirun -n 2` on a program that
# joins, fences once and leaves (cmd/fmpirun/testdata/startup), and on the
# smallest fibermpi program (examples/hello: endpoint.Init with shared
# memory, a message round, Finalize).
set -euo pipefail
GO=${GO:-go}
RUNS=${RUNS:-10}
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
$GO build -o "$dir/fmpirun" ./cmd/fmpirun
$GO build -o "$dir/startup" ./cmd/fmpirun/testdata/startup
$GO build -o "$dir/hello" ./examples/hello
for prog in startup hello; do
	times=()
	for _ in $(seq "$RUNS"); do
		start=$(date +%s%N)
		"$dir/fmpirun" -n 2 "$dir/$prog" >/dev/null
		times+=($(( ($(date +%s%N) - start) / 1000 )))
	done
	sorted=($(printf '%s\n' "${times[@]}" | sort -n))
	n=${#sorted[@]}
	if (( n % 2 )); then median=${sorted[n/2]}; else median=$(( (sorted[n/2-1] + sorted[n/2]) / 2 )); fi
	echo "fmpirun -n 2 $prog: median of $n runs: ${median} µs (all: ${sorted[*]})"
done
