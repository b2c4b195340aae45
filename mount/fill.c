/*
 * fill.c - pushing decompressed blocks into the kernel's page cache.
 *
 * A 4 KiB read of a 128 KiB block costs a whole decompression; pushing the
 * whole block with fuse_lowlevel_notify_store() spares the kernel the other
 * 31 round trips (4 KiB random reads of compressed data: ~2k IOPS without,
 * ~100k with, on 2 cores).  The push must not come from a request worker: the store
 * waits for the page locks of reads still queued for the workers, and with
 * every worker waiting so, nothing serves them (a test daemon that pushed
 * from its workers deadlocked under fio).  So workers queue the block,
 * with the cache reference they hold, and one filler thread stores it.
 *
 * A full queue drops the push: the kernel asks again, nothing is lost.  A
 * block pushed a moment ago is not queued again: many readers of one block
 * would otherwise store it once each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpus.h"
#include "mount_int.h"

#define QM_FILL_QUEUE_LEN 256

/*
 * Filler threads, one per CPU the daemon may use, at least 2 and at most
 * QM_FILL_THREADS: a store waits for the page locks of reads in flight, so
 * one filler spends most of its time waiting; several overlap those waits.
 */
#define QM_FILL_THREADS_MIN 2
#define QM_FILL_THREADS 8

/*
 * Blocks pushed a moment ago, by hash of (node id, block index); a collision
 * costs one extra push.  The window covers a push in flight and the reads
 * that were queued behind it, no more: a read that comes later means the
 * kernel dropped the pages (fio's per-pass invalidation, memory pressure),
 * and a block not pushed again then costs 31 round trips instead of one
 * store (bench/mount.sh's random reads, docs/benchmarks.md).
 */
#define QM_FILL_RECENT_SLOTS 4096
#define QM_FILL_RECENT_MS 50

struct fill_item {
	fuse_ino_t nodeid;
	uint64_t index;
	off_t off;
	struct qs_block *block;
	const void *data;
	size_t len;
};

struct recent_slot {
	_Atomic uint64_t key;
	_Atomic int64_t when_ms;
};

struct qm_fill {
	struct fuse_session *se;
	pthread_t threads[QM_FILL_THREADS];
	unsigned nthreads;
	pthread_mutex_t lock;
	pthread_cond_t nonempty;
	bool stop;
	unsigned head, tail;        /* tail == head: empty */
	struct fill_item queue[QM_FILL_QUEUE_LEN];
	struct recent_slot recent[QM_FILL_RECENT_SLOTS];
	atomic_ulong queued, full, recent_skips, stored, failed;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t block_key(fuse_ino_t nodeid, uint64_t index)
{
	uint64_t k = ((uint64_t)nodeid * 0x9e3779b97f4a7c15ull) ^ (index + 1) * 0xc2b2ae3d27d4eb4full;

	return k ? k : 1;
}

static bool recently_pushed(struct qm_fill *fill, uint64_t key, int64_t now)
{
	struct recent_slot *slot = &fill->recent[key % QM_FILL_RECENT_SLOTS];

	return atomic_load_explicit(&slot->key, memory_order_relaxed) == key &&
	       now - atomic_load_explicit(&slot->when_ms, memory_order_relaxed) < QM_FILL_RECENT_MS;
}

static void remember_push(struct qm_fill *fill, uint64_t key, int64_t now)
{
	struct recent_slot *slot = &fill->recent[key % QM_FILL_RECENT_SLOTS];

	atomic_store_explicit(&slot->key, key, memory_order_relaxed);
	atomic_store_explicit(&slot->when_ms, now, memory_order_relaxed);
}

void qm_fill_push(struct qm_fill *fill, fuse_ino_t nodeid, uint64_t index, off_t off,
		  struct qs_block *block, const void *data, size_t len)
{
	uint64_t key = block_key(nodeid, index);
	int64_t now = now_ms();
	bool queued = false;

