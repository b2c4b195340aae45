/*
 * cache.c - the sharded block cache: per shard a hash table of entries, an
 * LRU list of the ones nobody holds, and a byte count against the shard's
 * share of the limit.
 *
 * A missing block is inserted in the LOADING state before the shard lock is
 * dropped to load it; threads that find a LOADING entry take a reference and
 * sleep on the shard's condition variable until the loader publishes it.
 *
 * A block its holders passed on whole (qs_cache_drop()) goes to a short
 * list of its own rather than the LRU, and is freed once that list is
 * full: so that the memory of such blocks is reused while still hot, and
 * a read racing the page cache's copy (sent just before the store of the
 * block landed) still finds it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "slab.h"

#define BUCKETS_PER_SHARD 512       /* power of two; chains stay short at any sane limit */
/*
 * Blocks passed on whole kept at most, in all shards: 64 blocks of 128
 * KiB.  Long enough for a read sent just before the block's store landed
 * to find it rather than decompress it again; short enough that a fresh
 * mount reuses the memory of such blocks while it is hot, instead of
 * faulting in new memory (docs/benchmarks.md, "The mount's defaults").
 */
#define PASSED_BYTES_MAX (8u << 20)
#define PASSED_SHARE     8          /* nor more than an eighth of the cache */
/*
 * The slabs of block memory (slab.c) map at most the limit and this
 * fraction more: blocks still held count beyond the limit, and memory cut
 * for one size is not used for another.
 */
#define SLAB_SLACK_SHARE 4

enum { LOADING, READY };

struct shard {
	pthread_mutex_t lock;
	pthread_cond_t loaded;
	struct qs_block *buckets[BUCKETS_PER_SHARD];
	struct qs_block lru;        /* sentinel: lru.lru_next is the most recently used */
	struct qs_block passed;     /* sentinel: unheld blocks passed on whole, newest first */
	size_t bytes, limit;
	size_t passed_bytes, passed_limit;
	uint64_t hits, misses, waits, evictions, drops;
};

struct qs_cache {
	struct shard shards[QS_CACHE_SHARDS];
	size_t limit;
	struct qs_slabs *slabs;     /* NULL: every block's memory from malloc() */
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

struct qs_cache *qs_cache_create(size_t limit_bytes)
{
	struct qs_cache *cache = calloc(1, sizeof(*cache));

	if (!cache)
		return NULL;
	cache->limit = limit_bytes;
	cache->slabs = qs_slabs_create(limit_bytes + limit_bytes / SLAB_SLACK_SHARE);
	for (int i = 0; i < QS_CACHE_SHARDS; i++) {
		struct shard *s = &cache->shards[i];

		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->loaded, NULL);
		s->lru.lru_next = s->lru.lru_prev = &s->lru;
		s->passed.lru_next = s->passed.lru_prev = &s->passed;
		s->limit = limit_bytes / QS_CACHE_SHARDS;
		s->passed_limit = (limit_bytes / PASSED_SHARE < PASSED_BYTES_MAX ? limit_bytes / PASSED_SHARE
										  : PASSED_BYTES_MAX) / QS_CACHE_SHARDS;
	}
	return cache;
}

void *qs_cache_buffer(struct qs_block *b, size_t size)
{
	void *buf = qs_slabs_alloc(b->owner->slabs, size, &b->slab_class);

	if (!buf) {
		b->slab_class = 0;
		buf = malloc(size);
	}
	return buf;
}

static void block_free(struct qs_block *b)
{
	if (b->slab_class && b->data)
		qs_slabs_free(b->owner->slabs, b->data, b->slab_class);
	else
		free(b->data);
	free(b);
}

void qs_cache_destroy(struct qs_cache *cache)
{
	if (!cache)
		return;
	for (int i = 0; i < QS_CACHE_SHARDS; i++) {
		struct shard *s = &cache->shards[i];

		for (int j = 0; j < BUCKETS_PER_SHARD; j++) {
			struct qs_block *b = s->buckets[j], *next;

			for (; b; b = next) {
				next = b->hash_next;
				block_free(b);
			}
		}
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->loaded);
	}
	qs_slabs_destroy(cache->slabs);
	free(cache);
}

/* Off the LRU or the passed list, whichever holds it. */
static void lru_unlink(struct shard *s, struct qs_block *b)
{
	b->lru_prev->lru_next = b->lru_next;
	b->lru_next->lru_prev = b->lru_prev;
	b->lru_prev = b->lru_next = NULL;
	if (b->passed) {
		s->passed_bytes -= b->charge;
		b->passed = false;
	}
}

static void list_push_front(struct qs_block *head, struct qs_block *b)
{
	b->lru_next = head->lru_next;
	b->lru_prev = head;
	head->lru_next->lru_prev = b;
	head->lru_next = b;
}

static void hash_remove(struct shard *s, struct qs_block *b, unsigned bucket)
{
	struct qs_block **pp = &s->buckets[bucket];

	while (*pp != b)
		pp = &(*pp)->hash_next;
	*pp = b->hash_next;
}

