#!/usr/bin/env bash
# instr-per-op.sh: instructions per benchmark op, per function, counted by
# valgrind's callgrind: a figure that does not move with the machine's load
# or the host's placement of its vCPUs, for work on a path's length (the
# wall-clock figures still decide; this says where the instructions are).
#
# It builds PKG's test binary (CGO_ENABLED=0; asynchronous preemption off,
# since callgrind does not follow Go's preemption signals), runs BENCH for
# N and 3N ops under callgrind, and prints, per function, the difference
# of the two runs over 2N: setup and warm-up cancel out. Functions are
# summed over their recursion levels. The total counts fibermpi's own
# functions and memmove; the runtime's scheduler, which runs as often as
# the timing lets it, is left out of it.
#
# usage: scripts/instr-per-op.sh PKG BENCH_REGEXP [N] [LINES]
#   e.g. scripts/instr-per-op.sh ./comm '^BenchmarkShmLoopbackWindow$' 20000
set -euo pipefail
pkg=${1:?package} bench=${2:?benchmark regexp} n=${3:-20000} lines=${4:-40}
GO=${GO:-go}
if ! command -v valgrind >/dev/null 2>&1; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y valgrind >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 $GO test -c -o "$work/t.test" "$pkg"
dir=$(cd "$pkg" && pwd)
for m in "$n" $((3 * n)); do
	(cd "$dir" && GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
		--callgrind-out-file="$work/cg.$m" "$work/t.test" -test.run '^$' \
		-test.bench "$bench" -test.benchtime "${m}x" >/dev/null 2>&1)
	# "Ir (pct) file:function [object]" lines, without the callee lines (=>):
	# the count per function, its recursion levels ('2, '3 ...) summed.
	callgrind_annotate --threshold=100 --auto=no "$work/cg.$m" 2>/dev/null | awk '
		/=>/ { next }
		/^ *[0-9,]+ +\(/ && /:/ {
			c = $1; gsub(",", "", c); $1 = ""; $2 = ""
			sub(/^ +/, ""); sub(/ \[.*$/, ""); sub(/^[^:]*:/, ""); sub(/'"'"'[0-9]+$/, "")
			f[$0] += c
		}
		END { for (k in f) print f[k] "\t" k }' | sort -t "$(printf '\t')" -k2 >"$work/f.$m"
done
join -t "$(printf '\t')" -1 2 -2 2 -a 2 -e 0 -o 0,1.1,2.1 "$work/f.$n" "$work/f.$((3 * n))" |
	awk -F '\t' -v n="$n" '{ d = ($3 - $2) / (2 * n); if (d >= 0.5) printf "%8.1f  %s\n", d, $1 }' |
	sort -rn | grep -E 'fibermpi|runtime\.memmove' >"$work/out" || true
head -n "$lines" "$work/out"
awk '{ s += $1 } END { printf "%8.1f  TOTAL (fibermpi functions and memmove) per op\n", s }' "$work/out"
