#!/usr/bin/env bash
# mpi-rendezvous-ab.sh: fmpi-osu over the MPI transport two ways, and raw
# MPI's OSU-method C program, in one run: per round, per MPI (MPICH, Open
# MPI) and per benchmark, both ways in alternating order, then raw. It
# prints one line per run and, at the end, per MPI and benchmark, the
# medians and how often the first way was the faster (benchstat needs Go
# benchmarks; these are fmpi-osu tables).
#
# The two ways are, by default, the transport's two ways of moving a
# rendezvous message's bytes: FIBERMPI_MPI_RENDEZVOUS=mpi (the default:
# MPI's own rendezvous after the RTS) and =put (RTR, Put and Done). With
# OLD=REV they are the working tree ("new") and revision REV ("old"),
# each built for both MPIs. BENCHES lists the benchmarks as "bench size"
# pairs separated by commas.
#
# usage: [ROUNDS=8] [OLD=REV] [BENCHES="bw 65536,latency 16384"] scripts/mpi-rendezvous-ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ROUNDS=${ROUNDS:-8}
BENCHES=${BENCHES:-bw 1048576,bw 65536,latency 65536,latency 1048576}
. scripts/mpi-bench-lib.sh
mpi_bench_setup fmpi
if [ -n "${OLD:-}" ]; then
	first=new second=old
	mkdir -p "$B/src"
	git archive "$OLD" | tar -x -C "$B/src"
	(cd "$B/src" && $GO build -tags mpi -o "$B/fmpi-mpich.old" ./cmd/fmpi-osu &&
		$GO build -tags mpi,ompi -o "$B/fmpi-ompi.old" ./cmd/fmpi-osu)
else
	first=mpi second=put
fi
# run WAY MPI ARGS...: fmpi-osu ARGS over MPI the way WAY.
run() {
	local way=$1 mpi=$2
	shift 2
	case $way in
	old) FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$B/fmpi-$mpi.old" "$@" ;;
	new) FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$B/fmpi-$mpi" "$@" ;;
	*) FIBERMPI_MPI_RENDEZVOUS=$way FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$B/fmpi-$mpi" "$@" ;;
	esac
}
IFS=, read -r -a benches <<<"$BENCHES"
for r in $(seq "$ROUNDS"); do
	for mpi in mpich ompi; do
		mpi_launcher $mpi
		for b in "${benches[@]}"; do
			set -- $b
			ways="$second $first"
			[ $((r % 2)) = 0 ] && ways="$first $second"
			for m in $ways; do
				echo "$r $mpi $1 $2 $m $(run "$m" $mpi "$1" -m "$2:$2" 2>/dev/null | val "$2")"
			done
			echo "$r $mpi $1 $2 raw $(timeout 120 "${L[@]}" "$B/$mpi/osu_$1" -m "$2:$2" 2>/dev/null | val "$2")"
		done
	done
done | tee "$B/runs"
echo "== medians of $ROUNDS rounds"
med() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
for key in $(awk '{ print $2 "/" $3 "/" $4 }' "$B/runs" | sort -u); do
	IFS=/ read -r mpi bench size <<<"$key"
	sel() { awk -v m="$mpi" -v b="$bench" -v s="$size" -v w="$1" '$2 == m && $3 == b && $4 == s && $5 == w { print $1, $6 }' "$B/runs"; }
	faster=$(join <(sel $first | sort) <(sel $second | sort) | awk -v b="$bench" '(b == "bw" ? $2 > $3 : $2 < $3) { n++ } END { print n + 0 }')
	echo "$mpi $bench $size: $first $(sel $first | cut -d' ' -f2 | med), $second $(sel $second | cut -d' ' -f2 | med), raw $(sel raw | cut -d' ' -f2 | med); $first faster in $faster of $ROUNDS"
done
