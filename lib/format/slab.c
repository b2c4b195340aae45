/*
 * slab.c - memory for decompressed blocks, in 2 MiB slabs recycled by size.
 *
 * A fresh mount decompresses its working set into new memory, and every
 * 4 KiB page of new memory costs a page fault, which on a VM can cost more
 * than decompressing the page.  Huge pages, populated in one call, take
 * most of those faults away (docs/benchmarks.md, "The mount's defaults").
 *
 * So the block cache takes its blocks' memory from here: slabs of
 * SLAB_SIZE, aligned and advised for huge pages, populated in one call, and
 * cut into buffers of one power-of-two class each.  A freed buffer goes on
 * its class's list and is used again as it is, never returned to the
 * system while the cache lives.  The slabs never grow past the bound the
 * cache gives; past it, and for sizes outside the classes, the cache falls
 * back to malloc().
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "slab.h"

/*
 * Under AddressSanitizer a free buffer is poisoned whole and a buffer in
 * use is open only for the size asked: an overrun of a block's buffer is
 * caught as it was when the buffer came from malloc().
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SLAB_SIZE      ((size_t)2 << 20)   /* one huge page on x86-64 and arm64 with 4 KiB pages */
#define CLASS_MIN_LOG  12u                 /* 4 KiB, the smallest squashfs block */
#define CLASS_MAX_LOG  20u                 /* 1 MiB, the largest */
#define CLASSES        (CLASS_MAX_LOG - CLASS_MIN_LOG + 1)

struct qs_slabs {
	pthread_mutex_t lock;
	void *free[CLASSES];        /* per class, the free buffers: each holds the next one's address */
	void **slabs;               /* the slabs mapped, to unmap them at the end */
	size_t nslabs, max_slabs;
};

struct qs_slabs *qs_slabs_create(size_t max_bytes)
{
	struct qs_slabs *pool = calloc(1, sizeof(*pool));

	if (!pool)
		return NULL;
	pool->max_slabs = max_bytes / SLAB_SIZE;
	if (pool->max_slabs && !(pool->slabs = calloc(pool->max_slabs, sizeof(*pool->slabs)))) {
		free(pool);
		return NULL;
	}
	pthread_mutex_init(&pool->lock, NULL);
	return pool;
}

void qs_slabs_destroy(struct qs_slabs *pool)
{
	if (!pool)
		return;
	for (size_t i = 0; i < pool->nslabs; i++) {
		UNPOISON(pool->slabs[i], SLAB_SIZE);
		munmap(pool->slabs[i], SLAB_SIZE);
	}
	pthread_mutex_destroy(&pool->lock);
	free(pool->slabs);
	free(pool);
}

/* A SLAB_SIZE-aligned slab, advised for huge pages and populated, or NULL. */
static void *slab_map(void)
{
	size_t len = 2 * SLAB_SIZE;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *slab, *end;

	if (p == MAP_FAILED)
		return NULL;
	slab = (uint8_t *)(((uintptr_t)p + SLAB_SIZE - 1) & ~(uintptr_t)(SLAB_SIZE - 1));
	end = slab + SLAB_SIZE;
	if (slab > p)
		munmap(p, (size_t)(slab - p));
	if (p + len > end)
		munmap(end, (size_t)(p + len - end));
	/* Both are hints: without huge pages a slab is 512 pages faulted in one call, or one by one. */
	madvise(slab, SLAB_SIZE, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
	madvise(slab, SLAB_SIZE, MADV_POPULATE_WRITE);
#endif
	return slab;
}

static size_t class_size(unsigned c)
{
	return (size_t)1 << (c + CLASS_MIN_LOG);
}

/* Onto class c's free list (the pool's lock held). */
static void push_free(struct qs_slabs *pool, unsigned c, void *buf)
{
	UNPOISON(buf, sizeof(void *));
	memcpy(buf, &pool->free[c], sizeof(void *));
	POISON(buf, class_size(c));
	pool->free[c] = buf;
}

/* Off class c's free list, or NULL (the pool's lock held). */
static void *pop_free(struct qs_slabs *pool, unsigned c)
{
	void *buf = pool->free[c];

	if (buf) {
		UNPOISON(buf, sizeof(void *));
		memcpy(&pool->free[c], buf, sizeof(void *));
		POISON(buf, sizeof(void *));
	}
	return buf;
}

static unsigned class_of(size_t size)
{
	unsigned log = CLASS_MIN_LOG;

	while (((size_t)1 << log) < size)
		log++;
	return log - CLASS_MIN_LOG;
}

void *qs_slabs_alloc(struct qs_slabs *pool, size_t size, unsigned *cls)
{
	unsigned c;
	void *buf;

	if (!pool || size == 0 || size > ((size_t)1 << CLASS_MAX_LOG))
		return NULL;
	c = class_of(size);
	pthread_mutex_lock(&pool->lock);
	if (!pool->free[c] && pool->nslabs < pool->max_slabs) {
		uint8_t *slab = slab_map();
		size_t step = class_size(c);

		if (slab) {
			pool->slabs[pool->nslabs++] = slab;
			/* Pushed last to first, so that buffers are handed out in address order. */
			for (size_t off = SLAB_SIZE; off >= step; off -= step)
				push_free(pool, c, slab + off - step);
		}
	}
	buf = pop_free(pool, c);
	pthread_mutex_unlock(&pool->lock);
	if (buf) {
		UNPOISON(buf, size);
		*cls = c + 1;
	}
	return buf;
}

void qs_slabs_free(struct qs_slabs *pool, void *buf, unsigned cls)
{
	pthread_mutex_lock(&pool->lock);
	push_free(pool, cls - 1, buf);
	pthread_mutex_unlock(&pool->lock);
}

size_t qs_slabs_mapped(struct qs_slabs *pool)
{
	size_t n;

	pthread_mutex_lock(&pool->lock);
	n = pool->nslabs * SLAB_SIZE;
	pthread_mutex_unlock(&pool->lock);
	return n;
}