	if (len && !recently_pushed(fill, key, now)) {
		pthread_mutex_lock(&fill->lock);
		if ((fill->head + 1) % QM_FILL_QUEUE_LEN != fill->tail && !fill->stop) {
			fill->queue[fill->head] = (struct fill_item){ nodeid, index, off, block, data, len };
			fill->head = (fill->head + 1) % QM_FILL_QUEUE_LEN;
			pthread_cond_signal(&fill->nonempty);
			queued = true;
		}
		pthread_mutex_unlock(&fill->lock);
	}
	if (queued) {
		remember_push(fill, key, now);
		atomic_fetch_add_explicit(&fill->queued, 1, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(len && !recently_pushed(fill, key, now) ? &fill->full : &fill->recent_skips,
					  1, memory_order_relaxed);
		qs_block_release(NULL, block);
	}
}

static void store(struct qm_fill *fill, const struct fill_item *item)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(item->len);

	bv.buf[0].mem = (void *)item->data;
	/* -ENOENT: the kernel forgot the inode meanwhile; nothing to do */
	if (fuse_lowlevel_notify_store(fill->se, item->nodeid, item->off, &bv, 0) == 0) {
		/* the window starts again once the pages are in */
		remember_push(fill, block_key(item->nodeid, item->index), now_ms());
		atomic_fetch_add_explicit(&fill->stored, 1, memory_order_relaxed);
		qs_block_release_passed(NULL, item->block, item->data, item->len);
	} else {
		atomic_fetch_add_explicit(&fill->failed, 1, memory_order_relaxed);
		qs_block_release(NULL, item->block);
	}
}

static void *filler(void *arg)
{
	struct qm_fill *fill = arg;

	pthread_mutex_lock(&fill->lock);
	for (;;) {
		struct fill_item item;

		while (fill->head == fill->tail && !fill->stop)
			pthread_cond_wait(&fill->nonempty, &fill->lock);
		if (fill->stop)
			break;
		item = fill->queue[fill->tail];
		fill->tail = (fill->tail + 1) % QM_FILL_QUEUE_LEN;
		pthread_mutex_unlock(&fill->lock);
		store(fill, &item);
		pthread_mutex_lock(&fill->lock);
	}
	/* stopping: the session is gone, drop what is left */
	while (fill->tail != fill->head) {
		qs_block_release(NULL, fill->queue[fill->tail].block);
		fill->tail = (fill->tail + 1) % QM_FILL_QUEUE_LEN;
	}
	pthread_mutex_unlock(&fill->lock);
	return NULL;
}

struct qm_fill *qm_fill_start(struct fuse_session *se)
{
	struct qm_fill *fill = calloc(1, sizeof(*fill));
	unsigned want = cpus_usable();

	if (!fill)
		return NULL;
	fill->se = se;
	pthread_mutex_init(&fill->lock, NULL);
	pthread_cond_init(&fill->nonempty, NULL);
	want = want < QM_FILL_THREADS_MIN ? QM_FILL_THREADS_MIN : want > QM_FILL_THREADS ? QM_FILL_THREADS : want;
	for (; fill->nthreads < want; fill->nthreads++)
		if (pthread_create(&fill->threads[fill->nthreads], NULL, filler, fill) != 0)
			break;
	if (fill->nthreads == 0) {
		pthread_mutex_destroy(&fill->lock);
		pthread_cond_destroy(&fill->nonempty);
		free(fill);
		return NULL;
	}
	return fill;
}

void qm_fill_stop(struct qm_fill *fill, bool report)
{
	if (!fill)
		return;
	if (report)
		fprintf(stderr, "quash: page-cache fill: %lu queued, %lu dropped (queue full), %lu skipped "
			"(pushed just before), %lu stored, %lu failed\n", atomic_load(&fill->queued),
			atomic_load(&fill->full), atomic_load(&fill->recent_skips), atomic_load(&fill->stored),
			atomic_load(&fill->failed));
	pthread_mutex_lock(&fill->lock);
	fill->stop = true;
	pthread_cond_broadcast(&fill->nonempty);
	pthread_mutex_unlock(&fill->lock);
	for (unsigned i = 0; i < fill->nthreads; i++)
		pthread_join(fill->threads[i], NULL);
	pthread_mutex_destroy(&fill->lock);
	pthread_cond_destroy(&fill->nonempty);
	free(fill);
}
