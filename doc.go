// Package fibermpi is message passing for threads in Go: SPMD programs whose
// ranks are fibers, goroutines or processes, with typed communicators,
// MPI's point-to-point and collective operations, and requests that are
// futures. This page is the user's tour; the packages do the work, and
// doc/DESIGN.md in the module explains how they are built.
//
// # Install
//
//	go get github.com/fibermpi/fibermpi
//
// Pure Go, no cgo, no MPI installation: a program runs as it is, its ranks
// inside one process (the embedded default), or as several processes under
// the fmpirun launcher (go install github.com/fibermpi/fibermpi/cmd/fmpirun).
//
// # A first program
//
// endpoint.Run starts k ranks and waits for them; comm.World gives each rank
// its typed communicator, whose buffers are slices of a fixed-size type:
//
//	err := endpoint.Run(4, func(ep *endpoint.Endpoint) error {
//		c, err := comm.World[float64](ep)
//		if err != nil {
//			return err
//		}
//		sum := make([]float64, 1)
//		if err := c.Allreduce([]float64{float64(c.Rank())}, sum, comm.Sum[float64]()); err != nil {
//			return err
//		}
//		fmt.Println("rank", c.Rank(), "of", c.Size(), "sum", sum[0])
//		return nil
//	})
//
// A rank that returns an error or panics ends the job, as with errgroup and
// MPI_Abort: every other rank's blocked call returns an error wrapping
// comm.ErrAborted, and Run returns the first failure. The Examples below are
// whole programs: Monte-Carlo π, a heat equation with halo exchanges, a
// pipeline of goroutine ranks, a select over a collective.
//
// # Fibers or goroutines
//
// endpoint.Run runs each rank on a fiber: a user-level thread that a
// worker (an OS thread) runs among thousands of others. A fiber blocked in
// a fibermpi call (Recv, Wait, a collective) yields to its worker for the
// cost of a coroutine switch, so a million fibers fit on a few cores. The
// price: a fiber must not block in ordinary Go — a channel, select, a
// mutex, time.Sleep — which stops every fiber of its worker; package fiber
// has the waits that yield (fiber.Sleep, fiber.Event, fiber.WaitGroup,
// fiber.Mutex).
//
// endpoint.RunGoroutines runs each rank on a plain goroutine: blocking
// calls park it the Go way, and the rank may use channels, select and
// mutexes freely. Same signature, same error handling; no package fiber
// needed. Choose goroutines for ranks that mix message passing with
// ordinary concurrent Go, fibers for very many ranks.
//
// # Endpoints
//
// An endpoint is a rank: the resources that let one thread communicate
// independently of the others (Snir 2009; Sridharan et al. 2014). Run
// makes them for you. A program that manages its own threads calls
// endpoint.Init, Process.CreateEndpoints(k), and registers each thread
// with its endpoint (Endpoint.Register); the thread level
// (endpoint.ThreadSingle ... ThreadMultiple) says how many threads may use
// one endpoint.
//
// # Messages and futures
//
// comm.Comm[T] sends and receives []T: Send, Recv, Sendrecv, Probe, and the
// nonblocking Isend and Irecv, which return a *comm.Request[T]. Every
// request — point-to-point or a nonblocking collective's *comm.CollRequest —
// is a comm.Waitable: Wait, Test, WaitContext, and Done for select in a
// goroutine; comm.WaitAll, WaitAllContext, WaitAny and WaitSome take any
// mix. comm.ProcNull is the null neighbour: sends to it and receives from
// it complete at once, so edge ranks need no special case. Layouts that are
// not contiguous (a column, every other element) go through package
// datatype and Comm.SendLayout.
//
// # Collectives and topologies
//
// Barrier, Bcast, Reduce, Allreduce, Scan, Gather(v), Scatter(v),
// Allgather(v), Alltoall(v) and ReduceScatter, each with a nonblocking
// I-form; Dup, Split and Create make new communicators; comm.CartCreate
// lays ranks on a Cartesian grid, whose Shift gives halo neighbours and
// whose NeighborAllgather and NeighborAlltoall exchange with them.
//
// # Testing
//
// Package commtest runs SPMD code under go test: commtest.Run(t, n, fn)
// gives each rank a *commtest.T whose Fatal and Errorf work inside a fiber
// or a goroutine rank.
//
// # Many processes
//
// The same program runs as several processes under fmpirun:
//
//	fmpirun -n 4 ./myprog
//
// Each process then holds one rank of the world (or the endpoints it
// creates); processes of one node talk through shared memory, of different
// nodes through TCP. Under mpiexec (Hydra), Slurm's srun or torchrun's
// environment the same binary finds its job without fmpirun (see package
// bootstrap). Built with -tags mpi, it runs over the site's MPI under that
// MPI's own launcher instead (package rdma/mpi).
//
// # Speed
//
// A message's path runs through several packages (comm, endpoint, match, a
// transport), and the Go compiler inlines little across them by itself.
// Profile-guided optimization does: a CPU profile of a representative run,
// saved as default.pgo in the program's main package, makes go build
// inline the hot calls and devirtualize the hot interface calls. For
// fibermpi's own benchmark command (cmd/fmpi-osu, whose profile
// scripts/pgo-profile.sh collects) that is about a tenth fewer instructions
// a message and a fifth more small messages a second between two
// processes (BENCHMARKS.md). Record a profile with runtime/pprof during a
// run of your program, or start from cmd/fmpi-osu/default.pgo.
//
// # Where to go next
//
//   - package comm: Comm[T], requests, collectives, errors;
//   - package endpoint: processes, endpoints, thread levels, Options, the
//     job's failure semantics;
//   - package fiber: workers and fibers, and the waits that yield;
//   - package datatype: derived layouts;
//   - examples/redblack: the red-black SOR codes of Snir 2009 §4.3, every
//     variant, checked against the sequential code;
//   - doc/DESIGN.md: the design, for contributors; doc/papers.md: the papers
//     cited as "Author Year §section" throughout the documentation.
//
// This package itself tells the release: Version, VersionInfo.
package fibermpi
