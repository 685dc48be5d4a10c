// Command redblack runs the red-black SOR codes of Snir 2009 §4.3 (Snir,
// "Proposal for hybrid programming support") on fibermpi, every variant the
// proposal sketches plus the usual MPI+threads baseline, and checks that each
// computes the sequential code's grid bit for bit.
//
//	go run ./examples/redblack                       # every variant, 512×512, checked
//	go run ./examples/redblack -variant hybrid -n 2048 -iters 100 -ranks 2 -threads 2
//	go run ./examples/redblack -variant mpi -n 256 -tol 1e-6 -iters 100000 -ranks 4
//	fmpirun -n 3 redblack -variant mpi,hybrid,funneled     # one stripe per real process
//
// # The computation
//
// The grid is Snir's a[N+2][N+2], here Rows×Cols interior cells with a
// fixed boundary row or column on each side (see Initial). Cell (i, j) is red
// when i+j is even. An iteration is a red sweep, which replaces every red
// cell by
//
//	(a[i][j]+a[i-1][j]+a[i+1][j]+a[i][j-1]+a[i][j+1])*0.2
//
// and then the same black sweep. A red cell's four neighbours are black, so
// the cells of one sweep do not depend on each other: any order, and any
// split of the rows among threads and processes, gives the same bits as long
// as each cell is computed by that expression, evaluated left to right,
// which every variant does through one kernel. The residual of an iteration
// is the largest change of any cell in it (a maximum, so it too is the same
// bits whatever the order of the reduction). A run stops after Iters
// iterations, or with Tol > 0 after the first iteration whose residual is
// below Tol.
//
// On amd64 the kernel is assembly: AVX-512 where the CPU has it, else AVX2
// (chosen at start-up with x/sys/cpu), computing whole runs of columns and
// storing only the cells of the colour (kernel_amd64.go explains the
// stride-2 access and why it is safe). It adds in the same order and does
// not fuse the multiplication, so it gives the bits of the Go loop, which
// is the kernel elsewhere and with -tags purego, and the reference the
// vector kernels are tested and fuzzed against. The C reference in
// bench/redblack-c computes the same grids; bench/redblack-c/compare.sh runs
// it beside this command (-hash) and compares times and grids.
//
// # Variants
//
// Every variant cuts the grid into horizontal stripes of whole rows
// (Config.Ranks, Config.Threads). In one sweep a stripe updates its first
// row and hands it to the stripe above, updates its last row and hands it to
// the stripe below, updates the rows between, and waits for what its two
// neighbours handed to it: the next sweep needs their edge rows.
//
//   - seq (§4.3.1): the whole grid in one goroutine.
//   - threads (§4.3.4, "OpenMP code with no barrier"): Threads fibers on one
//     shared grid; the hand-over is a flag in shared memory that the
//     neighbour waits on (yielding its worker). No global barrier.
//   - mpi (§4.3.3): Ranks ranks (endpoints at ThreadSingle), each with its own
//     stripe and ghost rows; MPI_Scan of the stripe sizes gives each stripe
//     its first row and so the parity of its rows; the hand-over is an Isend
//     of the edge row's cells of the swept color, a Vector datatype of every
//     other cell (Snir's dtype[2]), and an Irecv of the neighbour's into
//     the ghost row, completed by WaitAll after the inner rows are done.
//   - hybrid (§4.3.5): Ranks processes of Threads fibers. Inside a process the
//     fibers hand over through shared memory as in threads; between processes
//     the first fiber of a stripe sends up and the last sends down through
//     endpoints registered to them (MPI_Thread_register), as in mpi. With
//     Endpoints = 2 each of them has an endpoint of its own, so every
//     endpoint has one caller and runs at ThreadSingle, without a lock; with
//     1 they share one at ThreadMultiple.
//   - funneled (§4.3.2's barrier with §4.3.3's messages; not in the proposal): the
//     MPI_THREAD_FUNNELED code Snir 2009 argues against. Ranks processes of
//     Threads fibers update their rows, meet at a barrier, wait while the
//     master alone exchanges the ghost rows, and meet at a second barrier.
//
// threads, mpi and hybrid are one engine (stripes.go) at three settings:
// threads is hybrid with one process and no endpoints, mpi is hybrid with one
// fiber per process.
//
// # Processes in the embedded default
//
// Without a launcher fibermpi runs in one OS process (the embedded default),
// so a run's "processes" are logical: one endpoint.Process creates all
// Ranks×Endpoints endpoints, and each logical process has a slab of its own
// (its stripe and ghost rows), touched only by its own fibers and by
// messages. Endpoint p·E+e belongs to process p; the stripe below process p
// is reached at its first endpoint, the stripe above at its last. Fibers are
// placed on the workers in blocks, so that neighbouring stripes share a
// worker where they can.
//
// # Real processes under a launcher
//
// Started by a launcher (fmpirun, mpiexec.hydra; endpoint.DetectBootstrap),
// the command is one process of a job, and mpi, hybrid and funneled run one
// stripe per real process: -ranks is the number of processes (left out, it
// is taken from the launcher; another value is refused). Each process joins
// the job once (endpoint.Init, at the highest thread level the chosen
// variants need) and, for every run, creates only its own stripe's
// endpoints (CreateEndpoints is collective: the new world holds process 0's
// first, so the ranks are those of the embedded default) and starts only
// its own stripe's fibers. After the last iteration every endpoint of the
// world calls Gatherv, each stripe's first with its rows, and process 0
// assembles the grid. seq and threads, which pass no messages, run at
// process 0 alone, which checks every grid against seq's and prints the
// table; the others print nothing unless -v. Under a launcher the residual
// and the iteration count come out of the same Scan and Allreduce as in
// one process, across the processes now.
//
// # Idle workers
//
// A fiber that waits for a neighbour yields its worker; a worker with nothing
// to run spins, then sleeps (fiber.Config.SleepAfter, here Config.Spin and
// -spin). The fiber default, 1ms of spinning, answers a hand-over fastest on
// a machine of its own. On a shared 2-core machine, where other programs keep
// the cores busy, the spinning worker takes the core from the one that has
// the work: 512×512 iterations measured 5–10 times slower with 1ms than with
// 20µs there. The command's default is 20µs.
//
// # Deviations from the proposal
//
// The proposal warns that its examples "have not (yet) been run – there are
// unlikely to be correct". They are not; this port fixes:
//
//   - §4.3.1: j = 1+(i%2)^color parses as (1+(i%2))^color, which starts some
//     rows at column 0 (the boundary) or 3; and color = !color sits inside the
//     row loop, which makes every row start at the same parity, so the sweeps
//     are not red-black at all. The port starts row i of color c at
//     1+((i+1+c)%2) and changes color after each sweep.
//   - §4.3.3 and §4.3.4: compute(ibegin, iend, ...) loops while i < iend, so
//     compute(1, 1, ...) and compute(stripe_size, stripe_size, ...) update
//     nothing and compute(2, stripe_size-1, ...) misses row stripe_size-1;
//     the bounds are inclusive here. A stripe of one row would be updated
//     twice (first row = last row); here it is updated once.
//   - §4.3.3: columns start at firstcell ∈ {0, 1}, and the datatypes are sent
//     from &a[1][fred^color], one column early: dtype[0], (N+1)/2 cells, must
//     start at column 1 and dtype[1], N/2 cells, at column 2. fred =
//     (lastrow-stripe_size)%2 is the parity of the row above the stripe,
//     lred = lastrow%2 that of its last row: off by one against each other.
//     MPI_Waitall(4-2*boundary) waits for two requests on a one-rank run,
//     which posts none.
//   - §4.3.4: mysignal(color, mythreadid-1) has its arguments swapped; mywait
//     waits for done + boundary ≥ 2, which never holds for a single thread
//     (no neighbours). The port's flags carry the half-sweep number instead
//     of a counter that is reset, so no second set of counters is needed.
//   - §4.3.5: the UP branch receives from myrank-1 into a[0] (it must be the
//     process below into a[stripe_size+1]) and tests myrank < numports;
//     mywait has myrank = numports-1 (an assignment); done is indexed
//     [thread][color] and [color][thread]; the first row signals UP but the
//     branch for thread 0 is DOWN; neighbours are addressed as myrank±1, but
//     with endpoints a rank is an endpoint, not a process; there is no
//     convergence test (while (1)).
//
// Deliberate differences: float64 instead of float; any Rows×Cols; an
// iteration is a red and a black sweep and convergence is tested after each
// (Snir 2009 tests after every color); stripes are split evenly, where the
// proposal would make the first and last slightly larger; every process has the
// same number of endpoints (Snir 2009 gives the edge processes one), so ranks
// are uniform and an edge process's unused endpoint still takes part in the
// collectives; in the embedded default the final grid is assembled by the
// driver from the slabs, which share its address space, rather than
// gathered by messages (under a launcher it is gathered, by Gatherv).
//
// # Measuring
//
// Result.Elapsed times the iterations alone, from the moment every fiber is
// set up (and the set-up's garbage collected) to the moment the last
// finishes, and Result.CPU the process's CPU time meanwhile. BenchmarkRedBlack compares the variants on a 2048×2048
// grid in one run (BenchmarkRedBlackSmall on 512×512, where synchronization
// weighs more); -repeat runs them in rounds from the command:
//
//	go test -run '^$' -bench 'BenchmarkRedBlack$' -count 6 ./examples/redblack
package main
