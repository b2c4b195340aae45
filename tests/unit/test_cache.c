/*
 * test_cache.c - the block cache on its own: hits, the byte bound, failed
 * loads not cached, one load per key under many concurrent misses,
 * blocks passed on whole let go by the last holder, and blocks' memory from
 * the cache's slabs: recycled, bounded, and each block's own.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache.h"
#include "slab.h"

struct counter {
	pthread_mutex_t lock;
	int loads;
	int fail;
	unsigned delay_us;
};

static int load(void *ctx, struct qs_block *b)
{
	struct counter *c = ctx;

	pthread_mutex_lock(&c->lock);
	c->loads++;
	pthread_mutex_unlock(&c->lock);
	if (c->delay_us)
		usleep(c->delay_us);
	if (c->fail)
		return qs_set_error(-EIO, "injected");
	b->data = malloc(1024);
	memset(b->data, (int)(b->key_a & 0xff), 1024);
	b->size = 1024;
	return 0;
}

static void test_hit_after_miss(void **state)
{
	struct qs_cache *cache = qs_cache_create(1 << 20);
	struct counter c = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
	struct qs_block *a, *b;

	(void)state;
	assert_int_equal(qs_cache_get(cache, 7, 1, load, &c, &a), 0);
	qs_cache_release(cache, a);
	assert_int_equal(qs_cache_get(cache, 7, 1, load, &c, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(((uint8_t *)b->data)[5], 7);
	qs_cache_release(cache, b);
	/* Same position, other size word: another block. */
	assert_int_equal(qs_cache_get(cache, 7, 2, load, &c, &b), 0);
	qs_cache_release(cache, b);
	assert_int_equal(c.loads, 2);
	qs_cache_destroy(cache);
}

static void test_bounded(void **state)
{
	size_t limit = 64 << 10;
	struct qs_cache *cache = qs_cache_create(limit);
	struct counter c = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
	struct qs_cache_stats st;

	(void)state;
	for (uint64_t k = 0; k < 10000; k++) {
		struct qs_block *b;

		assert_int_equal(qs_cache_get(cache, k, 1, load, &c, &b), 0);
		qs_cache_release(cache, b);
	}
	qs_cache_stats(cache, &st);
	assert_true(st.bytes <= limit);
	assert_true(st.evictions > 9000);
	qs_cache_destroy(cache);
}

static void test_failure_not_cached(void **state)
{
	struct qs_cache *cache = qs_cache_create(1 << 20);
	struct counter c = { PTHREAD_MUTEX_INITIALIZER, 0, 1, 0 };
	struct qs_block *b;

	(void)state;
	assert_int_equal(qs_cache_get(cache, 1, 1, load, &c, &b), -EIO);
	c.fail = 0;
	assert_int_equal(qs_cache_get(cache, 1, 1, load, &c, &b), 0);
	qs_cache_release(cache, b);
	assert_int_equal(c.loads, 2);
	qs_cache_destroy(cache);
}

struct race {
	struct qs_cache *cache;
	struct counter *c;
	pthread_barrier_t *start;
	int err;
};

static void *racer(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(r->start);
	for (uint64_t k = 0; k < 64; k++) {
		struct qs_block *b;

		r->err |= qs_cache_get(r->cache, k, 1, load, r->c, &b);
		if (((uint8_t *)b->data)[1000] != (uint8_t)k)
			r->err |= 1;
		qs_cache_release(r->cache, b);
	}
	return NULL;
}

#define RACERS 16

#define SLAB_BLOCK (128u << 10)

/* A loader as block.c's: a 128 KiB buffer from the cache, filled with a pattern of its key. */
static int load_slab(void *ctx, struct qs_block *b)
{
	struct counter *c = ctx;

	c->loads++;
	b->data = qs_cache_buffer(b, SLAB_BLOCK);
	if (!b->data)
		return qs_set_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < SLAB_BLOCK; i += 4096)
		((uint8_t *)b->data)[i] = (uint8_t)(b->key_a + i / 4096);
	b->size = SLAB_BLOCK;
	return 0;
}

static int pattern_ok(const struct qs_block *b)
{
	for (size_t i = 0; i < SLAB_BLOCK; i += 4096)
		if (((const uint8_t *)b->data)[i] != (uint8_t)(b->key_a + i / 4096))
			return 0;
	return 1;
}

/*
 * Blocks cycled through a cache of 4 MiB (30 blocks of 128 KiB) take their
 * memory from slabs, reuse it once evicted (the slabs stop growing), never
 * map more than the cache's bound (its limit and a quarter), and never
 * share a buffer between blocks alive at once.
 */
