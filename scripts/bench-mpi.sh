#!/usr/bin/env bash
# Runs the OSU-method benchmarks on fibermpi (cmd/fmpi-osu), MPICH and Open MPI
# (bench/osu-c), interleaved: for each round, for each benchmark, each
# contender in turn. Every run's table is kept under $BUILD/raw/<bench>/<contender>/,
# and `fmpi-osu compare` summarizes them: per benchmark and size, each
# contender's median and best and its ratio to fibermpi.
#
#   scripts/bench-mpi.sh            every size (OSU's ranges), output bench-mpi.txt
#   scripts/bench-mpi.sh -quick     8 B and 1 MiB only, output bench-mpi-quick.txt
#   scripts/bench-mpi.sh -coll8     only the 8-rank collectives below, output
#                                   bench-mpi-coll8.txt
#   scripts/bench-mpi.sh -tcp       latency and bw between processes over loopback
#                                   TCP only (with -quick: 8 B and 1 MiB), output
#                                   bench-mpi-tcp.txt: fibermpi with
#                                   FIBERMPI_TRANSPORT=tcp, Open MPI with
#                                   --mca btl tcp,self, MPICH (ch4:ucx) with
#                                   UCX_TLS=tcp,self UCX_NET_DEVICES=lo (for ch4:ofi
#                                   it would be FI_PROVIDER=tcp)
#
# Besides, unless COLL8=0 (and not with -tcp), allreduce and barrier run on 8
# ranks as allreduce-2x4 and barrier-2x4: fibermpi as 2 processes x 4
# endpoints (fmpirun -n 2 fmpi-osu <bench> -n 8: collectives through memory
# within a process, two levels across), fibermpi-msg the same with
# -coll messages (point-to-point schedules only), MPICH and Open MPI as 8
# processes (oversubscribed on a small machine); 8 B (allreduce) with
# COLL8_ARGS (-i 500 -x 50) for every contender.
#
# Environment: ROUNDS (6), BUILD (build/bench-mpi), OUT (the output file),
# LATMT_THREADS (4: latency_mt -t), LATMT_ITERS (1000: latency_mt -i, for
# every contender; Open MPI's THREAD_MULTIPLE takes milliseconds a message
# here), LATMT_MANY (1000: fibermpi alone also runs latency_mt -t LATMT_MANY
# -m 8:8 at OSU's default count, as latency_mt-many, and the summary gives
# its time per message over latency_mt's at 8 B; 0: not), RUN_TIMEOUT (900 s
# a run), GO (go).
#
# fibermpi runs under `fmpirun -n 2` when cmd/fmpirun exists, otherwise in its
# in-process mode (the ranks are fibers of one process); the summary says which.
# MPICH and Open MPI are installed with apt-get when missing (as root, or
# through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=0
TCP=0
ONLY8=0
for arg in "$@"; do
	case "$arg" in
	-quick) QUICK=1 ;;
	-tcp) TCP=1 ;;
	-coll8) ONLY8=1 ;;
	*)
		echo "usage: $0 [-quick] [-tcp] [-coll8]" >&2
		exit 2
		;;
	esac
done

GO=${GO:-go}
ROUNDS=${ROUNDS:-6}
BUILD=${BUILD:-build/bench-mpi}
LATMT_THREADS=${LATMT_THREADS:-4}
LATMT_ITERS=${LATMT_ITERS:-1000}
LATMT_MANY=${LATMT_MANY:-1000}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
COLL8=${COLL8:-1}
COLL8_ARGS=${COLL8_ARGS:--i 500 -x 50}
if [ "$ONLY8" = 1 ]; then
	OUT=${OUT:-bench-mpi-coll8.txt}
elif [ "$TCP" = 1 ]; then
	OUT=${OUT:-bench-mpi-tcp$([ "$QUICK" = 1 ] && echo -quick).txt}
elif [ "$QUICK" = 1 ]; then
	OUT=${OUT:-bench-mpi-quick.txt}
else
	OUT=${OUT:-bench-mpi.txt}
