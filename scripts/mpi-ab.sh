#!/usr/bin/env bash
# mpi-ab.sh: compare two revisions of the MPI transport (build tag mpi) on
# a noisy machine. It builds fmpi-osu and the bare transport's ping-pong
# (internal/cmd/mpipingpong) from OLD_REV (git archive) and from the
# working tree, for MPICH and for Open MPI, and bench/osu-c's osu_latency
# over each; then, for ROUNDS rounds, runs under each MPI's launcher with
# two processes, alternating the order of old and new each round:
# fmpi-osu latency at 8 B (FIBERMPI_TRANSPORT=mpi) old and new, raw MPI,
# and the bare transport old and new. With BW=1, each round also runs
# fmpi-osu bw at 1 MiB old and new and raw osu_bw, and the summary gives
# the medians of each side's ratio to raw. It prints one line per round
# and MPI, then each column's median and how often new beat old.
#
# usage: [BW=1] scripts/mpi-ab.sh OLD_REV [ROUNDS]
#   e.g. scripts/mpi-ab.sh main 8
set -euo pipefail
old=${1:?old revision}
rounds=${2:-8}
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_LOG_LEVEL=error
mkdir -p "$work/src"
git -C "$root" archive "$old" | tar -x -C "$work/src"
for mpi in mpich ompi; do
	tags=mpi
	[ $mpi = ompi ] && tags=mpi,ompi
	for side in old new; do
		src=$root
		[ $side = old ] && src=$work/src
		mkdir -p "$work/$side-$mpi"
		(cd "$src" && $GO build -tags "$tags" -o "$work/$side-$mpi/" ./cmd/fmpi-osu ./internal/cmd/mpipingpong)
	done
	cc=mpicc.mpich
	[ $mpi = ompi ] && cc=mpicc.openmpi
	make -s -C "$root/bench/osu-c" MPICC=$cc OUT="$work/c-$mpi"
done
val() { awk -v s="${1:-8}" '$1 == s { print $2 }' | tail -1; }
for r in $(seq "$rounds"); do
	order="old new"
	[ $((r % 2)) = 0 ] && order="new old"
	for mpi in mpich ompi; do
		if [ $mpi = mpich ]; then L=(mpiexec.mpich -n 2); else L=(mpirun.openmpi --oversubscribe -n 2); fi
		declare -A f b
		for side in $order; do
			f[$side]=$(FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$work/$side-$mpi/fmpi-osu" latency -m 8:8 2>/dev/null | val)
		done
		raw=$(timeout 120 "${L[@]}" "$work/c-$mpi/osu_latency" -m 8:8 2>/dev/null | val)
		for side in $order; do
			b[$side]=$(timeout 120 "${L[@]}" "$work/$side-$mpi/mpipingpong" -size 8 2>/dev/null | val)
		done
		bw=
		if [ "${BW:-0}" = 1 ]; then
			declare -A w
			for side in $order; do
				w[$side]=$(FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$work/$side-$mpi/fmpi-osu" bw -m 1048576:1048576 2>/dev/null | val 1048576)
			done
			rawbw=$(timeout 120 "${L[@]}" "$work/c-$mpi/osu_bw" -m 1048576:1048576 2>/dev/null | val 1048576)
			bw=" bw-old ${w[old]} bw-new ${w[new]} bw-raw $rawbw"
		fi
		echo "$r $mpi fmpi-old ${f[old]} fmpi-new ${f[new]} raw $raw bare-old ${b[old]} bare-new ${b[new]}$bw"
	done
done | tee "$work/rounds.txt"
for mpi in mpich ompi; do
	grep " $mpi " "$work/rounds.txt" | awk -v m=$mpi '
	# the median of a[1..n], sorted in place (no asort: mawk has none)
	function med(a, n,   i, j, t, k) {
		for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		k = int((n + 1) / 2); return n % 2 ? a[k] : (a[k] + a[k + 1]) / 2
	}
	{ fo[NR] = $4 + 0; fn[NR] = $6 + 0; r[NR] = $8 + 0; bo[NR] = $10 + 0; bn[NR] = $12 + 0; if ($6 < $4) wf++; if ($12 < $10) wb++
	  if (NF >= 18 && $18 > 0) { nw++; wo[nw] = $14 / $18; wn[nw] = $16 / $18; if ($16 > $14) ww++ } }
	END { printf "%s medians (us): fmpi old %.3f new %.3f (new faster in %d of %d), raw %.3f, bare old %.3f new %.3f (new faster in %d of %d)\n",
		m, med(fo, NR), med(fn, NR), wf, NR, med(r, NR), med(bo, NR), med(bn, NR), wb, NR
	  if (nw) printf "%s bw 1 MiB, median ratio to raw: old %.3f new %.3f (new faster in %d of %d)\n", m, med(wo, nw), med(wn, nw), ww, nw }'
done
