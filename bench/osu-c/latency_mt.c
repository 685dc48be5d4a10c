/* latency_mt: -t threads per process at MPI_THREAD_MULTIPLE. Thread k of
 * rank 0 ping-pongs with thread k of rank 1 on tag k; the iterations are
 * dealt round-robin among the threads. Per size the threads of a rank meet,
 * thread 0 takes part in a barrier of the ranks, and they meet again; rank
 * 0's threads meet after the warm-up (the last to arrive starts the clock)
 * and after the timed round trips (the last stops it). The latency is that
 * time over twice the round trips of one thread. */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* team is a barrier whose last arrival runs a function before releasing
 * the others. */
struct team {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n, count;
	unsigned long round;
	double t0, t1;
};

enum { NOTHING, START, STOP };

static void team_wait(struct team *t, int what)
{
	pthread_mutex_lock(&t->mu);
	if (++t->count == t->n) {
		if (what == START)
			t->t0 = MPI_Wtime();
		else if (what == STOP)
			t->t1 = MPI_Wtime();
		t->count = 0;
		t->round++;
		pthread_cond_broadcast(&t->cv);
	} else {
		unsigned long round = t->round;
		while (round == t->round)
			pthread_cond_wait(&t->cv, &t->mu);
	}
	pthread_mutex_unlock(&t->mu);
}

static struct options opts;
static struct team team;
static int rank;

static int share(int n, int k, int f)
{
	return k >= n ? 0 : (n - k + f - 1) / f;
}

static void pingpong(int first, char *s, char *r, int size, int tag, int n)
{
	int peer = 1 - rank;
	for (int i = 0; i < n; i++) {
		if (first) {
			CHECK(MPI_Send(s, size, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
			CHECK(MPI_Recv(r, size, MPI_CHAR, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		} else {
			CHECK(MPI_Recv(r, size, MPI_CHAR, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			CHECK(MPI_Send(s, size, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
		}
	}
}

static void *thread(void *arg)
{
	int k = (int)(long)arg, f = opts.threads, first = rank == 0;
	char *s = alloc_buf((size_t)max_size(&opts));
	char *r = alloc_buf((size_t)max_size(&opts));

	for (long size = first_size(&opts); size <= max_size(&opts); size = next_size(size)) {
		int iters, warm;

		counts(&opts, size, &iters, &warm);
		team_wait(&team, NOTHING);
		if (k == 0)
			CHECK(MPI_Barrier(MPI_COMM_WORLD));
		team_wait(&team, NOTHING);
		touch(s, r, size);
		pingpong(first, s, r, (int)size, k, share(warm, k, f));
		if (first)
			team_wait(&team, START);
		pingpong(first, s, r, (int)size, k, share(iters, k, f));
		if (first)
			team_wait(&team, STOP);
		if (first && k == 0) {
			printf("%-*ld%*.*f\n", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION,
			       (team.t1 - team.t0) * 1e6 / (2.0 * iters / f));
			fflush(stdout);
		}
	}
	free(s);
	free(r);
	return NULL;
}

int main(int argc, char **argv)
{
	int provided;
	pthread_t *threads;

	CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
	init_options(&opts, argc, argv, KIND_LAT, 0, "t", "osu_latency_mt");
	need_ranks(2, 1);
	CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	if (provided != MPI_THREAD_MULTIPLE) {
		if (rank == 0)
			fprintf(stderr, "osu_latency_mt: MPI_Init_thread gave level %d, not MPI_THREAD_MULTIPLE\n", provided);
		MPI_Finalize();
		return 1;
	}
	print_title("OSU MPI Multi-threaded Latency Test", 0);
	if (rank == 0) {
		printf("# Number of Sender threads: %d\n# Number of Receiver threads: %d\n", opts.threads, opts.threads);
		printf("%-*s%*s\n", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Latency (us)");
	}
	fflush(stdout);
	pthread_mutex_init(&team.mu, NULL);
	pthread_cond_init(&team.cv, NULL);
	team.n = opts.threads;
	threads = malloc(sizeof *threads * (size_t)opts.threads);
	if (threads == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (long k = 0; k < opts.threads; k++)
		if (pthread_create(&threads[k], NULL, thread, (void *)k) != 0)
			MPI_Abort(MPI_COMM_WORLD, 1);
	for (int k = 0; k < opts.threads; k++)
		pthread_join(threads[k], NULL);
	free(threads);
	MPI_Finalize();
	return 0;
}
