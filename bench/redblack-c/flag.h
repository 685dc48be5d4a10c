/* Announcement flags of the threaded programs (Snir 2009 §4.3.4's done[][]):
 * the owner stores the number of the last half-sweep whose boundary row is
 * final; the neighbour that reads the row waits until it reaches the
 * half-sweep it needs. Monotone numbers need neither a reset nor a second
 * set of flags per colour. */
#ifndef REDBLACK_FLAG_H
#define REDBLACK_FLAG_H

#include <immintrin.h>
#include <sched.h>
#include <stdatomic.h>

/* flag is one announcement word on a cache line of its own. */
struct flag {
	_Alignas(64) atomic_long done;
	char pad[64 - sizeof(atomic_long)];
};

static inline void flag_publish(struct flag *f, long h)
{
	atomic_store_explicit(&f->done, h, memory_order_release);
}

/* flag_await spins with pause until the flag reaches h, and yields the CPU
 * between looks after a while, as production spin-waits do. */
static inline void flag_await(struct flag *f, long h)
{
	for (int spins = 0; atomic_load_explicit(&f->done, memory_order_acquire) < h; spins++) {
		if (spins < 4096)
			_mm_pause();
		else
			sched_yield();
	}
}

static inline struct flag *flags_new(int n)
{
	struct flag *f = aligned_alloc(64, (size_t)n * sizeof *f);
	if (f)
		for (int k = 0; k < n; k++)
			atomic_init(&f[k].done, 0);
	return f;
}

#endif
