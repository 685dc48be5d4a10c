# fibermpi — build, test and measure.
#
#   make test        vet, gofmt check, tests with -race, tests with -tags invariants
#   make bench       every benchmark, -count 6, output in bench.txt (benchstat it)
#   make fuzz-smoke  every fuzz target for FUZZTIME (default 10s) each
#   make lint        vet, gofmt, go mod verify, staticcheck, govulncheck
#   make docs        the documentation as pkg.go.dev shows it, on DOCS_ADDR
#   make docs-check  render every package page offline and check it
#   make bench-mpi   OSU-method benchmarks: fibermpi vs MPICH vs Open MPI, ROUNDS
#                    (6) interleaved rounds, summary in bench-mpi.txt (with
#                    issue 12's lines judged from the run's medians)
#   make bench-mpi-quick  the same at 8 B and 1 MiB only, in bench-mpi-quick.txt
#   make bench-mpi-tcp    latency and bw, 8 B and 1 MiB, between processes over
#                    loopback TCP (Open MPI btl/tcp, MPICH's tcp), in bench-mpi-tcp-quick.txt
#   make bench-coll8 bench-mpi-rendezvous only the 8-rank collectives of bench-mpi (fibermpi 2
#                    processes x 4 endpoints vs MPICH and Open MPI -n 8), in
#                    bench-mpi-coll8.txt
#   make lines-by-state  issue 12's and 17's lines that move with the host
#                    (shared-memory latency and mbw_mr, latency and bw over
#                    MPI), COUNT (6) rounds of pairs, each pair classed by
#                    corelat read around it (scripts/lines-by-state.sh)
#   make test-launch the launcher tests under mpiexec.hydra, srun (a one-node
#                    Slurm started for them) and torchrun's variables;
#                    installs MPICH, Slurm and munge when missing (root)
#   make test-mpi    the MPI transport (build tag mpi, cgo) over MPICH and Open
#                    MPI: conformance suite, red-black mpi/hybrid under
#                    mpiexec.mpich and mpirun.openmpi -n 2..4, fmpi-osu smoke;
#                    installs libmpich-dev and libopenmpi-dev when missing (root)
#   make redblack-c  the C reference of examples/redblack (gcc, mpicc.mpich,
#                    mpicc.openmpi) into bench/redblack-c/bin
#   make bench-redblack  Go red-black variants vs the C reference, RBROUNDS (5)
#                    interleaved runs at 512×512×200 and 2048×2048×60, grids
#                    checked by hash; tables in bench/redblack-c/bin/*.md
#
# The tools are pinned by the tool lines of go.mod and run with go tool.

GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
COUNT     ?= 6
# Every package in this module starts or coordinates goroutines, so the
# race detector runs on all of them.
RACEFLAGS ?= -race

.PHONY: all test vet fmtcheck unit invariants bench fuzz-smoke pgo lint tools modverify staticcheck vulncheck docs docs-check \
	bench-mpi bench-mpi-quick bench-mpi-tcp bench-coll8 bench-mpi-rendezvous lines-by-state test-launch test-mpi nocgo redblack-c bench-redblack

all: test

test: vet fmtcheck nocgo unit invariants

# The default build needs no C compiler: the MPI transport is behind the
# build tag mpi.
nocgo:
	CGO_ENABLED=0 $(GO) build ./...

vet:
	$(GO) vet $(PKGS)

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

unit:
	$(GO) test $(RACEFLAGS) -timeout 15m $(PKGS)

# The checking build: invariants compiled in, no race detector (it is slow
# enough already), short mode.
invariants:
	$(GO) test -tags invariants -short -timeout 10m $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -count $(COUNT) $(PKGS) | tee bench.txt

fuzz-smoke:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz-smoke.sh

# Builds every tool pinned in go.mod (go tool builds them on first use too).
tools:
	$(GO) build tool

lint: vet fmtcheck modverify staticcheck vulncheck

modverify:
	$(GO) mod verify

staticcheck:
	$(GO) tool staticcheck $(PKGS)

# Skipped with a loud message (not failed) when no vulnerability database can
# be had; VULNCHECK_REQUIRED=1 makes that fail. See scripts/vulncheck.sh.
vulncheck:
	GO=$(GO) ./scripts/vulncheck.sh

DOCS_ADDR ?= localhost:6060

# pkgsite serving this module from the working tree, as pkg.go.dev would
# render it. GOPRIVATE keeps it from asking outside services about the
# module (it looks up deps.dev and codewiki.google for every page otherwise).
docs:
	GOPRIVATE=github.com/fibermpi/fibermpi $(GO) tool pkgsite -http $(DOCS_ADDR) .

# Renders every package page with pkgsite and headless Chromium inside a
# network namespace with only loopback, and checks each page. Needs root
# (unshare); installs Debian's chromium when missing.
docs-check:
	GO=$(GO) ./scripts/docs-check.sh

# Collects cmd/fmpi-osu/default.pgo, the CPU profile go build optimizes
# fmpi-osu with, from a set of benchmark runs; see scripts/pgo-profile.sh.
pgo:
	GO=$(GO) ./scripts/pgo-profile.sh

# Installs MPICH and Open MPI with apt-get if missing; see scripts/bench-mpi.sh.
bench-mpi:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/bench-mpi.sh

bench-mpi-quick:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/bench-mpi.sh -quick

bench-mpi-tcp:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/bench-mpi.sh -tcp -quick

bench-coll8:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/bench-mpi.sh -coll8

lines-by-state:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/lines-by-state.sh

# fmpi-osu over the MPI transport, moved messages (the default) against
# RTR and Put (FIBERMPI_MPI_RENDEZVOUS=put), with raw MPI, in one run.
bench-mpi-rendezvous:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/mpi-rendezvous-ab.sh

# Installs MPICH, slurm-wlm and munge with apt-get if missing, starts a
# one-node Slurm cluster, runs internal/enginetest and bootstrap with the
# launchers required (Slurm's tests skip with the reason if its daemons
# cannot start), stops the cluster. See scripts/engines.sh.
test-launch:
	GO=$(GO) ./scripts/engines.sh test

test-mpi:
	GO=$(GO) ./scripts/test-mpi.sh

redblack-c:
	$(MAKE) -C bench/redblack-c

RBROUNDS ?= 5
bench-redblack: redblack-c
	GO=$(GO) bench/redblack-c/compare.sh -n 512 -iters 200 -runs $(RBROUNDS) | tee bench/redblack-c/bin/table-512.md
	GO=$(GO) bench/redblack-c/compare.sh -n 2048 -iters 60 -runs $(RBROUNDS) | tee bench/redblack-c/bin/table-2048.md
