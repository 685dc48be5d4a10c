#!/usr/bin/env bash
# compare.sh runs the Go red-black variants (examples/redblack) and this C
# reference interleaved, checks that every run's grid and residual are the C
# sequential program's bit for bit, and prints the table of times per
# iteration: median and min over the runs, and the Go/C ratio of medians.
#
#   bench/redblack-c/compare.sh [-n 512] [-iters 200] [-runs 5] [-layouts "2x1 1x2"] [-only "seq threads"]
#
# Each round runs every contender once, in an order rotated from round to
# round, so that a change of the machine's load hits all of them alike.
# -layouts are the processes×threads of hybrid and funneled; threads uses
# 1×T and mpi P×1 with T and P the largest of those layouts (2 by default,
# one per core here). Go runs on -workers 2 fiber workers, -spin 20µs (the
# command's default). C: gcc -O3 -march=native; OpenMP and MPI settings are
# the libraries' defaults, except for Open MPI: --bind-to none (so that
# neither side is pinned) and mpi_yield_when_idle 0 (see OMPI_RUN below).
# Raw result lines go to bin/results-<n>-<iters>.txt, with the cross-core
# time between the first two CPUs after each round (bin/corelat, built from
# internal/cmd/corelat): on a virtual machine the host may move its CPUs,
# and two on SMT siblings of one core (the shortest times) slow every
# parallel program down.
set -euo pipefail
cd "$(dirname "$0")"

N=512 ITERS=200 RUNS=5 LAYOUTS="2x1 1x2" ONLY="seq threads mpi hybrid funneled"
while [ $# -gt 0 ]; do
	case "$1" in
	-n) N=$2; shift 2 ;;
	-iters) ITERS=$2; shift 2 ;;
	-runs) RUNS=$2; shift 2 ;;
	-layouts) LAYOUTS=$2; shift 2 ;;
	-only) ONLY=$2; shift 2 ;;
	*) echo "usage: $0 [-n cells] [-iters k] [-runs r] [-layouts \"PxT ...\"] [-only \"variants\"]" >&2; exit 2 ;;
	esac
done

GO=${GO:-go}
make -s
$GO build -o bin/redblack-go ../../examples/redblack
$GO build -o bin/corelat ../../internal/cmd/corelat
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
MPICH_RUN=${MPICH_RUN:-mpiexec.mpich}
# Open MPI's launcher turns on mpi_yield_when_idle here (its progress loop
# then calls sched_yield, and on a loaded machine each call gives the core
# away for a time slice: 15–40 ms an iteration, against 0.4 ms without);
# it is set off so that both MPIs poll the way MPICH does by default.
OMPI_RUN=${OMPI_RUN:-mpirun.openmpi --bind-to none --oversubscribe --mca mpi_yield_when_idle 0}

maxp=1 maxt=1
for l in $LAYOUTS; do
	p=${l%x*} t=${l#*x}
	[ "$p" -gt "$maxp" ] && maxp=$p
	[ "$t" -gt "$maxt" ] && maxt=$t
done
want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }

# Contenders: "label|command" (the label names the C program's MPI).
C=()
gorun="bin/redblack-go -n $N -iters $ITERS -workers 2 -check=false -hash -progress 0"
want seq && C+=("go|$gorun -variant seq" "c|bin/seq -n $N -iters $ITERS")
want threads && C+=("go|$gorun -variant threads -threads $maxt" "c-openmp|bin/omp -n $N -iters $ITERS -threads $maxt")
if want mpi; then
	C+=("go|$gorun -variant mpi -ranks $maxp"
		"c-mpich|$MPICH_RUN -n $maxp bin/mpi-mpich -n $N -iters $ITERS"
		"c-openmpi|$OMPI_RUN -np $maxp bin/mpi-openmpi -n $N -iters $ITERS")
