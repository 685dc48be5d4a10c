#!/usr/bin/env bash
# mpi-rendezvous-ab.sh: fmpi-osu over the MPI transport with its two ways of
# moving a rendezvous message's bytes (FIBERMPI_MPI_RENDEZVOUS=mpi, the
# default: MPI's own rendezvous after the RTS; =put: RTR, Put and Done), and
# raw MPI's OSU-method C program, in one run: per round, per MPI (MPICH, Open
# MPI) and per benchmark, both ways in alternating order, then raw. It
# prints one line per run and, at the end, per MPI and benchmark, the
# medians and how often the default was the faster (benchstat needs Go
# benchmarks; these are fmpi-osu tables).
#
# usage: ROUNDS=8 scripts/mpi-rendezvous-ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ROUNDS=${ROUNDS:-8}
. scripts/mpi-bench-lib.sh
mpi_bench_setup fmpi
val() { awk -v s="$1" '$1 == s { print $2 }' | tail -1; }
for r in $(seq "$ROUNDS"); do
	for mpi in mpich ompi; do
		mpi_launcher $mpi
		for b in "bw 1048576" "bw 65536" "latency 65536" "latency 1048576"; do
			set -- $b
			ways="put mpi"
			[ $((r % 2)) = 0 ] && ways="mpi put"
			for m in $ways; do
				echo "$r $mpi $1 $2 $m $(FIBERMPI_MPI_RENDEZVOUS=$m FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$B/fmpi-$mpi" "$1" -m "$2:$2" 2>/dev/null | val "$2")"
			done
			echo "$r $mpi $1 $2 raw $(timeout 120 "${L[@]}" "$B/$mpi/osu_$1" -m "$2:$2" 2>/dev/null | val "$2")"
		done
	done
done | tee "$B/runs"
echo "== medians of $ROUNDS rounds (mpi = the default, put = RTR and Put)"
med() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
for key in $(awk '{ print $2 "/" $3 "/" $4 }' "$B/runs" | sort -u); do
	IFS=/ read -r mpi bench size <<<"$key"
	sel() { awk -v m="$mpi" -v b="$bench" -v s="$size" -v w="$1" '$2 == m && $3 == b && $4 == s && $5 == w { print $1, $6 }' "$B/runs"; }
	faster=$(join <(sel mpi | sort) <(sel put | sort) | awk -v b="$bench" '(b == "bw" ? $2 > $3 : $2 < $3) { n++ } END { print n + 0 }')
	echo "$mpi $bench $size: mpi $(sel mpi | cut -d' ' -f2 | med), put $(sel put | cut -d' ' -f2 | med), raw $(sel raw | cut -d' ' -f2 | med); mpi faster in $faster of $ROUNDS"
done
