# mpi-bench-lib.sh is sourced (not run) by the scripts that run fibermpi's
# and bench/osu-c's OSU-method programs side by side under MPICH and Open
# MPI, two processes each: bench-mpi-transport.sh, bench-mpi-rv.sh,
# mpi-rendezvous-ab.sh. They run from the repository's root.

# mpi_bench_setup [fmpi]: makes the directory B (removed on exit), exports
# what the launchers need (root may run Open MPI; UCX reports errors only),
# builds bench/osu-c with each MPI's mpicc into $B/mpich and $B/ompi and,
# given fmpi, fmpi-osu with the tag mpi into $B/fmpi-mpich and
# $B/fmpi-ompi.
mpi_bench_setup() {
	B=$(mktemp -d)
	trap 'rm -rf "$B"' EXIT
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_LOG_LEVEL=error
	make -s -C bench/osu-c MPICC=mpicc.mpich OUT="$B/mpich"
	make -s -C bench/osu-c MPICC=mpicc.openmpi OUT="$B/ompi"
	if [ "${1:-}" = fmpi ]; then
		${GO:-go} build -tags mpi -o "$B/fmpi-mpich" ./cmd/fmpi-osu
		${GO:-go} build -tags mpi,ompi -o "$B/fmpi-ompi" ./cmd/fmpi-osu
	fi
}

# mpi_launcher MPI sets the array L to the command that starts two
# processes under MPI (mpich or ompi).
mpi_launcher() {
	if [ "$1" = mpich ]; then
		L=(mpiexec.mpich -n 2)
	else
		L=(mpirun.openmpi --oversubscribe -n 2)
	fi
}

# val SIZE [COL] prints column COL (default 2) of the last line of an OSU
# table on its input whose first column is SIZE, or nothing.
val() { awk -v s="$1" -v c="${2:-2}" '$1 == s { v = $c; found = 1 } END { if (found) print v }'; }

# host_state classes the host from the corelat lines on its input (one
# read, or the reads before and after a run): "far" if any read puts the
# two vCPUs 100 ns or more apart, "siblings" if any puts them on one core's
# two hardware threads (under 30 ns), "slow" if a CPU ran its work at 130
# µs or more (about half speed: an SMT sibling busy), else "fast".
host_state() {
	awk '{
		for (i = 1; i <= NF; i++) {
			if ($i == "p50") { p = $(i+1); if (p > maxp) maxp = p; if (minp == "" || p < minp) minp = p }
			if ($i == "work") { if ($(i+3) > w) w = $(i+3); if ($(i+7) > w) w = $(i+7) }
		}
	}
	END { print (maxp >= 100 ? "far" : minp < 30 ? "siblings" : w >= 130 ? "slow" : "fast") }'
}

# AWK_MED is an awk function med(a, n): the median of a[1..n] (sorts a).
AWK_MED='
function med(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}'
