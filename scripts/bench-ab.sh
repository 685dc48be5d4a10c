#!/usr/bin/env bash
# bench-ab.sh: compare two revisions of one package's benchmarks on a noisy
# machine. It builds a test binary from each revision (git archive into a
# temporary directory), runs them interleaved — old then new, then new then
# old, ... — one benchmark pass each per round, and prints benchstat of the
# two. Interleaving gives both binaries the same load, which on a shared
# machine matters more than anything else.
#
# usage: scripts/bench-ab.sh OLD_REV NEW_REV PKG BENCH_REGEXP [ROUNDS] [BENCHTIME]
#   e.g. scripts/bench-ab.sh main HEAD ./comm '^BenchmarkPingPong$/^fiber$/^8B$' 16 0.5s
set -euo pipefail
old=${1:?old revision} new=${2:?new revision} pkg=${3:?package} bench=${4:?benchmark regexp}
rounds=${5:-6} benchtime=${6:-1s}
GO=${GO:-go}
BENCHSTAT=${BENCHSTAT:-benchstat}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in old new; do
  rev=$old; [ "$side" = new ] && rev=$new
  mkdir "$work/$side"
  git archive "$rev" | tar -x -C "$work/$side"
  (cd "$work/$side" && $GO test -c -o "$work/$side.test" "$pkg")
  : > "$work/$side.txt"
done
dir=$(cd "$work/new/$pkg" && pwd) # benchmarks run in their package's directory
for i in $(seq 1 "$rounds"); do
  order="old new"; [ $((i % 2)) = 0 ] && order="new old"
  for side in $order; do
    (cd "$dir" && "$work/$side.test" -test.run '^$' -test.bench "$bench" -test.count 1 \
      -test.benchtime "$benchtime" >> "$work/$side.txt")
  done
done
echo "# $old vs $new, $rounds interleaved rounds of $benchtime; $(uptime)"
$BENCHSTAT "$work/old.txt" "$work/new.txt"
