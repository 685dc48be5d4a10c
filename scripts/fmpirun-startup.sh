#!/usr/bin/env bash
# Median wall-clock time of 10 runs of `fmpirun -n 2` on a program that
# joins, fences once and leaves (cmd/fmpirun/testdata/startup).
set -euo pipefail
GO=${GO:-go}
RUNS=${RUNS:-10}
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
$GO build -o "$dir/fmpirun" ./cmd/fmpirun
$GO build -o "$dir/startup" ./cmd/fmpirun/testdata/startup
times=()
for _ in $(seq "$RUNS"); do
	start=$(date +%s%N)
	"$dir/fmpirun" -n 2 "$dir/startup"
	times+=($(( ($(date +%s%N) - start) / 1000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
n=${#sorted[@]}
if (( n % 2 )); then median=${sorted[n/2]}; else median=$(( (sorted[n/2-1] + sorted[n/2]) / 2 )); fi
echo "fmpirun -n 2 startup: median of $n runs: ${median} µs (all: ${sorted[*]})"