fi
case "$ROUNDS" in '' | *[!0-9]* | 0)
	echo "ROUNDS must be a positive integer, got '$ROUNDS'" >&2
	exit 2
	;;
esac

# --- MPI installations ------------------------------------------------------
need_mpi() {
	local c
	for c in mpicc.mpich mpiexec.mpich mpicc.openmpi mpirun.openmpi; do
		command -v "$c" >/dev/null 2>&1 || return 0
	done
	return 1
}
if need_mpi; then
	echo "== installing MPICH and Open MPI (apt-get)"
	SUDO=
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			SUDO=sudo
		else
			echo "MPICH or Open MPI is missing and this is not root (no sudo): install mpich libmpich-dev openmpi-bin libopenmpi-dev" >&2
			exit 1
		fi
	fi
	$SUDO apt-get -o DPkg::Lock::Timeout=600 update
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y \
		mpich libmpich-dev openmpi-bin libopenmpi-dev
fi

# --- builds --------------------------------------------------------------------
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
echo "== building into $BUILD"
make -s -C bench/osu-c MPICC=mpicc.mpich OUT="$BUILD/mpich"
make -s -C bench/osu-c MPICC=mpicc.openmpi OUT="$BUILD/openmpi"
$GO build -o "$BUILD/fmpi-osu" ./cmd/fmpi-osu
$GO build -o "$BUILD/corelat" ./internal/cmd/corelat
FMPI_LAUNCH=()
FMPI_MODE="in-process (2 ranks as fibers of one process; cmd/fmpirun not in this tree)"
if [ -d cmd/fmpirun ]; then
	$GO build -o "$BUILD/fmpirun" ./cmd/fmpirun
	FMPI_LAUNCH=("$BUILD/fmpirun" -n 2)
	FMPI_MODE="fmpirun -n 2 (one process per rank)"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPICH_LAUNCH=(mpiexec.mpich -n 2)
OMPI_LAUNCH=(mpirun.openmpi -n 2 --mca pml ob1)
if [ "$TCP" = 1 ]; then
	FMPI_LAUNCH=(env FIBERMPI_TRANSPORT=tcp "${FMPI_LAUNCH[@]}")
	FMPI_MODE="$FMPI_MODE, over loopback TCP (rdma/tcp)"
	case "$(mpichversion 2>/dev/null | sed -n 's/^MPICH Device:[[:space:]]*//p')" in
	*ucx*) MPICH_LAUNCH=(env UCX_TLS=tcp,self UCX_NET_DEVICES=lo "${MPICH_LAUNCH[@]}") ;;
	*) MPICH_LAUNCH=(env FI_PROVIDER=tcp "${MPICH_LAUNCH[@]}") ;;
	esac
	OMPI_LAUNCH=(mpirun.openmpi -n 2 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
fi

# --- what to run ---------------------------------------------------------------
BENCHES=(latency bw bibw mbw_mr latency_mt allreduce bcast reduce barrier)
if [ "$TCP" = 1 ]; then
	BENCHES=(latency bw)
fi
CONTENDERS=(fibermpi mpich openmpi)
BENCHES8=(allreduce barrier)
CONTENDERS8=(fibermpi fibermpi-msg mpich openmpi)
if [ "$TCP" = 1 ] || [ "$COLL8" = 0 ] || [ ${#FMPI_LAUNCH[@]} = 0 ]; then
	BENCHES8=()
fi
if [ "$TCP" = 1 ] || [ "$ONLY8" = 1 ]; then
	LATMT_MANY=0
fi
if [ "$ONLY8" = 1 ]; then
	if [ ${#BENCHES8[@]} = 0 ]; then
		echo "$0: -coll8 needs fmpirun and neither -tcp nor COLL8=0" >&2
		exit 2
	fi
	BENCHES=()
fi
if [ "$QUICK" = 1 ]; then
	VARIANTS=("8b:-m 8:8" "1mib:-m 1048576:1048576")
else
	VARIANTS=("all:")
fi

# bench_args prints the flags of a benchmark beyond the sizes (the same for
# every contender).
bench_args() {
	case "$1" in
	latency_mt) echo "-t $LATMT_THREADS -i $LATMT_ITERS" ;;
	*) echo "" ;;
	esac
}

command8_of() { # contender bench -> the command line of the 8-rank run
	local who=$1 b=$2
	case "$who" in
	fibermpi) printf '%s\n' "$BUILD/fmpirun" -n 2 "$BUILD/fmpi-osu" "$b" -n 8 ;;
	fibermpi-msg) printf '%s\n' "$BUILD/fmpirun" -n 2 "$BUILD/fmpi-osu" "$b" -n 8 -coll messages ;;
	mpich) printf '%s\n' mpiexec.mpich -n 8 "$BUILD/mpich/osu_$b" ;;
	openmpi) printf '%s\n' mpirun.openmpi -n 8 --oversubscribe --mca pml ob1 "$BUILD/openmpi/osu_$b" ;;
	esac
}

