/* rtt: how far apart the machine's first two CPUs are now. Two threads,
 * bound to the first two CPUs the process may use, pass a number back and
 * forth through a cache line; the program prints the mean round trip of the
 * fastest of 200 batches of 1000 (the fastest, so that a thread that lost
 * its CPU for a moment does not count). On a virtual machine the host may
 * move the virtual CPUs from one second to the next: compare.sh runs this
 * after every round, so that a slow round can be told from a round whose
 * two CPUs were, say, SMT siblings of one core (a much shorter trip). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { BATCHES = 200, TRIPS = 1000 };

static struct {
	_Alignas(64) atomic_long v;
} ping, pong;

static int cpus[2];

static void bind_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *echo(void *arg)
{
	(void)arg;
	bind_to(cpus[1]);
	for (long i = 1; i <= (long)BATCHES * TRIPS; i++) {
		while (atomic_load_explicit(&ping.v, memory_order_acquire) != i)
			;
		atomic_store_explicit(&pong.v, i, memory_order_release);
	}
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		return 1;
	int k = 0;
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[k++] = c;
	if (k < 2) {
		printf("rtt_ns=none\n");
		return 0;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, echo, NULL) != 0)
		return 1;
	bind_to(cpus[0]);
	double best = 1e30;
	long i = 0;
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();
		for (int j = 0; j < TRIPS; j++) {
			i++;
			atomic_store_explicit(&ping.v, i, memory_order_release);
			while (atomic_load_explicit(&pong.v, memory_order_acquire) != i)
				;
		}
		double d = (now_ns() - t0) / TRIPS;
		if (d < best)
			best = d;
	}
	pthread_join(t, NULL);
	printf("rtt_ns=%.0f cpus=%d,%d\n", best, cpus[0], cpus[1]);
	return 0;
}
