/*
 * ahead.c - decompressing ahead of sequential readers, on every core the
 * daemon may use.
 *
 * The kernel reads a FUSE file ahead by its readahead window, about one
 * block, so a reader streaming a file keeps one or two READs in flight and
 * the daemon decompresses its blocks one after the other: one core, however
 * many the machine has.  Here a READ that continues where the previous one
 * of its file ended marks a stream, and the stream's next blocks, up to a
 * window ahead of the reader, go to a pool of threads, one per CPU the
 * daemon may use, which decompress them into the block cache; the READs
 * then find them there (the cache loads a block once, so a READ that comes
 * while its block is being loaded waits for that load).  The blocks are not
 * pushed into the page cache: the kernel would then skip the READs that
 * tell the stream where its reader is.
 *
 * Bounds: all streams together have at most QM_AHEAD_BYTES, and a quarter
 * of the block cache, decompressed or queued beyond their readers, so that
 * blocks loaded ahead are not evicted before their READs come; each
 * stream its share of that, at most QM_AHEAD_STREAM_BYTES (at least one
 * block per thread), less while it starts (QM_AHEAD_RUN_MIN).  The queue
 * is first in, first out, and a stream adds to it only as its reader moves
 * on, so streams take turns on the pool.  A READ elsewhere in the file
 * ends the stream and drops its queued blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cpus.h"
#include "mount_int.h"

#define QM_AHEAD_THREADS_MAX 16         /* as the workers (QM_DEFAULT_THREADS_MAX) */
#define QM_AHEAD_STREAM_BYTES (8u << 20)
#define QM_AHEAD_BYTES (64u << 20)
#define QM_AHEAD_STREAMS 64             /* files streamed at once; more simply go without */
#define QM_AHEAD_QUEUE_LEN 512
/*
 * How far a READ may land from where the stream's previous one ended and
 * still continue it, in blocks, besides two READs of its own size: the
 * kernel sends a window's READs at once (up to 1 MiB each for a large
 * read()), and the workers may take them in any order.
 */
#define QM_AHEAD_SLACK 4
/*
 * READs in a row that continue each other before blocks are loaded ahead:
 * one read of a small file is no stream, and a random read of a few blocks
 * is a few READs.  From there the window doubles with each READ, as the
 * kernel's own readahead does, so that a reader that stops or jumps soon
 * after leaves few blocks loaded for nothing.
 */
#define QM_AHEAD_RUN_MIN 3
/* A stream whose reader has not read for this long no longer shares the bound with the others. */
#define QM_AHEAD_ACTIVE_MS 1000

struct stream {
	const struct qs_file *file;     /* NULL: a free slot */
	uint64_t next;                  /* the block after the reader's last READ */
	uint64_t horizon;               /* blocks before it are loaded or queued */
	unsigned run;                   /* READs in a row that continued the stream */
	unsigned pending;               /* jobs queued or being loaded */
	int64_t used_ms;                /* when its last READ came */
};

struct job {
	struct stream *s;               /* NULL: cancelled */
	struct qs_file *file;
	struct qm_node *node;           /* held by the job, or NULL when the file has a handle */
	uint64_t index;
	size_t bytes;                   /* the block size, counted in qm_ahead.pending */
};

struct qm_ahead {
	pthread_t threads[QM_AHEAD_THREADS_MAX];
	unsigned nthreads;
	size_t limit;                   /* bytes ahead of all readers together */
	size_t pending;                 /* bytes of the jobs queued or being loaded */
	pthread_mutex_t lock;
	pthread_cond_t nonempty, done;
	bool stop;
	unsigned head, tail;            /* tail == head: empty */
	struct job queue[QM_AHEAD_QUEUE_LEN];
	struct stream streams[QM_AHEAD_STREAMS];
	atomic_ulong queued, loaded, cancelled, dropped, close_waits;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A job is over (loaded, cancelled or dropped at stop): under the lock. */
static void job_end(struct qm_ahead *a, struct job *j)
{
	if (j->node)
		qm_nodes_put(j->node);
	a->pending -= j->bytes;
	if (j->s && --j->s->pending == 0)
		pthread_cond_broadcast(&a->done);
	j->s = NULL;
	j->node = NULL;
	j->bytes = 0;
}

static void *loader(void *arg)
{
	struct qm_ahead *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct job j;

		while (a->head == a->tail && !a->stop)
			pthread_cond_wait(&a->nonempty, &a->lock);
		if (a->stop)
			break;
		j = a->queue[a->tail];
		a->tail = (a->tail + 1) % QM_AHEAD_QUEUE_LEN;
		if (j.s) {
			struct qs_block *b;
			const void *data;
			size_t len;

			pthread_mutex_unlock(&a->lock);
			/* an error is the READ's to report, when it comes */
			if (qs_file_block(j.file, j.index, &b, &data, &len) == 0) {
				qs_block_release(NULL, b);
				atomic_fetch_add_explicit(&a->loaded, 1, memory_order_relaxed);
			}
			pthread_mutex_lock(&a->lock);
		}
		job_end(a, &j);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

struct qm_ahead *qm_ahead_start(size_t cache_bytes)
{
	struct qm_ahead *a = calloc(1, sizeof(*a));
	unsigned want = cpus_usable();

	if (!a)
		return NULL;
	a->limit = cache_bytes / 4 < QM_AHEAD_BYTES ? cache_bytes / 4 : QM_AHEAD_BYTES;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->nonempty, NULL);
	pthread_cond_init(&a->done, NULL);
	want = want > QM_AHEAD_THREADS_MAX ? QM_AHEAD_THREADS_MAX : want;
	for (; a->nthreads < want; a->nthreads++)
		if (pthread_create(&a->threads[a->nthreads], NULL, loader, a) != 0)
			break;
	if (a->nthreads == 0) {
		pthread_mutex_destroy(&a->lock);
		pthread_cond_destroy(&a->nonempty);
		pthread_cond_destroy(&a->done);
		free(a);
		return NULL;
	}
	return a;
}

void qm_ahead_stop(struct qm_ahead *a, bool report)
{
	if (!a)
		return;
	if (report)
		fprintf(stderr, "quash: decompress-ahead: %lu queued, %lu loaded, %lu cancelled, %lu not queued "
			"(queue full), %lu waits at close\n", atomic_load(&a->queued), atomic_load(&a->loaded),
			atomic_load(&a->cancelled), atomic_load(&a->dropped), atomic_load(&a->close_waits));
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_broadcast(&a->nonempty);
	pthread_mutex_unlock(&a->lock);
	for (unsigned i = 0; i < a->nthreads; i++)
		pthread_join(a->threads[i], NULL);
	for (; a->tail != a->head; a->tail = (a->tail + 1) % QM_AHEAD_QUEUE_LEN)
		job_end(a, &a->queue[a->tail]);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->nonempty);
	pthread_cond_destroy(&a->done);
	free(a);
}

