#!/usr/bin/env bash
# Renders every package page of this module as pkg.go.dev would (pkgsite, the
# version pinned in go.mod, serving the working tree) in headless Chromium,
# and checks each page (internal/cmd/docscheck): the license detected and
# redistributable, the overview, the examples (DOCS_EXAMPLES must have some).
#
# Nothing leaves the machine: pkgsite and Chromium run inside a network
# namespace of their own (unshare -n) whose only interface is loopback, so
# any connection to another address fails in the kernel before a packet is
# sent. On top of that pkgsite is told the module is private (GOPRIVATE, so
# it asks no outside service about it) and has no module proxy (GOPROXY=off);
# Chromium resolves no host name and sends whatever it requests on its own
# (update checks and the like) to a closed loopback port. Both run under
# strace, and the check fails on any attempt to connect to or send to an
# address that is not loopback, with one exception it counts and shows:
# Chromium's IPv6 route probe, a connect on a datagram socket to
# [2001:4860:4860::8888]:443, which sends no packet (it asks the kernel for
# a route, and the namespace has none); Chromium has no switch to turn it
# off.
#
# Needs root (or unprivileged user namespaces, then unshare -rn is used);
# installs Debian's chromium, strace, iproute2 and curl when missing.
#
#   DOCS_OUT       where pages, screenshots and logs go (default: a new
#                  temporary directory, printed at the end)
#   DOCS_PORT      pkgsite's port inside the namespace (default 6062)
#   DOCS_EXAMPLES  packages, relative to the module, that must show examples
#   DOCS_LICENSE   the license every page must show (default BSD-3-Clause)
#   DOCS_SHOTS     1 (default): a screenshot of every page too; 0: none
set -euo pipefail
GO=${GO:-go}
cd "$(dirname "$0")/.."
start=$SECONDS

OUT=${DOCS_OUT:-$(mktemp -d -t fibermpi-docs.XXXXXX)}
PORT=${DOCS_PORT:-6062}
EXAMPLES=${DOCS_EXAMPLES:-.,comm,endpoint,fiber,commtest}
LICENSE_NAME=${DOCS_LICENSE:-BSD-3-Clause}
SHOTS=${DOCS_SHOTS:-1}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/pages" "$OUT/shots" "$OUT/trace"
mkdir -p "$OUT/pages" "$OUT/shots" "$OUT/trace" "$OUT/bin"

log() { echo "docs-check: $*"; }

# The tools, from Debian, when missing.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v strace >/dev/null 2>&1 || missing+=(strace)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		log "needs ${missing[*]} (Debian packages), and installing them needs root"
		exit 1
	fi
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq "${missing[@]}" >/dev/null ||
		{ apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }
fi

if [ "$(id -u)" = 0 ]; then
	netns=(unshare -n)
else
	netns=(unshare -rn) # a user namespace makes us root inside it
fi

# Everything that needs the module proxy happens here, outside the
# namespace: the two programs, and the modules of every package pkgsite
# will load (this module's, with -list=false).
log "building pkgsite and docscheck"
$GO build -o "$OUT/bin/pkgsite" golang.org/x/pkgsite/cmd/pkgsite
$GO build -o "$OUT/bin/docscheck" ./internal/cmd/docscheck
$GO list -e -deps -test ./... >/dev/null
module=$($GO list -m)
pkgs=$($GO list ./...)
log "setup done in $((SECONDS - start)) s"

cat >"$OUT/bin/inside.sh" <<'EOF'
#!/usr/bin/env bash
# Runs inside the network namespace.
set -euo pipefail
ip link set lo up
links=$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
if [ "$links" != "lo " ]; then
	echo "docs-check: the namespace has interfaces besides loopback: $links" >&2
	exit 1
fi
if ip route get 192.0.2.1 >/dev/null 2>&1 || ip -6 route get 2001:db8::1 >/dev/null 2>&1; then
	echo "docs-check: the namespace has a route off this host" >&2
	exit 1
fi
echo "docs-check: in a network namespace with only loopback (no route off this host)"

trace=(strace -f -qq --seccomp-bpf -yy -e trace=connect,sendto,sendmsg -e signal=none)
env GOPROXY=off GOPRIVATE="$MODULE" GONOSUMDB="$MODULE" GOTOOLCHAIN=local GOTELEMETRY=off \
	"${trace[@]}" -o "$OUT/trace/pkgsite.strace" \
	bash -c 'echo $$ >"$0/pkgsite.pid"; exec "$0/pkgsite" -list=false -http "127.0.0.1:$1" .' "$OUT/bin" "$PORT" \
	>"$OUT/pkgsite.log" 2>&1 &
tracer=$!
stop() {
	[ -f "$OUT/bin/pkgsite.pid" ] && kill "$(cat "$OUT/bin/pkgsite.pid")" 2>/dev/null || true
	wait "$tracer" 2>/dev/null || true
}
trap stop EXIT
up=0
for _ in $(seq 1 240); do
	if curl -fs -o /dev/null "http://127.0.0.1:$PORT/"; then
		up=1
		break
	fi
	sleep 0.5
done
if [ "$up" != 1 ]; then
	echo "docs-check: pkgsite did not answer in 120 s; its log:" >&2
	cat "$OUT/pkgsite.log" >&2
	exit 1
fi

export HOME="$OUT/chrome-home"
chrome=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars
	--no-first-run --no-default-browser-check --disable-default-apps --disable-extensions
	--disable-sync --disable-background-networking --disable-component-update --disable-breakpad
	--metrics-recording-only --user-data-dir="$OUT/chrome-profile"
	--proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
n=0
for p in $PKGS; do
	n=$((n + 1))
	url="http://127.0.0.1:$PORT/$p"
	page="$OUT/pages/$p.html"
	name=${p#"$MODULE"}
	name=${name#/}
	name=${name:-root}
	mkdir -p "$(dirname "$page")"
	timeout 120 "${trace[@]}" -o "$OUT/trace/chromium-$n-dom.strace" \
		"${chrome[@]}" --dump-dom "$url" >"$page" 2>>"$OUT/chromium.log"
	if [ "$SHOTS" = 1 ]; then
		timeout 120 "${trace[@]}" -o "$OUT/trace/chromium-$n-shot.strace" \
			"${chrome[@]}" --window-size=1280,1600 --screenshot="$OUT/shots/${name//\//_}.png" "$url" \
			>>"$OUT/chromium.log" 2>&1
	fi
	echo "docs-check: rendered $p"
done
EOF
chmod +x "$OUT/bin/inside.sh"

log "rendering $(echo "$pkgs" | wc -l) package pages in the namespace"
OUT="$OUT" PORT="$PORT" MODULE="$module" PKGS="$pkgs" SHOTS="$SHOTS" "${netns[@]}" "$OUT/bin/inside.sh"
log "rendered in $((SECONDS - start)) s"

traces=$(find "$OUT/trace" -name '*.strace' | sort | paste -sd, -)
status=0
"$OUT/bin/docscheck" -pages "$OUT/pages" -license "$LICENSE_NAME" -examples "$EXAMPLES" \
	-trace "$traces" -probe '[2001:4860:4860::8888]:443' ./... \
	>"$OUT/report.txt" || status=$?
cat "$OUT/report.txt"
log "pages in $OUT/pages, screenshots in $OUT/shots, logs and report.txt in $OUT"
log "$([ $status = 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $status
