// Package mpi is fibermpi's only door to a C MPI library, in builds with
// the tag mpi (cgo): the initialization on one locked OS thread, the lock
// that serializes every other call, errors as Go values, and the few
// operations the rdma/mpi transport and the MPI bootstrap need (a ring of
// preposted receives, a queue of copied sends, point-to-point transfers of
// pinned Go memory, nonblocking collectives). Without the tag the package
// is empty and nothing imports it.
//
// # Threads
//
// MPI is initialized at MPI_THREAD_SERIALIZED by a goroutine locked to its
// OS thread for the life of the process (the MPI main thread), which also
// finalizes it. Every other call is made by whichever goroutine holds the
// package's lock (Lock, TryLock): fibermpi's progress is driven by the
// worker or goroutine that polls, so the thread that calls MPI changes,
// but never two at once — exactly SERIALIZED. FUNNELED would force every
// send through a hand-off to one server thread: on the measured 2-core
// machine that hand-off (a cross-thread wake-up and two cache-line
// transfers per message) cost more than the whole MPI send. Below
// SERIALIZED only MPI_THREAD_SINGLE is left, which a Go process, always
// several threads, cannot promise. The level has a price with Open MPI,
// which takes its internal locks at every level above SINGLE: 8-byte
// osu_latency, 0.16–0.17 µs at MPI_Init against 0.21–0.23 at SERIALIZED
// (BENCHMARKS.md, issue 17, session 26); MPICH locks only at MULTIPLE.
//
// No call holds the lock while it waits for another process: blocking
// operations (collectives, a transfer's completion) are started
// nonblocking, then tested with the lock released between tests, so that
// a transport's progress can answer its peers meanwhile.
//
// # Build
//
// -tags mpi links MPICH through pkg-config (name mpich); -tags mpi,ompi
// links Open MPI (pkg-config name ompi); -tags mpi,mpi_nopkgconfig uses no
// pkg-config: set CGO_CFLAGS and CGO_LDFLAGS (or CC=mpicc) for the site's
// MPI.
package mpi