/* Cancel the stream's queued jobs; those being loaded finish. */
static void cancel_queued(struct qm_ahead *a, struct stream *s)
{
	for (unsigned i = a->tail; i != a->head; i = (i + 1) % QM_AHEAD_QUEUE_LEN) {
		if (a->queue[i].s == s) {
			job_end(a, &a->queue[i]);
			atomic_fetch_add_explicit(&a->cancelled, 1, memory_order_relaxed);
		}
	}
}

/*
 * The slot of 'file', else a free one or the least recently used one
 * with nothing pending, taken for it; NULL if every slot is busy.  *active:
 * the streams (this one too) whose reader read in the last
 * QM_AHEAD_ACTIVE_MS.
 */
static struct stream *stream_of(struct qm_ahead *a, const struct qs_file *file, int64_t now, unsigned *active)
{
	struct stream *mine = NULL, *victim = NULL;

	*active = 1;
	for (unsigned i = 0; i < QM_AHEAD_STREAMS; i++) {
		struct stream *s = &a->streams[i];

		if (s->file == file)
			mine = s;
		else if (s->file && now - s->used_ms < QM_AHEAD_ACTIVE_MS)
			++*active;
		if (s->pending == 0 && (!victim || !s->file || (victim->file && s->used_ms < victim->used_ms)))
			victim = s;
	}
	if (mine)
		return mine;
	if (victim)
		*victim = (struct stream){ .file = file };
	return victim;
}

/* Queue the stream's blocks up to its window, within the bounds; under the lock. */
static void extend(struct qm_ahead *a, struct stream *s, struct qs_file *file, struct qm_node *node,
		   uint64_t blocks, size_t bs, unsigned active)
{
	uint64_t window = QM_AHEAD_STREAM_BYTES < a->limit / active ? QM_AHEAD_STREAM_BYTES / bs : a->limit / active / bs;
	uint64_t want;

	if (window < a->nthreads)
		window = a->nthreads;
	if (s->run - QM_AHEAD_RUN_MIN < 16 && window > 2ull << (s->run - QM_AHEAD_RUN_MIN))
		window = 2ull << (s->run - QM_AHEAD_RUN_MIN);
	want = s->next + window < blocks ? s->next + window : blocks;
	for (; s->horizon < want && a->pending + bs <= a->limit; s->horizon++) {
		if ((a->head + 1) % QM_AHEAD_QUEUE_LEN == a->tail) {
			atomic_fetch_add_explicit(&a->dropped, 1, memory_order_relaxed);
			break;
		}
		if (node)
			qm_nodes_hold(node);
		a->queue[a->head] = (struct job){ s, file, node, s->horizon, bs };
		a->head = (a->head + 1) % QM_AHEAD_QUEUE_LEN;
		a->pending += bs;
		s->pending++;
		atomic_fetch_add_explicit(&a->queued, 1, memory_order_relaxed);
		pthread_cond_signal(&a->nonempty);
	}
}

void qm_ahead_read(struct qm_ahead *a, struct qs_file *file, struct qm_node *node, uint64_t first, uint64_t count,
		   size_t bs)
{
	uint64_t blocks = (qs_file_inode(file)->size + bs - 1) / bs;
	int64_t now = now_ms();
	unsigned active;
	struct stream *s;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	s = stream_of(a, file, now, &active);
	if (s) {
		uint64_t slack = QM_AHEAD_SLACK + 2 * count;
		bool continues = s->run && first + slack >= s->next && first <= s->next + slack;

		if (!continues) {
			/* a new position: what was queued for the old one is not wanted */
			cancel_queued(a, s);
			s->run = 0;
			s->next = first + count;
			s->horizon = s->next;
		} else if (first + count > s->next) {
			s->next = first + count;
		}
		if (s->horizon < s->next)
			s->horizon = s->next;
		s->used_ms = now;
		s->run += s->run < 1000;
		if (s->run >= QM_AHEAD_RUN_MIN)
			extend(a, s, file, node, blocks, bs, active);
	}
	pthread_mutex_unlock(&a->lock);
}

void qm_ahead_forget(struct qm_ahead *a, const struct qs_file *file)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	for (unsigned i = 0; i < QM_AHEAD_STREAMS; i++) {
		struct stream *s = &a->streams[i];

		if (s->file != file)
			continue;
		cancel_queued(a, s);
		while (s->pending) {
			atomic_fetch_add_explicit(&a->close_waits, 1, memory_order_relaxed);
			pthread_cond_wait(&a->done, &a->lock);
		}
		*s = (struct stream){ 0 };
	}
	pthread_mutex_unlock(&a->lock);
}
