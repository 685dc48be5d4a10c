#!/usr/bin/env bash
# osu-ab.sh: compare two revisions' fmpi-osu between two processes on a
# noisy machine. It builds fmpi-osu and fmpirun from OLD_REV (git archive)
# and from the working tree, runs `fmpirun -n 2 fmpi-osu ARGS…` with each,
# alternated for ROUNDS rounds, and prints each side's figures sorted (the
# median is the middle), then the load average. A run's figure is the last
# column of its last row: give one size (-m N:N); barrier has one row.
#
# The host switches between speeds (BENCHMARKS.md, issue 17, session 13):
# every round starts with internal/cmd/corelat's cross-core one-way time
# and its timing of the same work on each CPU (rank 0 runs on the first,
# rank 1 on the second). The script prints the rounds one per line with
# them, then each side's median over the rounds in which corelat was
# under 150 ns (fast) and over the others (slow), so that a difference is
# read within one mode.
#
# usage: scripts/osu-ab.sh OLD_REV ROUNDS BENCH [fmpi-osu flags…]
#   e.g. scripts/osu-ab.sh main 8 latency -m 8:8 -i 100000
set -euo pipefail
old_rev=${1:?old revision} rounds=${2:?rounds}
shift 2
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/old" "$work/new"
git -C "$root" archive "$old_rev" | tar -x -C "$work/src"
(cd "$work/src" && $GO build -o "$work/old/" ./cmd/fmpi-osu ./cmd/fmpirun)
(cd "$root" && $GO build -o "$work/new/" ./cmd/fmpi-osu ./cmd/fmpirun ./internal/cmd/corelat)
for side in old new; do : > "$work/$side.txt"; done
: > "$work/rounds.txt"
for i in $(seq 1 "$rounds"); do
	order="old new"
	[ $((i % 2)) = 0 ] && order="new old"
	probe=$("$work/new/corelat")
	cl=$(echo "$probe" | sed -n 's/.*p50 \([0-9]*\) ns.*/\1/p')
	speed=$(echo "$probe" | sed -n 's/.*; work //p')
	for side in $order; do
		v=$("$work/$side/fmpirun" -n 2 "$work/$side/fmpi-osu" "$@" 2>&1 | awk '/^ *[0-9]/ {print $NF}' | tail -1)
		echo "$v" >> "$work/$side.txt"
		if [ $side = old ]; then o=$v; else n=$v; fi
	done
	echo "$i $cl $o $n" >> "$work/rounds.txt"
	echo "round $i: corelat $cl ns, work $speed: old $o, new $n"
done
for side in old new; do
	echo "$side ($([ $side = old ] && echo "$old_rev" || echo "working tree")): $(sort -g "$work/$side.txt" | tr '\n' ' ')"
done
# median of column c over the rounds whose corelat passes the test
med() { awk -v c="$1" "$2" "$work/rounds.txt" | sort -g | awk '{v[NR]=$1} END {if (NR) printf "%g (%d rounds)", (v[int((NR+1)/2)]+v[int(NR/2)+1])/2, NR; else printf "none"}'; }
echo "fast (corelat < 150 ns): old $(med 3 '$2 < 150 {print $c}'), new $(med 4 '$2 < 150 {print $c}')"
echo "slow (corelat >= 150 ns): old $(med 3 '$2 >= 150 {print $c}'), new $(med 4 '$2 >= 150 {print $c}')"
echo "# $(uptime)"
