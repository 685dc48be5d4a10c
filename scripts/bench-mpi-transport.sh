#!/usr/bin/env bash
# fmpi-osu over the MPI transport (build tag mpi, FIBERMPI_TRANSPORT=mpi)
# beside bench/osu-c's OSU-method C programs over the same MPI, ROUNDS
# interleaved rounds (default 3): latency at 8 B, bw at 1 MiB, latency_mt
# -t 4 at 8 B (the C one at MPI_THREAD_MULTIPLE); with latency, the bare
# transport's ping-pong (internal/cmd/mpipingpong: rdma/mpi without the
# endpoint stack), with packets and with -eager (SendEager/ReceiveEager,
# the path fmpi-osu's messages take), bench/osu-c's osu_ring_latency
# (the transport's MPI calls, in C: what the pattern costs without Go), and
# osu_latency_serialized (raw latency at MPI_THREAD_SERIALIZED, the level
# the transport runs at: Open MPI locks at every level above SINGLE).
# Prints one line per run, and before each round internal/cmd/corelat's
# line (the host's cross-core time and each CPU's speed, which every
# contender's figures follow: BENCHMARKS.md, issues 12 and 17). At the end
# it sums up issue 17's lines per MPI from the rounds: the medians, the
# median of the per-round latency differences and bandwidth ratios, and
# whether each line holds (a run that printed nothing is left out); the
# latency difference also by the host's state before each round (fast,
# slow, siblings or far: mpi-bench-lib.sh's host_state), since fibermpi's
# path, more instructions than raw MPI's, slows more with a slow or shared
# CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ROUNDS=${ROUNDS:-3}
. scripts/mpi-bench-lib.sh
mpi_bench_setup fmpi
$GO build -tags mpi -o "$B/bare-mpich" ./internal/cmd/mpipingpong
$GO build -tags mpi,ompi -o "$B/bare-ompi" ./internal/cmd/mpipingpong
$GO build -o "$B/corelat" ./internal/cmd/corelat
for r in $(seq "$ROUNDS"); do
	cl=$("$B/corelat" 2>&1)
	echo "round $r $cl"
	echo "state $r $(echo "$cl" | host_state)" >> "$B/rounds.txt"
	for mpi in mpich ompi; do
		mpi_launcher $mpi
		for b in "latency 8" "bw 1048576" "latency_mt 8"; do
			set -- $b
			ex=(); [ "$1" = latency_mt ] && ex=(-t 4)
			f=$(FIBERMPI_TRANSPORT=mpi timeout 120 "${L[@]}" "$B/fmpi-$mpi" "$1" "${ex[@]}" -m "$2:$2" 2>/dev/null | val "$2")
			c=$(timeout 120 "${L[@]}" "$B/$mpi/osu_$1" "${ex[@]}" -m "$2:$2" 2>/dev/null | val "$2")
			bare=
			if [ "$1" = latency ]; then
				bare=" raw-serialized $(timeout 120 "${L[@]}" "$B/$mpi/osu_latency_serialized" -m "$2:$2" 2>/dev/null | val "$2")"
				bare+=" bare-transport $(timeout 120 "${L[@]}" "$B/bare-$mpi" -size "$2" 2>/dev/null | val "$2")"
				bare+=" bare-eager $(timeout 120 "${L[@]}" "$B/bare-$mpi" -eager -size "$2" 2>/dev/null | val "$2")"
				bare+=" c-ring $(timeout 120 "${L[@]}" "$B/$mpi/osu_ring_latency" -m "$2:$2" 2>/dev/null | val "$2")"
			fi
			echo "round $r $mpi $1 $2 fibermpi-over-mpi $f raw-$mpi $c$bare" | tee -a "$B/rounds.txt"
		done
	done
done

# lines prints issue 17's three lines for one MPI from the rounds' lines
# ("round R MPI BENCH SIZE fibermpi-over-mpi F raw-MPI C ...").
lines() {
	awk -v mpi="$1" "$AWK_MED"'
	# A run that printed nothing leaves its name followed by the next name.
	function after(name,    i) {
		for (i = 5; i < NF; i++) if ($i == name) return $(i+1) ~ /^[0-9.]+$/ ? $(i+1) : ""
		return ""
	}
	$1 == "state" { st[$2] = $3; next }
	$3 == mpi {
		b = $4; fv = after("fibermpi-over-mpi"); cv = after("raw-" mpi)
		if (fv != "" && cv != "") { n[b]++; f[b, n[b]] = fv; c[b, n[b]] = cv }
		if (b == "latency" && fv != "" && cv != "") { s = ($2 in st) ? st[$2] : "unknown"; ns_[s]++; ds[s, ns_[s]] = fv - cv }
		rs = after("raw-serialized")
		if (b == "latency" && fv != "" && rs != "") { ns++; sv[ns] = rs; sd[ns] = fv - rs }
	}
	END {
		if (!n["latency"] || !n["bw"] || !n["latency_mt"]) { printf "%s: not every benchmark ran\n", mpi; exit }
		for (i = 1; i <= n["latency"]; i++) { x[i] = f["latency", i]; y[i] = c["latency", i]; d[i] = x[i] - y[i] }
		k = n["latency"]; fl = med(x, k); cl = med(y, k); dl = med(d, k)
		printf "%s latency 8 B: fibermpi %.3f us, raw %.3f us (medians of %d), median per-round difference %+.3f us: line raw + 0.3 %s\n", mpi, fl, cl, k, dl, (dl <= 0.3 ? "holds" : "not met")
		if (ns) printf "%s   (raw at MPI_THREAD_SERIALIZED %.3f us; fibermpi over it: median per-round difference %+.3f us)\n", mpi, med(sv, ns), med(sd, ns)
		# The same difference by the state of the host before each round (corelat:
		# it may change within the round).
		for (s in ns_) {
			delete x
			for (i = 1; i <= ns_[s]; i++) x[i] = ds[s, i]
			printf "%s   rounds %s: %d, median per-round difference %+.3f us\n", mpi, s, ns_[s], med(x, ns_[s])
		}
		delete x; delete y; delete d
		for (i = 1; i <= n["bw"]; i++) { x[i] = f["bw", i]; y[i] = c["bw", i]; d[i] = x[i] / y[i] }
		k = n["bw"]; fb = med(x, k); cb = med(y, k); rb = med(d, k)
		printf "%s bw 1 MiB: fibermpi %.0f MB/s, raw %.0f MB/s, ratio of medians %.3f, median per-round ratio %.3f: line 0.9x raw %s\n", mpi, fb, cb, fb / cb, rb, (fb / cb >= 0.9 ? "holds" : "not met")
		delete x; delete y
		for (i = 1; i <= n["latency_mt"]; i++) { x[i] = f["latency_mt", i]; y[i] = c["latency_mt", i] }
		k = n["latency_mt"]; fm = med(x, k); cm = med(y, k)
		printf "%s latency_mt -t 4: fibermpi %.2f us, raw THREAD_MULTIPLE %.2f us: line <= raw %s\n", mpi, fm, cm, (fm <= cm ? "holds" : "not met")
	}' "$B/rounds.txt"
}
echo "== issue 17's lines, $ROUNDS rounds"
for mpi in mpich ompi; do
	lines $mpi
done
