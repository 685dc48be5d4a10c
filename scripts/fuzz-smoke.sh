#!/usr/bin/env bash
# Runs every fuzz target in the module for $FUZZTIME (default 10s) each.
# A finding fails the run; go test leaves the crasher in testdata/fuzz.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
cd "$(dirname "$0")/.."
status=0
ran=0
for pkg in $($GO list ./...); do
	targets=$($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	for t in $targets; do
		echo "== $pkg $t ($FUZZTIME)"
		ran=$((ran + 1))
		if ! $GO test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" "$pkg"; then
			status=1
		fi
	done
done
echo "fuzz-smoke: $ran targets run"
exit $status