static void test_slabs(void **state)
{
	size_t limit = 4u << 20;
	struct qs_cache *cache = qs_cache_create(limit);
	struct counter c = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
	struct qs_cache_stats st;
	struct qs_block *held[8];
	uint64_t mapped;

	(void)state;
	for (uint64_t k = 0; k < 200; k++) {
		struct qs_block *b;

		assert_int_equal(qs_cache_get(cache, k, 1, load_slab, &c, &b), 0);
		assert_true(b->slab_class > 0);
		assert_true(pattern_ok(b));
		qs_cache_release(cache, b);
	}
	qs_cache_stats(cache, &st);
	assert_true(st.slab_bytes > 0);
	assert_true(st.slab_bytes <= limit + limit / 4);
	mapped = st.slab_bytes;
	for (uint64_t k = 200; k < 400; k++) {
		struct qs_block *b;

		assert_int_equal(qs_cache_get(cache, k, 1, load_slab, &c, &b), 0);
		qs_cache_release(cache, b);
	}
	qs_cache_stats(cache, &st);
	assert_int_equal(st.slab_bytes, mapped);        /* evicted blocks' memory reused */
	/* Blocks held at once have buffers of their own, their patterns intact. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(qs_cache_get(cache, 1000 + (uint64_t)i, 1, load_slab, &c, &held[i]), 0);
	for (int i = 0; i < 8; i++) {
		assert_true(pattern_ok(held[i]));
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(held[i]->data, held[j]->data);
	}
	for (int i = 0; i < 8; i++)
		qs_cache_release(cache, held[i]);
	qs_cache_destroy(cache);
}

/* Past its bound, or for sizes it has no class for, the pool has nothing: the cache mallocs. */
static void test_slab_bounds(void **state)
{
	struct qs_slabs *pool = qs_slabs_create(4u << 20);     /* two slabs */
	struct qs_slabs *none = qs_slabs_create(1u << 20);     /* less than one */
	void *bufs[32];
	unsigned cls[32], k;

	(void)state;
	assert_null(qs_slabs_alloc(pool, 0, &k));
	assert_null(qs_slabs_alloc(pool, (1u << 20) + 1, &k));
	assert_null(qs_slabs_alloc(none, 4096, &k));
	/* 1 MiB buffers: two to a slab, so four in all. */
	for (int i = 0; i < 4; i++) {
		bufs[i] = qs_slabs_alloc(pool, 1u << 20, &cls[i]);
		assert_non_null(bufs[i]);
		memset(bufs[i], i, 1u << 20);
	}
	assert_null(qs_slabs_alloc(pool, 1u << 20, &k));
	assert_null(qs_slabs_alloc(pool, 8192, &k));           /* no slab left to cut */
	assert_int_equal(qs_slabs_mapped(pool), 4u << 20);
	qs_slabs_free(pool, bufs[2], cls[2]);
	assert_ptr_equal(qs_slabs_alloc(pool, 600u << 10, &k), bufs[2]);
	assert_int_equal(k, cls[2]);
	for (int i = 0; i < 4; i++)
		qs_slabs_free(pool, bufs[i], cls[i]);
	qs_slabs_destroy(pool);
	qs_slabs_destroy(none);
}

/*
 * qs_cache_drop(): the block stays while anyone holds it and for a while
 * after (a racing read finds it), on a short list of its own: many dropped
 * blocks are freed, so that the cache holds no more than that list's
 * share however much room it has.
 */
static void test_drop(void **state)
{
	struct qs_cache *cache = qs_cache_create(1 << 20);
	struct counter c = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
	struct qs_cache_stats st;
	struct qs_block *a, *b;

	(void)state;
	assert_int_equal(qs_cache_get(cache, 9, 1, load, &c, &a), 0);
	assert_int_equal(qs_cache_get(cache, 9, 1, load, &c, &b), 0);
	assert_ptr_equal(a, b);
	qs_cache_drop(cache, a);            /* b still holds it */
	assert_int_equal(((uint8_t *)b->data)[3], 9);
	qs_cache_drop(cache, b);
	/* Just dropped: still found, not loaded again. */
	assert_int_equal(qs_cache_get(cache, 9, 1, load, &c, &a), 0);
	assert_int_equal(c.loads, 1);
	assert_int_equal(((uint8_t *)a->data)[7], 9);
	/* Found again, it is an ordinary block: released as usual, it stays. */
	qs_cache_release(cache, a);
	/* Many dropped: most are freed, the cache keeps only the short list's share (an eighth). */
	for (uint64_t k = 100; k < 1100; k++) {
		assert_int_equal(qs_cache_get(cache, k, 1, load, &c, &a), 0);
		qs_cache_drop(cache, a);
	}
	qs_cache_stats(cache, &st);
	assert_true(st.drops >= 1000 - (1 << 20) / 8 / 1024);
	assert_true(st.bytes <= (1 << 20) / 8 + 1024 + sizeof(struct qs_block));
	/* The block released as usual was not among them. */
	assert_int_equal(qs_cache_get(cache, 9, 1, load, &c, &a), 0);
	assert_int_equal(c.loads, 1001);
	qs_cache_release(cache, a);
	qs_cache_destroy(cache);
}

static void test_single_flight(void **state)
{
	struct qs_cache *cache = qs_cache_create(16 << 20);
	struct counter c = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 2000 };
	pthread_barrier_t start;
	pthread_t t[RACERS];
	struct race r[RACERS];

	(void)state;
	pthread_barrier_init(&start, NULL, RACERS);
	for (int i = 0; i < RACERS; i++) {
		r[i] = (struct race){ cache, &c, &start, 0 };
		pthread_create(&t[i], NULL, racer, &r[i]);
	}
	for (int i = 0; i < RACERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].err, 0);
	}
	/* 16 threads asked for the same 64 blocks at once: each loaded exactly once. */
	assert_int_equal(c.loads, 64);
	pthread_barrier_destroy(&start);
	qs_cache_destroy(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_after_miss),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_failure_not_cached),
		cmocka_unit_test(test_single_flight),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_slabs),
		cmocka_unit_test(test_slab_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
