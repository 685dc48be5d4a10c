#!/usr/bin/env bash
# lines-by-state.sh: the numeric lines of issues 12 and 17 that move with
# the host, each measured in pairs (fibermpi and the contender it is
# judged against, back to back), with internal/cmd/corelat read right
# before and right after each pair, so that every pair is classed by the
# state the host was in while it ran (mpi-bench-lib.sh's host_state):
#   fast    both CPUs at full speed (corelat's work under 130 µs, before
#           and after) and on two cores near each other (one-way 30–100 ns);
#   slow    near, but a CPU ran slower (an SMT sibling busy: work 2x);
#   siblings  one core's two hardware threads (one-way under 30 ns);
#   far     the two vCPUs far apart (one-way 100 ns or more).
# The pairs, ROUNDS rounds (default 6) of each:
#   shm-latency  fmpirun -n 2 fmpi-osu latency 8 B against Open MPI's
#                osu_latency (issue 12: fibermpi <= Open MPI, and <= 0.4 µs)
#   shm-mbw_mr   fmpi-osu mbw_mr 8 B against Open MPI's (issue 12:
#                fibermpi >= 9 M messages/s; Open MPI's for reference)
#   mpi-latency  fmpi-osu over the MPI transport against raw osu_latency,
#                under MPICH and Open MPI (issue 17: <= raw + 0.3 µs)
#   mpi-bw       the same for bw at 1 MiB (issue 17: >= 0.9 x raw)
# It prints a line per pair, then per line and state: the number of pairs,
# the medians, the median per-pair difference or ratio, and whether the
# line holds on those pairs; then the same over all pairs.
#
# usage: [ROUNDS=6] scripts/lines-by-state.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ROUNDS=${ROUNDS:-6}
. scripts/mpi-bench-lib.sh
mpi_bench_setup fmpi
$GO build -o "$B/" ./cmd/fmpirun ./cmd/fmpi-osu ./internal/cmd/corelat
out=$B/pairs.txt

# Open MPI runs as bench-mpi.sh runs it (pml ob1, issue 12's figures), for
# both issues: mpi_launcher leaves the pml to Open MPI.
ompi=(mpirun.openmpi -n 2 --mca pml ob1)
mpich=(mpiexec.mpich -n 2)
# pair NAME ROUND CMD_A -- CMD_B: runs both (each prints one value on
# stdout; fibermpi's first in odd rounds, second in even ones), with
# corelat before and after, and records the pair.
pair() {
	local name=$1 r=$2 a b before after
	shift 2
	local cmd_a=() cmd_b=()
	while [ "$1" != -- ]; do cmd_a+=("$1"); shift; done
	shift
	cmd_b=("$@")
	before=$("$B/corelat" 2>&1)
	if ((r % 2)); then
		a=$("${cmd_a[@]}" 2>/dev/null || true)
		b=$("${cmd_b[@]}" 2>/dev/null || true)
	else
		b=$("${cmd_b[@]}" 2>/dev/null || true)
		a=$("${cmd_a[@]}" 2>/dev/null || true)
	fi
	after=$("$B/corelat" 2>&1)
	echo "pair $name round $r state $(printf '%s\n%s\n' "$before" "$after" | host_state) fibermpi ${a:-none} other ${b:-none}" | tee -a "$out"
}
# run SIZE COL CMD...: CMD's table value in column COL at SIZE.
run() {
	local size=$1 c=$2
	shift 2
	timeout 120 "$@" | val "$size" "$c"
}
fmpi=("$B/fmpirun" -n 2 "$B/fmpi-osu")
for r in $(seq "$ROUNDS"); do
	pair shm-latency "$r" run 8 2 "${fmpi[@]}" latency -m 8:8 -- run 8 2 "${ompi[@]}" "$B/ompi/osu_latency" -m 8:8
	pair shm-mbw_mr "$r" run 8 3 "${fmpi[@]}" mbw_mr -m 8:8 -- run 8 3 "${ompi[@]}" "$B/ompi/osu_mbw_mr" -m 8:8
	for mpi in mpich ompi; do
		if [ $mpi = mpich ]; then l=("${mpich[@]}"); else l=("${ompi[@]}"); fi
		pair "mpi-latency-$mpi" "$r" run 8 2 env FIBERMPI_TRANSPORT=mpi "${l[@]}" "$B/fmpi-$mpi" latency -m 8:8 -- run 8 2 "${l[@]}" "$B/$mpi/osu_latency" -m 8:8
		pair "mpi-bw-$mpi" "$r" run 1048576 2 env FIBERMPI_TRANSPORT=mpi "${l[@]}" "$B/fmpi-$mpi" bw -m 1048576:1048576 -- run 1048576 2 "${l[@]}" "$B/$mpi/osu_bw" -m 1048576:1048576
	done
done

echo "== the lines by the host's state, $ROUNDS rounds"
awk "$AWK_MED"'
$1 == "pair" && $8 ~ /^[0-9.]+$/ && $10 ~ /^[0-9.]+$/ {
	for (k = 0; k < 2; k++) {
		s = k ? "all" : $6
		key = $2 SUBSEP s; n[key]++; names[$2]; states[s]
		f[key, n[key]] = $8; o[key, n[key]] = $10
		d[key, n[key]] = $2 ~ /latency/ ? $8 - $10 : $8 / $10
	}
}
END {
	for (name in names) for (s in states) {
		key = name SUBSEP s
		if (!(key in n)) continue
		k = n[key]
		for (i = 1; i <= k; i++) { x[i] = f[key, i]; y[i] = o[key, i]; z[i] = d[key, i] }
		fm = med(x, k); om = med(y, k); dm = med(z, k)
		if (name == "shm-latency") {
			line = "fibermpi <= Open MPI and <= 0.4 us"; ok = fm <= om && fm <= 0.4
			printf "%-17s %-8s %2d pairs: fibermpi %.3f us, Open MPI %.3f us, median difference %+.3f: %s %s\n", name, s, k, fm, om, dm, line, ok ? "holds" : "not met"
		} else if (name == "shm-mbw_mr") {
			ok = fm >= 9e6
			printf "%-17s %-8s %2d pairs: fibermpi %.2f M/s, Open MPI %.2f M/s: fibermpi >= 9 M/s %s\n", name, s, k, fm / 1e6, om / 1e6, ok ? "holds" : "not met"
		} else if (name ~ /latency/) {
			ok = dm <= 0.3
			printf "%-17s %-8s %2d pairs: fibermpi %.3f us, raw %.3f us, median difference %+.3f: <= raw + 0.3 %s\n", name, s, k, fm, om, dm, ok ? "holds" : "not met"
		} else {
			ok = dm >= 0.9
			printf "%-17s %-8s %2d pairs: fibermpi %.0f MB/s, raw %.0f MB/s, median ratio %.3f (of medians %.3f): >= 0.9 x raw %s\n", name, s, k, fm, om, dm, fm / om, ok ? "holds" : "not met"
		}
		delete x; delete y; delete z
	}
}' "$out" | sort