# run1 runs one table: run1 <file> <command words...>
run1() {
	local file=$1
	shift
	if timeout -k 10 "$RUN_TIMEOUT" "$@" >"$file" 2>"$file.err"; then
		cat "$file"
	else
		rc=$?
		echo "$(basename "$(dirname "$(dirname "$file")")") $(basename "$(dirname "$file")") failed (exit $rc$([ $rc = 124 ] && echo ", timed out after ${RUN_TIMEOUT}s")): $*; stderr in $file.err" | tee -a "$FAILURES" >&2
		mv "$file" "$file.failed"
	fi
}

command_of() { # contender bench -> the command line, one word a line
	local who=$1 b=$2
	case "$who" in
	fibermpi) printf '%s\n' "${FMPI_LAUNCH[@]}" "$BUILD/fmpi-osu" "$b" ;;
	mpich) printf '%s\n' "${MPICH_LAUNCH[@]}" "$BUILD/mpich/osu_$b" ;;
	openmpi) printf '%s\n' "${OMPI_LAUNCH[@]}" "$BUILD/openmpi/osu_$b" ;;
	esac
}

RAW="$BUILD/raw"
rm -rf "$RAW"
FAILURES="$BUILD/failures.txt"
: >"$FAILURES"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date -u +%FT%TZ)

