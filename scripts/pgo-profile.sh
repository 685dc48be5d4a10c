#!/usr/bin/env bash
# pgo-profile.sh: collect the CPU profile that the Go compiler uses to
# optimize cmd/fmpi-osu (profile-guided optimization: `go build` reads a
# main package's default.pgo by itself, -pgo=auto). With it, the calls of
# the message path inline across packages and the hot interface calls are
# devirtualized: about a tenth fewer instructions a message
# (scripts/instr-per-op.sh with GOFLAGS=-pgo=FILE), more in time (see
# BENCHMARKS.md, issue 12, session 15).
#
# It builds fmpi-osu and fmpirun without a profile (-pgo=off, so that the
# result does not depend on the profile in the tree), runs a set of
# OSU-method benchmarks with `fmpi-osu -cpuprofile` between two processes
# over shared memory and once in one process, and, when MPICH's
# development package is installed, between two processes over the MPI
# transport (-tags mpi under mpiexec.mpich). It merges every process's
# profile into OUT (cmd/fmpi-osu/default.pgo). A profile a little older
# than the code is harmless: the compiler ignores what no longer matches.
#
# usage: scripts/pgo-profile.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/cmd/fmpi-osu/default.pgo}
GO=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/prof"
(cd "$root" && $GO build -pgo=off -o "$work/bin/" ./cmd/fmpi-osu ./cmd/fmpirun)

# Each workload runs a few seconds, so that each weighs about the same.
run() { # name, then the command: a launcher, fmpi-osu and its arguments
	local name=$1
	shift
	echo "pgo-profile: $name" >&2
	"$@" -cpuprofile "$work/prof/$name" >/dev/null
}
osu=$work/bin/fmpi-osu
two=("$work/bin/fmpirun" -n 2 "$osu")
run latency "${two[@]}" latency -m 8:8 -i 3000000
run latency-sizes "${two[@]}" latency -m 64:65536 -i 100000
run bw "${two[@]}" bw -m 8:1048576 -i 1000
run mbw_mr "${two[@]}" mbw_mr -m 8:8 -i 200000
run latency_mt "${two[@]}" latency_mt -t 4 -m 8:8 -i 1000000
run allreduce "${two[@]}" allreduce -n 8 -m 8:65536 -i 20000
run barrier "${two[@]}" barrier -n 8 -i 500000
# One rank a process: the small blocking collectives run from the caller
# (comm/coll_now.go).
run allreduce-direct "${two[@]}" allreduce -m 4:64 -i 200000
run barrier-direct "${two[@]}" barrier -i 1000000
run inprocess "$osu" latency -m 8:8 -i 3000000

if command -v mpiexec.mpich >/dev/null 2>&1 && pkg-config --exists mpich 2>/dev/null; then
	(cd "$root" && $GO build -pgo=off -tags mpi -o "$work/bin/fmpi-mpi" ./cmd/fmpi-osu)
	mpi=(env FIBERMPI_TRANSPORT=mpi UCX_LOG_LEVEL=error mpiexec.mpich -n 2 "$work/bin/fmpi-mpi")
	run mpi-latency "${mpi[@]}" latency -m 8:8 -i 1000000
	run mpi-bw "${mpi[@]}" bw -m 8:1048576 -i 500
	run mpi-latency_mt "${mpi[@]}" latency_mt -t 4 -m 8:8 -i 300000
else
	echo "pgo-profile: no MPICH development package (make test-mpi installs it): the profile leaves out the MPI transport" >&2
fi

$GO tool pprof -proto "$work"/prof/* >"$work/merged.pgo"
mv "$work/merged.pgo" "$out"
echo "pgo-profile: wrote $out from $(ls "$work/prof" | wc -l) profiles" >&2
