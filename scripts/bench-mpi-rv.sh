#!/usr/bin/env bash
# How a rendezvous message's bytes may travel over MPI, measured in C the
# bw way at SIZE bytes (default 1 MiB), ROUNDS interleaved rounds (default
# 4) under MPICH and Open MPI, 2 processes: osu_bw (receives posted
# first), osu_rv_late (the bytes sent with their head, received once the
# head is in), osu_rv_rtr (sent after a ready-to-receive), osu_rv_put
# (MPI_Put into a dynamic window, one flush per window). bench/osu-c/rv.c
# says what each does. Prints one line per round and MPI, in MB/s.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-4}
SIZE=${SIZE:-1048576}
. scripts/mpi-bench-lib.sh
mpi_bench_setup
for r in $(seq "$ROUNDS"); do
	for mpi in mpich ompi; do
		mpi_launcher $mpi
		line="round $r $mpi $SIZE"
		for p in bw rv_late rv_rtr rv_put; do
			line+=" $p $(timeout 120 "${L[@]}" "$B/$mpi/osu_$p" -m "$SIZE:$SIZE" 2>/dev/null | val "$SIZE")"
		done
		echo "$line load $(cut -d' ' -f1 /proc/loadavg)"
	done
done