fi
for v in hybrid funneled; do
	want $v || continue
	for l in $LAYOUTS; do
		p=${l%x*} t=${l#*x}
		e=$((t < 2 ? t : 2))
		C+=("go|$gorun -variant $v -ranks $p -threads $t -endpoints $e"
			"c-mpich|$MPICH_RUN -n $p bin/$v-mpich -n $N -iters $ITERS -threads $t"
			"c-openmpi|$OMPI_RUN -np $p bin/$v-openmpi -n $N -iters $ITERS -threads $t")
	done
done

out=bin/results-$N-$ITERS.txt
: >"$out"
echo "# $(date -u +%FT%TZ) n=$N iters=$ITERS runs=$RUNS layouts=\"$LAYOUTS\"; load at start:$(uptime | sed 's/.*load average://')"
k=${#C[@]}
for ((r = 0; r < RUNS; r++)); do
	for ((i = 0; i < k; i++)); do
		c=${C[$(((i + r) % k))]}
		label=${c%%|*} cmd=${c#*|}
		line=$(timeout 600 $cmd 2>/dev/null | grep '^result ' || true)
		if [ -z "$line" ]; then
			echo "FAILED: $cmd" >&2
			echo "failed label=$label cmd=$cmd" >>"$out"
			continue
		fi
		echo "$line label=$label round=$r" >>"$out"
	done
	# How far apart the two CPUs were in this round (internal/cmd/corelat).
	echo "corelat round=$r $(bin/corelat 2>&1)" >>"$out"
done
echo "# load at end:$(uptime | sed 's/.*load average://')"
echo "# cross-core one-way time (p50) after each round:$(awk '$1 == "corelat" { for (i = 1; i < NF; i++) if ($i == "p50") printf " %s ns", $(i + 1) }' "$out")"

# The table. Every line's residual and hash must equal the C seq's (or the
# first line's if seq was not run).
awk -v runs="$RUNS" '
function field(name,   i, kv) {
	for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
	return ""
}
function sort(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j+1] = a[j]; a[j+1] = x } }
function median(key,   a, n, i) {
	n = cnt[key]; for (i = 1; i <= n; i++) a[i] = t[key, i]; sort(a, n)
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
function us(ns) { return sprintf("%.1f µs", ns / 1000) }
$1 == "failed" { failed++; next }
$1 == "result" {
	impl = field("impl"); label = field("label")
	key = field("variant") SUBSEP field("layout") SUBSEP (impl == "go" ? "go" : label)
	if (!(key in cnt)) { order[++nk] = key }
	cnt[key]++; t[key, cnt[key]] = field("ns_per_iter")
	sig = field("residual") "/" field("hash")
	if (impl == "c" && field("variant") == "seq") ref = sig
	sigs[key] = sigs[key] == "" || sigs[key] == sig ? sig : "MIXED"
	if (impl == "go") kernel = field("kernel")
}
END {
	if (ref == "") { for (i = 1; i <= nk; i++) if (sigs[order[i]] != "MIXED") { ref = sigs[order[i]]; break } }
	printf "| variant | layout | program | median | min | max/min | Go/C (medians) | grid |\n"
	printf "|---|---|---|---|---|---|---|---|\n"
	bad = 0
	for (i = 1; i <= nk; i++) {
		key = order[i]; split(key, p, SUBSEP)
		n = cnt[key]; mn = 1e18; mx = 0
		for (j = 1; j <= n; j++) { if (t[key, j] < mn) mn = t[key, j]; if (t[key, j] > mx) mx = t[key, j] }
		med[key] = median(key)
		ok = sigs[key] == ref ? "identical" : "DIFFERS"
		if (ok != "identical") bad++
		prog = p[3] == "go" ? "Go (" kernel ")" : "C " substr(p[3], 3)
		if (p[3] == "c") prog = "C"
		ratio = ""
		if (p[3] == "go") {
			best = 0; which = ""
			for (k = 1; k <= nk; k++) {
				split(order[k], q, SUBSEP)
				if (q[1] == p[1] && q[2] == p[2] && q[3] != "go") {
					m = median(order[k]); if (best == 0 || m < best) { best = m; which = q[3] }
				}
			}
			if (best > 0) ratio = sprintf("**%.2f×** (vs %s)", med[key] / best, which)
		}
		printf "| %s | %s | %s | %s | %s | %.2f | %s | %s (%d runs) |\n", p[1], p[2], prog, us(med[key]), us(mn), mx / mn, ratio, ok, n
	}
	if (failed) printf "\n%d runs FAILED\n", failed
	if (bad || failed) exit 1
}' "$out"
