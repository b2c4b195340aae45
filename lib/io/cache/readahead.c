/*
 * readahead.c - sequential readers told apart, and the worker threads that
 * fetch the chunks ahead of them.
 *
 * Sequential reads are noticed per stream (a few recent read positions);
 * each continuation doubles the stream's window, up to a limit, and the
 * chunks ahead are queued to a few worker threads, which is also how
 * several requests are in flight at once.
 */
#include <pthread.h>

#include "chunk_cache_int.h"

static void *worker_main(void *arg)
{
	struct chunk_cache *cc = arg;

	pthread_mutex_lock(&cc->lock);
	for (;;) {
		struct chunk *c;
		uint32_t idx;

		while (!cc->stopping && cc->queue_len == 0)
			pthread_cond_wait(&cc->work, &cc->lock);
		if (cc->stopping)
			break;
		idx = cc->queue[cc->queue_head];
		cc->queue_head = (cc->queue_head + 1) % QUEUE_LEN;
		cc->queue_len--;
		if (cc->table[idx] || cc->stale_err)
			continue;
		pthread_mutex_unlock(&cc->lock);
		if (chunk_acquire(cc, idx, &c, NULL) == 0)
			chunk_release(cc, c);
		pthread_mutex_lock(&cc->lock);
	}
	pthread_mutex_unlock(&cc->lock);
	return NULL;
}

/* Queue chunk 'idx' for a worker unless held or the queue is full. */
void readahead_queue_locked(struct chunk_cache *cc, uint32_t idx)
{
	if (idx >= cc->nchunks || cc->table[idx] || cc->queue_len == QUEUE_LEN || cc->stale_err)
		return;
	/* A profile's replay fetched what the workload reads of it: the rest of it is not wanted. */
	if (piece_overlaps_locked(cc, (uint64_t)idx * cc->chunk_size, chunk_len(cc, idx)))
		return;
	if (cc->nworkers < WORKERS && cc->nworkers <= (int)cc->queue_len &&
	    pthread_create(&cc->workers[cc->nworkers], NULL, worker_main, cc) == 0)
		cc->nworkers++;
	if (cc->nworkers == 0)
		return;
	cc->queue[(cc->queue_head + cc->queue_len) % QUEUE_LEN] = idx;
	cc->queue_len++;
	pthread_cond_signal(&cc->work);
}

/* A read of [off, off+len) happened: keep sequential streams fed. */
void readahead_locked(struct chunk_cache *cc, uint64_t off, size_t len)
{
	struct stream *s = NULL, *oldest = &cc->streams[0];
	uint32_t cur = (off + len - 1) / cc->chunk_size, i;

	cc->tick++;
	for (i = 0; i < READAHEAD_STREAMS; i++) {
		struct stream *t = &cc->streams[i];

		if (t->used && off + READAHEAD_SLACK >= t->next_off && off <= t->next_off + READAHEAD_SLACK) {
			s = t;
			break;
		}
		if (t->used < oldest->used)
			oldest = t;
	}
	if (!s) {
		*oldest = (struct stream){ .start = off, .next_off = off + len, .ahead = cur, .used = cc->tick };
		return;
	}
	s->used = cc->tick;
	/* Only progress counts: re-reading a header or a table is no sign of a sequential reader. */
	if (off + len <= s->next_off)
		return;
	s->next_off = off + len;
	if (s->next_off - s->start < READAHEAD_MIN_RUN)
		return;
	if (s->window == 0)
		s->window = 1;
	else if (cur + 1 > s->ahead && s->window < READAHEAD_MAX_CHUNKS)
		s->window *= 2;
	if (s->ahead < cur)
		s->ahead = cur;
	while (s->ahead < cur + s->window && s->ahead + 1 < cc->nchunks)
		readahead_queue_locked(cc, ++s->ahead);
}

void readahead_stop(struct chunk_cache *cc)
{
	pthread_mutex_lock(&cc->lock);
	cc->stopping = true;
	pthread_cond_broadcast(&cc->work);
	pthread_mutex_unlock(&cc->lock);
	for (int w = 0; w < cc->nworkers; w++)
		pthread_join(cc->workers[w], NULL);
}
