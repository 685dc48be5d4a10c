#!/usr/bin/env bash
# Startup under MPICH's own launcher: `mpiexec.hydra -n 2` of examples/hello
# (fibermpi: PMI-1 bootstrap, shared memory, a token round, Finalize) and of
# MPICH's C hello (bench/mpi-hello: MPI_Init, MPI_Finalize), interleaved, RUNS
# (20) each; prints each one's median and the ratio. Installs MPICH with
# apt-get when missing (scripts/engines.sh install).
set -euo pipefail
GO=${GO:-go}
RUNS=${RUNS:-20}
cd "$(dirname "$0")/.."
command -v mpiexec.hydra >/dev/null 2>&1 && command -v mpicc.mpich >/dev/null 2>&1 || {
	./scripts/engines.sh install
	command -v mpicc.mpich >/dev/null 2>&1 || apt-get install -y -qq libmpich-dev >/dev/null
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
$GO build -o "$dir/hello" ./examples/hello
mpicc.mpich -O2 -o "$dir/chello" bench/mpi-hello/hello.c
median() {
	local sorted n
	sorted=($(printf '%s\n' "$@" | sort -n))
	n=${#sorted[@]}
	if ((n % 2)); then echo "${sorted[n / 2]}"; else echo $(((sorted[n / 2 - 1] + sorted[n / 2]) / 2)); fi
}
fib=()
mpich=()
for _ in $(seq "$RUNS"); do
	for prog in hello chello; do
		start=$(date +%s%N)
		mpiexec.hydra -n 2 "$dir/$prog" >/dev/null
		us=$((($(date +%s%N) - start) / 1000))
		if [ $prog = hello ]; then fib+=("$us"); else mpich+=("$us"); fi
	done
done
f=$(median "${fib[@]}")
m=$(median "${mpich[@]}")
echo "mpiexec.hydra -n 2 examples/hello (fibermpi): median of $RUNS runs: $f µs"
echo "mpiexec.hydra -n 2 bench/mpi-hello (MPICH):   median of $RUNS runs: $m µs"
awk -v f="$f" -v m="$m" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
	'BEGIN { printf "ratio fibermpi/MPICH: %.2f (load average: %s)\n", f / m, load }'
