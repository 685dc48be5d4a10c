// Package packet provides packets and the locality-aware packet pool of
// fibermpi (Dang et al. 2016b §3.3, Dang et al. 2016a §3.3).
//
// # Packets
//
// A Packet is a fixed-size buffer that carries one eager message or one
// control message (rendezvous RTS/RTR/done, …): a header of exactly one
// 64-byte cache line — context id, source, tag, sequence number, length,
// kind, and protocol fields such as a remote buffer descriptor and a
// request id — followed by a payload whose size is fixed when the pool is
// made (8 KiB by default). All packets of a pool are carved out of one
// slab at creation; the slab holds no Go pointers, so the garbage
// collector never scans it. Packets are runtime-internal: they are never
// handed to end users, and no slice of a payload outlives the packet's
// return to its pool.
//
// # The pool
//
// A central lock-free stack of packets would make every core fight for
// one cache line, and would hand a packet last written on one core to
// another core. So, as in Dang et al., a Pool keeps one private deque per
// worker (a goroutine locked to an OS thread that runs fibers) and a shared
// pool:
//
//	 worker 0     worker 1
//	┌────────┐   ┌────────┐
//	│  top   │   │  top   │  ◄─ the owner's Get and Put (LIFO)
//	│   ⋮    │   │   ⋮    │
//	│ bottom │   │ bottom │  ─► stolen when the shared pool is empty
//	└───┬────┘   └───┬────┘
//	    │ full: the bottom moves down
//	    ▼            ▼
//	┌─────────────────────┐
//	│ shared stack        │  ◄─ Get and Put with NoWorker
//	└─────────────────────┘
//
// Get(w) takes the top of worker w's deque — the packet w used last, whose
// lines are most likely still in w's cache — and falls back to the shared
// pool, then to stealing the bottom (least recently used) packet of a
// random other deque. Put(w, p) pushes on top of w's deque; when the
// deque is full its bottom packet goes to the shared pool, like a cache
// evicting its least recently used line to memory. Callers without a deque
// (the progress engine, plain goroutines) pass NoWorker: they take from the
// shared pool first and steal second, and return to the shared pool.
//
// The private deque is a bounded Chase–Lev deque of packet indices. The
// owner's push and pop each cost one atomic add on its own cache line and
// no lock: a thief claims the bottom entry with a CAS and reads it only
// afterwards, and a per-slot generation keeps the owner from reusing a
// slot a thief is still reading, so slots are written with plain stores.
// The shared pool is a Treiber stack whose head packs a 32-bit packet
// index with a 32-bit tag, so it is ABA-safe without allocation. Neither
// Get nor Put allocates; Get also zeroes the header it hands out.
//
// # Rejected designs
//
// A single lock-free stack (Dang et al.'s starting point) and a buffered
// channel make every core contend for one cache line; sync.Pool drops its
// contents at every GC, which would make the pool's size unbounded and
// its exhaustion invisible. Dang et al.'s spinlocked ring costs two atomic
// operations per owner operation instead of one. Textbook Chase–Lev
// (thief reads the slot before its CAS) needs the owner's slot writes to
// be atomic exchanges too, one more locked instruction per Put.
//
// # Exhaustion is back-pressure
//
// The pool never silently drops a request and never allocates without
// bound. Get returns nil when every packet is in use; the caller makes
// progress (which returns packets) and tries again, or waits. With
// Config.Overflow set to OverflowGrow, Get instead adds slabs of GrowBy
// packets up to MaxPackets and returns nil only beyond that.
//
// # Ownership and checking builds
//
// Deque w belongs to worker w: only that worker may pass w to Get and Put.
// A packet belongs to exactly one party at a time — the pool or whoever
// got it — and is handed on only through synchronising operations. Built
// with -tags invariants, the package catches a double Put, the use of a
// packet's accessors after Put, writes into a free packet (its header and
// payload are poisoned on Put and checked on Get), and two goroutines
// using one worker index at once.
package packet
