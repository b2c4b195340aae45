/*
 * slab.h - memory for decompressed blocks: 2 MiB slabs, cut by size class
 * and recycled (slab.c).  The block cache is its only user.
 */
#ifndef QUASH_SLAB_H
#define QUASH_SLAB_H

#include <stddef.h>

struct qs_slabs;

/* A pool that maps at most max_bytes of slabs (none at all below one slab's size). */
struct qs_slabs *qs_slabs_create(size_t max_bytes);
/* Unmaps every slab: no buffer of the pool may be in use. */
void qs_slabs_destroy(struct qs_slabs *pool);
/*
 * A buffer of at least size bytes and its class (> 0), or NULL when the
 * size has no class or the pool is at its bound: the caller uses malloc().
 */
void *qs_slabs_alloc(struct qs_slabs *pool, size_t size, unsigned *cls);
void qs_slabs_free(struct qs_slabs *pool, void *buf, unsigned cls);
/* Bytes of slabs mapped. */
size_t qs_slabs_mapped(struct qs_slabs *pool);

#endif
