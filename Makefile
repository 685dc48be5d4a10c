# fibermpi — build, test and measure.
#
#   make test        vet, gofmt check, tests with -race, tests with -tags invariants
#   make bench       every benchmark, -count 6, output in bench.txt (benchstat it)
#   make fuzz-smoke  every fuzz target for FUZZTIME (default 10s) each
#   make lint        vet, gofmt, staticcheck (installed on first use)
#   make bench-mpi   OSU-method benchmarks: fibermpi vs MPICH vs Open MPI, ROUNDS
#                    (6) interleaved rounds, summary in bench-mpi.txt
#   make bench-mpi-quick  the same at 8 B and 1 MiB only, in bench-mpi-quick.txt
#   make redblack-c  the C reference of examples/redblack (gcc, mpicc.mpich,
#                    mpicc.openmpi) into bench/redblack-c/bin
#   make bench-redblack  Go red-black variants vs the C reference, RBROUNDS (5)
#                    interleaved runs at 512×512×200 and 2048×2048×60, grids
#                    checked by hash; tables in bench/redblack-c/bin/*.md

GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
COUNT     ?= 6
# Every package in this module starts or coordinates goroutines, so the
# race detector runs on all of them.
RACEFLAGS ?= -race

.PHONY: all test vet fmtcheck unit invariants bench fuzz-smoke lint tools bench-mpi bench-mpi-quick redblack-c bench-redblack

all: test

test: vet fmtcheck unit invariants

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

tools:
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@latest

lint: vet fmtcheck tools
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck $(PKGS)

# Installs MPICH and Open MPI with apt-get if missing; see scripts/bench-mpi.sh.
bench-mpi:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/bench-mpi.sh

bench-mpi-quick:
	GO=$(GO) ROUNDS=$(COUNT) ./scripts/bench-mpi.sh -quick

redblack-c:
	$(MAKE) -C bench/redblack-c

RBROUNDS ?= 5
bench-redblack: redblack-c
	GO=$(GO) bench/redblack-c/compare.sh -n 512 -iters 200 -runs $(RBROUNDS) | tee bench/redblack-c/bin/table-512.md
	GO=$(GO) bench/redblack-c/compare.sh -n 2048 -iters 60 -runs $(RBROUNDS) | tee bench/redblack-c/bin/table-2048.md
