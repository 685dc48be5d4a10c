#!/usr/bin/env bash
# Measures what the tracer's hooks cost with tracing off: the comm test
# binary of BASE (default: the merge base with main) and of the working
# tree, run alternately ROUNDS times (default 8) so that both see the same
# load, then compared by benchstat. Benchmarks: BenchmarkPingPong/fiber/8B
# and BenchmarkMessageRate/pairs=1.
set -euo pipefail
base=${1:-$(git merge-base HEAD main)}
rounds=${ROUNDS:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
git archive "$base" | tar -x -C "$tmp/src"
(cd "$tmp/src" && go test -c -o "$tmp/before.test" ./comm)
go test -c -o "$tmp/after.test" ./comm
for _ in $(seq "$rounds"); do
	for side in before after; do
		"$tmp/$side.test" -test.run '^$' -test.bench '^BenchmarkPingPong$/^fiber$/^8B$' >>"$tmp/$side.txt"
		"$tmp/$side.test" -test.run '^$' -test.bench '^BenchmarkMessageRate$/^pairs=1$' -test.benchtime 3000x >>"$tmp/$side.txt"
	done
done
go tool benchstat "$tmp/before.txt" "$tmp/after.txt"
