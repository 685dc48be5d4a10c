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
