#!/usr/bin/env bash
# fmpi-osu over the MPI transport (build tag mpi, FIBERMPI_TRANSPORT=mpi)
# beside bench/osu-c's OSU-method C programs over the same MPI, ROUNDS
# interleaved rounds (default 3): latency at 8 B, bw at 1 MiB, latency_mt
# -t 4 at 8 B (the C one at MPI_THREAD_MULTIPLE); with latency, the bare
# transport's ping-pong (internal/cmd/mpipingpong: rdma/mpi without the
# endpoint stack), with packets and with -eager (SendEager/ReceiveEager,
# the path fmpi-osu's messages take), and bench/osu-c's osu_ring_latency
# (the transport's MPI calls, in C: what the pattern costs without Go).
# Prints one line per run, and before each round internal/cmd/corelat's
# line (the host's cross-core time and each CPU's speed, which every
# contender's figures follow: BENCHMARKS.md, issues 12 and 17).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ROUNDS=${ROUNDS:-3}
. scripts/mpi-bench-lib.sh
mpi_bench_setup fmpi
$GO build -tags mpi -o "$B/bare-mpich" ./internal/cmd/mpipingpong
$GO build -tags mpi,ompi -o "$B/bare-ompi" ./internal/cmd/mpipingpong
$GO build -o "$B/corelat" ./internal/cmd/corelat
val() { awk -v s="$1" '$1 == s { print $2 }' | tail -1; }
for r in $(seq "$ROUNDS"); do
	echo "round $r $("$B/corelat" 2>&1)"
	for mpi in mpich ompi; do
		mpi_launcher $mpi
		for b in "latency 8" "bw 1048576" "latency_mt 8"; do
			set -- $b
			ex=(); [ "$1" = latency_mt ] && ex=(-t 4)
			f=$(FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$B/fmpi-$mpi" "$1" "${ex[@]}" -m "$2:$2" 2>/dev/null | val "$2")
			c=$(timeout 120 "${L[@]}" "$B/$mpi/osu_$1" "${ex[@]}" -m "$2:$2" 2>/dev/null | val "$2")
			bare=
			if [ "$1" = latency ]; then
				bare=" bare-transport $(timeout 120 "${L[@]}" "$B/bare-$mpi" -size "$2" 2>/dev/null | val "$2")"
				bare+=" bare-eager $(timeout 120 "${L[@]}" "$B/bare-$mpi" -eager -size "$2" 2>/dev/null | val "$2")"
				bare+=" c-ring $(timeout 120 "${L[@]}" "$B/$mpi/osu_ring_latency" -m "$2:$2" 2>/dev/null | val "$2")"
			fi
			echo "round $r $mpi $1 $2 fibermpi-over-mpi $f raw-$mpi $c$bare"
		done
	done
done