CORELAT="$BUILD/corelat.txt"
: >"$CORELAT"
for round in $(seq 1 "$ROUNDS"); do
	# The cross-core time of this VM moves with the host's placement of its
	# CPUs, and every figure moves with it (internal/cmd/corelat).
	echo "round $round: $("$BUILD/corelat" 2>&1)" | tee -a "$CORELAT"
	for b in "${BENCHES[@]}"; do
		for v in "${VARIANTS[@]}"; do
			tag=${v%%:*}
			sizes=${v#*:}
			[ "$b" = barrier ] && [ "$tag" != "${VARIANTS[0]%%:*}" ] && continue # barrier has no sizes
			[ "$b" = barrier ] && sizes=""
			for who in "${CONTENDERS[@]}"; do
				dir="$RAW/$b/$who"
				mkdir -p "$dir"
				file="$dir/r$round-$tag.txt"
				mapfile -t cmd < <(command_of "$who" "$b")
				# shellcheck disable=SC2206 # the flags are words on purpose
				cmd+=($sizes $(bench_args "$b"))
				echo "== round $round/$ROUNDS $b $tag $who: ${cmd[*]}"
				if timeout -k 10 "$RUN_TIMEOUT" "${cmd[@]}" >"$file" 2>"$file.err"; then
					cat "$file"
				else
					rc=$?
					echo "round $round $b $tag $who failed (exit $rc$([ $rc = 124 ] && echo ", timed out after ${RUN_TIMEOUT}s")): ${cmd[*]}; stderr in $file.err" | tee -a "$FAILURES" >&2
					mv "$file" "$file.failed"
				fi
			done
		done
	done
	if [ "$LATMT_MANY" != 0 ]; then
		# Many fibers a rank, fibermpi only: the MPIs' THREAD_MULTIPLE with
		# as many threads would take minutes. OSU's default count deals
		# 10 000 round trips among the fibers.
		dir="$RAW/latency_mt-many/fibermpi"
		mkdir -p "$dir"
		mapfile -t cmd < <(command_of fibermpi latency_mt)
		cmd+=(-t "$LATMT_MANY" -m 8:8)
		echo "== round $round/$ROUNDS latency_mt $LATMT_MANY fibers fibermpi: ${cmd[*]}"
		run1 "$dir/r$round.txt" "${cmd[@]}"
	fi
	for b in "${BENCHES8[@]}"; do
		for who in "${CONTENDERS8[@]}"; do
			dir="$RAW/$b-2x4/$who"
			mkdir -p "$dir"
			mapfile -t cmd < <(command8_of "$who" "$b")
			# shellcheck disable=SC2206 # the flags are words on purpose
			if [ "$b" = allreduce ]; then cmd+=(-m 8:8); fi
			cmd+=($COLL8_ARGS)
			echo "== round $round/$ROUNDS $b 8 ranks $who: ${cmd[*]}"
			run1 "$dir/r$round.txt" "${cmd[@]}"
		done
	done
done

# --- summary -------------------------------------------------------------------
# median_at prints the median over files $2... of the last column of the
# row of size $1 (nothing if there is none).
median_at() {
	local size=$1
	shift
	# Some of the files named do not exist (quick or full runs): not an error.
	{ awk -v s="$size" '$1 == s {print $NF}' "$@" 2>/dev/null || true; } | sort -g |
		awk '{v[NR] = $1} END {if (NR) printf "%g", (v[int((NR+1)/2)] + v[int(NR/2)+1]) / 2}'
}
# bench_median prints the median of benchmark $1 at size $2 (8 or 1048576)
# by contender $3 (fibermpi if not given), over the quick or the full runs.
bench_median() {
	local tag=8b who=${3:-fibermpi}
	[ "$2" = 1048576 ] && tag=1mib
	median_at "$2" "$RAW/$1/$who"/r*-$tag.txt "$RAW/$1/$who"/r*-all.txt
}
# many_ratio says how latency_mt's time per message (one-way time over the
# fibers of a rank) with LATMT_MANY fibers compares with LATMT_THREADS'.
many_ratio() {
	local few many
	few=$(bench_median latency_mt 8)
	many=$(median_at 8 "$RAW"/latency_mt-many/fibermpi/r*.txt)
	if [ -z "$few" ] || [ -z "$many" ]; then
		echo "no ratio (a run failed)"
		return
	fi
	awk -v f="$few" -v m="$many" -v tf="$LATMT_THREADS" -v tm="$LATMT_MANY" 'BEGIN {
		r = (m / tm) / (f / tf)
		printf "medians %g us (-t %d) and %g us (-t %d): %.3g and %.3g us a message, ratio %.2f (issue 12: <= 3 %s)\n", m, tm, f, tf, m / tm, f / tf, r, (r <= 3 ? "holds" : "not met") }'
}
# verdict prints "holds" or "not met" for the awk condition $1 on a ($2)
# and b ($3, if given), or "no figure" if a figure it is given is empty.
verdict() {
	if [ -z "$2" ] || { [ $# -ge 3 ] && [ -z "$3" ]; }; then
		echo "no figure"
		return
	fi
	awk -v a="$2" -v b="${3:-0}" "BEGIN {print ($1) ? \"holds\" : \"not met\"}"
}
# issue12 prints issue 12's lines (fmpirun -n 2, fibermpi's medians, the
# MPIs' from the same run).
issue12() {
	local lat ompi bw rate mt
	lat=$(bench_median latency 8)
	ompi=$(bench_median latency 8 openmpi)
	bw=$(bench_median bw 1048576)
	rate=$(bench_median mbw_mr 8)
	mt=$(bench_median latency_mt 8)
	echo "# issue 12's lines (fibermpi's medians):"
	echo "#   latency 8 B ${lat:-?} us <= 0.4: $(verdict 'a <= 0.4' "$lat"); <= Open MPI's ${ompi:-?} us: $(verdict 'a <= b' "$lat" "$ompi")"
	echo "#   bw 1 MiB ${bw:-?} MB/s >= 13 000: $(verdict 'a >= 13000' "$bw")"
	echo "#   mbw_mr 8 B $(awk -v r="$rate" 'BEGIN {if (r != "") printf "%.2f", r / 1e6; else printf "?"}') M messages/s >= 9: $(verdict 'a >= 9e6' "$rate")"
	if [ "$LATMT_THREADS" = 4 ]; then
		echo "#   latency_mt -t 4 8 B ${mt:-?} us <= 1: $(verdict 'a <= 1' "$mt")"
	fi
}
{
	echo "# make bench-mpi$([ "$QUICK" = 1 ] && echo -quick)$([ "$ONLY8" = 1 ] && echo " (-coll8: the 8-rank collectives only)")$([ "$TCP" = 1 ] && echo " (-tcp: between processes over loopback TCP)"): OSU-method benchmarks, fibermpi vs MPICH vs Open MPI"
	echo "# started $START, finished $(date -u +%FT%TZ); $ROUNDS rounds, interleaved (round > benchmark > contender)"
	echo "# machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(uname -sr)"
	echo "# load average (1/5/15 min) before: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# $("$BUILD/fmpi-osu" -version)"
	echo "# tree: $(git rev-parse --short HEAD 2>/dev/null || echo "not a git checkout")$(git diff --quiet HEAD 2>/dev/null || echo ", with uncommitted changes")"
	echo "# fibermpi: $FMPI_MODE: ${FMPI_LAUNCH[*]:+${FMPI_LAUNCH[*]} }$BUILD/fmpi-osu <bench>"
	echo "# mpich: $(mpichversion 2>/dev/null | head -1 | tr -s '\t ' ' ') ($(mpichversion 2>/dev/null | sed -n 's/^MPICH Device:[[:space:]]*//p')): ${MPICH_LAUNCH[*]} osu_<bench>"
	echo "# openmpi: $(mpirun.openmpi --version 2>/dev/null | head -1): OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ${OMPI_LAUNCH[*]} osu_<bench>"
	echo "# sizes: $(printf '%s; ' "${VARIANTS[@]}")latency_mt: $(bench_args latency_mt)"
	if [ ${#BENCHES8[@]} -gt 0 ]; then
		echo "# 8 ranks (<bench>-2x4): allreduce 8 B, barrier; $COLL8_ARGS; fibermpi: $BUILD/fmpirun -n 2 $BUILD/fmpi-osu <bench> -n 8 (2 processes x 4 endpoints), fibermpi-msg: the same with -coll messages; mpich: mpiexec.mpich -n 8; openmpi: mpirun.openmpi -n 8 --oversubscribe --mca pml ob1"
	fi
	echo "# cross-core one-way time before each round (internal/cmd/corelat; every contender's figures move with it):"
	sed 's/^/#   /' "$CORELAT"
	echo "# raw tables: $RAW/<bench>/<contender>/r<round>-<sizes>.txt"
	if [ -s "$FAILURES" ]; then
		echo "# FAILED runs (left out of the summary):"
		sed 's/^/#   /' "$FAILURES"
	fi
	if [ "$LATMT_MANY" != 0 ]; then
		echo "# latency_mt-many: fibermpi -t $LATMT_MANY -m 8:8 at OSU's default count; $(many_ratio)"
	fi
	if [ "$TCP" = 0 ] && [ "$ONLY8" = 0 ] && [ ${#FMPI_LAUNCH[@]} -gt 0 ]; then
		issue12
	fi
	echo
	"$BUILD/fmpi-osu" compare "$RAW"
} >"$OUT"
cat "$OUT"
echo "== summary in $OUT"