/* Free an unheld block: off its list, out of the table. */
static void shard_remove(struct shard *s, struct qs_block *b)
{
	lru_unlink(s, b);
	hash_remove(s, b, (unsigned)(mix(b->key_a, b->key_b) >> 7) & (BUCKETS_PER_SHARD - 1));
	s->bytes -= b->charge;
	block_free(b);
}

/* Drop unheld blocks, passed ones first, from the cold end until the shard fits its limit. */
static void shard_evict(struct shard *s)
{
	while (s->bytes > s->limit && s->passed.lru_prev != &s->passed) {
		shard_remove(s, s->passed.lru_prev);
		s->drops++;
	}
	while (s->bytes > s->limit && s->lru.lru_prev != &s->lru) {
		shard_remove(s, s->lru.lru_prev);
		s->evictions++;
	}
}

int qs_cache_get(struct qs_cache *cache, uint64_t key_a, uint64_t key_b, qs_cache_loader load, void *ctx,
		 struct qs_block **out)
{
	uint64_t h = mix(key_a, key_b);
	struct shard *s = &cache->shards[h & (QS_CACHE_SHARDS - 1)];
	unsigned bucket = (unsigned)(h >> 7) & (BUCKETS_PER_SHARD - 1);
	struct qs_block *b;
	int err;

	pthread_mutex_lock(&s->lock);
	for (b = s->buckets[bucket]; b; b = b->hash_next)
		if (b->key_a == key_a && b->key_b == key_b)
			break;
	if (b) {
		if (b->refs++ == 0 && b->state == READY)
			lru_unlink(s, b);
		if (b->state == LOADING) {
			s->waits++;
			while (b->state == LOADING && !b->error)
				pthread_cond_wait(&s->loaded, &s->lock);
			if (b->error) {
				err = b->error;
				if (--b->refs == 0)
					block_free(b);    /* the loader already unhashed it */
				pthread_mutex_unlock(&s->lock);
				return qs_set_error(err, "an earlier read of this block failed");
			}
		} else {
			s->hits++;
		}
		pthread_mutex_unlock(&s->lock);
		*out = b;
		return 0;
	}

	s->misses++;
	b = calloc(1, sizeof(*b));
	if (!b) {
		pthread_mutex_unlock(&s->lock);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	b->key_a = key_a;
	b->key_b = key_b;
	b->owner = cache;
	b->state = LOADING;
	b->refs = 1;
	b->hash_next = s->buckets[bucket];
	s->buckets[bucket] = b;
	pthread_mutex_unlock(&s->lock);

	err = load(ctx, b);

	pthread_mutex_lock(&s->lock);
	if (err) {
		hash_remove(s, b, bucket);
		b->error = err;
		pthread_cond_broadcast(&s->loaded);
		if (--b->refs == 0)
			block_free(b);
		pthread_mutex_unlock(&s->lock);
		return err;
	}
	if (!b->charge)
		b->charge = b->size;
	b->charge += sizeof(*b);
	b->state = READY;
	s->bytes += b->charge;
	pthread_cond_broadcast(&s->loaded);
	pthread_mutex_unlock(&s->lock);
	*out = b;
	return 0;
}

void qs_cache_release(struct qs_cache *cache, struct qs_block *b)
{
	struct shard *s = &cache->shards[mix(b->key_a, b->key_b) & (QS_CACHE_SHARDS - 1)];

	pthread_mutex_lock(&s->lock);
	if (--b->refs == 0) {
		list_push_front(&s->lru, b);
		shard_evict(s);
	}
	pthread_mutex_unlock(&s->lock);
}

void qs_cache_drop(struct qs_cache *cache, struct qs_block *b)
{
	struct shard *s = &cache->shards[mix(b->key_a, b->key_b) & (QS_CACHE_SHARDS - 1)];

	pthread_mutex_lock(&s->lock);
	if (--b->refs == 0) {
		list_push_front(&s->passed, b);
		b->passed = true;
		s->passed_bytes += b->charge;
		while (s->passed_bytes > s->passed_limit) {
			shard_remove(s, s->passed.lru_prev);
			s->drops++;
		}
		shard_evict(s);
	}
	pthread_mutex_unlock(&s->lock);
}

void qs_cache_stats(struct qs_cache *cache, struct qs_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->limit = cache->limit;
	out->slab_bytes = cache->slabs ? qs_slabs_mapped(cache->slabs) : 0;
	for (int i = 0; i < QS_CACHE_SHARDS; i++) {
		struct shard *s = &cache->shards[i];

		pthread_mutex_lock(&s->lock);
		out->hits += s->hits;
		out->misses += s->misses;
		out->waits += s->waits;
		out->evictions += s->evictions;
		out->drops += s->drops;
		out->bytes += s->bytes;
		pthread_mutex_unlock(&s->lock);
	}
}
