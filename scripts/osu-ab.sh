#!/usr/bin/env bash
# osu-ab.sh: compare two revisions' fmpi-osu between two processes on a
# noisy machine. It builds fmpi-osu and fmpirun from OLD_REV (git archive)
# and from the working tree, runs `fmpirun -n 2 fmpi-osu ARGS…` with each,
# alternated for ROUNDS rounds, and prints each side's last-column figures
# sorted (the median is the middle), then the load average.
#
# usage: scripts/osu-ab.sh OLD_REV ROUNDS BENCH [fmpi-osu flags…]
#   e.g. scripts/osu-ab.sh main 8 latency -m 8:8 -i 100000
set -euo pipefail
old=${1:?old revision} rounds=${2:?rounds}
shift 2
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/old" "$work/new"
git -C "$root" archive "$old" | tar -x -C "$work/src"
(cd "$work/src" && $GO build -o "$work/old/" ./cmd/fmpi-osu ./cmd/fmpirun)
(cd "$root" && $GO build -o "$work/new/" ./cmd/fmpi-osu ./cmd/fmpirun)
for side in old new; do : > "$work/$side.txt"; done
for i in $(seq 1 "$rounds"); do
	order="old new"
	[ $((i % 2)) = 0 ] && order="new old"
	for side in $order; do
		"$work/$side/fmpirun" -n 2 "$work/$side/fmpi-osu" "$@" 2>&1 |
			awk '/^[0-9]/ {print $NF}' >> "$work/$side.txt"
	done
done
for side in old new; do
	echo "$side ($([ $side = old ] && echo "$old" || echo "working tree")): $(sort -g "$work/$side.txt" | tr '\n' ' ')"
done
echo "# $(uptime)"
