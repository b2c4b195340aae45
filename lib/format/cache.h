/*
 * cache.h - a bounded, sharded cache of decompressed blocks.
 *
 * Keys are two 64-bit words chosen by the caller (block.c uses the block's
 * image position and its stored size word).  The cache guarantees:
 *  - one load per key even when many threads miss it at once: the first
 *    loads, the rest wait for it ("single flight");
 *  - no lock held while a loader runs (reading, decompressing);
 *  - memory bounded by the byte limit plus the blocks callers still hold
 *    (the blocks' memory is recycled in slabs, slab.c, which map at most
 *    the limit and a quarter);
 *  - a failed load is not cached, so a later call tries again (a remote
 *    source may have had a passing fault).
 * Each shard has its own lock, so threads working on different blocks
 * rarely meet.
 */
#ifndef QUASH_CACHE_H
#define QUASH_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quash.h"

#define QS_CACHE_SHARDS 32          /* power of two */

struct qs_cache;

/* A cached block.  data/size/aux are filled by the loader; the rest is the cache's. */
struct qs_block {
	void *data;                 /* the loader's: malloc()ed or from qs_cache_buffer(); freed by the cache */
	size_t size;                /* valid bytes in data */
	size_t charge;              /* bytes counted against the limit */
	uint64_t aux;               /* loader-defined (metadata: position of the next block) */

	uint64_t key_a, key_b;
	struct qs_cache *owner;     /* the cache it lives in: released blocks find it without their image */
	int state;                  /* LOADING, READY */
	int error;                  /* of a failed load, for the threads that waited on it */
	unsigned refs;
	bool passed;                /* unheld, on the shard's list of blocks passed on whole */
	unsigned slab_class;        /* data from the cache's slabs (slab.c), or 0: malloc()ed */
	struct qs_block *hash_next;
	struct qs_block *lru_prev, *lru_next;
};

/* Fill block->data, ->size (and ->aux, ->charge); return 0 or -errno with a message. */
typedef int (*qs_cache_loader)(void *ctx, struct qs_block *block);

/* qs_cache_create() and qs_cache_destroy() are public (quash.h): images may share one cache. */

/* Find or load the block for (key_a, key_b); release it with qs_cache_release(). */
int qs_cache_get(struct qs_cache *cache, uint64_t key_a, uint64_t key_b, qs_cache_loader load, void *ctx,
		 struct qs_block **out);
void qs_cache_release(struct qs_cache *cache, struct qs_block *block);
/*
 * For a loader: a buffer of size bytes for block->data, from the cache's
 * slabs (memory used before, no page faults) or malloc(); NULL if neither
 * has one.
 */
void *qs_cache_buffer(struct qs_block *block, size_t size);
/*
 * Release it, passed on whole (qs_block_release_passed()): once nobody
 * holds it, it joins a short list of such blocks and is freed when that
 * list is full, whatever room the cache has.
 */
void qs_cache_drop(struct qs_cache *cache, struct qs_block *block);


#endif
