/*
 * chunk_cache.h - a source made of aligned chunks fetched from a slower
 * one (a remote object), held in a bounded memory cache and optionally in a
 * persistent cache directory.  A verifier above may set a check
 * (qs_source_ops.set_check): each chunk is then checked as it arrives and as
 * it is read back from the directory, before either keeps it (chunk_check.c).
 */
#ifndef QUASH_CHUNK_CACHE_H
#define QUASH_CHUNK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "chunk_fetcher.h"
#include "source.h"

#define CHUNK_DEFAULT_SIZE   (4u << 20)
#define CHUNK_MIN_SIZE       (64u << 10)
#define CHUNK_MAX_SIZE       (256u << 20)
#define CHUNK_DEFAULT_MEMORY (256u << 20)

/* The chunk size 'opt' asks for, or -EINVAL with a message. */
int chunk_cache_chunk_size(const struct qs_source_options *opt, size_t *chunk_size);

/*
 * A source of 'size' bytes read through 'fetcher' (ownership passes, even on
 * failure).  'identity' names the exact bytes (URL, size, ETag): it keys the
 * persistent cache.  'first' holds the object's first 'first_len' bytes
 * when the caller already has them (the open request fetched them), or is
 * NULL: the whole first chunk, min(size, chunk size) bytes, or fewer.  With
 * 'first' NULL, a 'first_len' is the open request the server could not
 * answer: if an earlier open kept those bytes in the cache directory as a
 * range, they stand in for it.  'notice' (copied, may be NULL) becomes the
 * source's notice.
 */
int chunk_cache_open(const struct chunk_fetcher *fetcher, const char *name, const char *identity,
		     uint64_t size, const struct qs_source_options *opt, const void *first,
		     size_t first_len, const char *notice, struct qs_source **out);

#endif
