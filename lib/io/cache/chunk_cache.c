/*
 * chunk_cache.c - a source made of aligned chunks of a slower one (a remote
 * object): reads from pieces where a profile's replay put them and from
 * chunks elsewhere, pins for the image's metadata, warm() for a replay,
 * hints for readahead; opening and closing it.
 *
 * The parts live beside it (chunk_cache_int.h): the table and its loads,
 * the pieces, the readahead streams and workers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_cache.h"
#include "chunk_cache_int.h"
#include "disk_cache.h"
#include "quash.h"

int chunk_cache_chunk_size(const struct qs_source_options *opt, size_t *chunk_size)
{
	size_t cs = opt && opt->chunk_size ? opt->chunk_size : CHUNK_DEFAULT_SIZE;

	if (cs < CHUNK_MIN_SIZE || cs > CHUNK_MAX_SIZE || cs % 4096)
		return qs_set_error(-EINVAL, "chunk size %zu: must be a multiple of 4 KiB from %u KiB to "
				    "%u MiB", cs, CHUNK_MIN_SIZE >> 10, CHUNK_MAX_SIZE >> 20);
	*chunk_size = cs;
	return 0;
}

/*
 * Inside a check, bytes of a chunk another load holds: straight from the
 * fetcher, kept nowhere (a check reads only the tree, which is checked
 * against its parents as it is used).
 */
static int fetch_direct(struct chunk_cache *cc, void *dst, size_t n, uint64_t pos)
{
	struct iovec iov = { dst, n };

	return cc->fetcher.fetch(cc->fetcher.ctx, &iov, 1, pos);
}

/*
 * [off, off+len) from pieces where they hold it, from chunks elsewhere.  A
 * read within what a profile's replay fetched needs no guess about what
 * comes next: the profile said, and reading ahead past its ranges would
 * cost requests the workload never needed.
 */
static int chunk_cache_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct chunk_cache *cc = src->priv;
	uint64_t pos = off, end = off + len;
	char *dst = buf;
	bool profiled = true, pieces;

	if (len == 0)
		return 0;
	if (off > cc->size || len > cc->size - off)
		return qs_set_error(-EIO, "read of %zu bytes at %llu is past the end (%llu bytes)", len,
				    (unsigned long long)off, (unsigned long long)cc->size);
	/*
	 * Unlocked: a piece missed by a stale count only sends the read to the
	 * chunks.  A check's read of the tree goes to the chunks too: pieces
	 * hold only data a replay asked for, and one still loading is waited for.
	 */
	pieces = __atomic_load_n(&cc->npieces, __ATOMIC_RELAXED) != 0 && !check_active();

	if (!pieces) {
		uint32_t first = off / cc->chunk_size, last = (off + len - 1) / cc->chunk_size;

		/* A read spanning chunks: fetch the later ones in parallel with the first. */
		pthread_mutex_lock(&cc->lock);
		for (uint32_t idx = first + 1; idx <= last; idx++)
			readahead_queue_locked(cc, idx);
		pthread_mutex_unlock(&cc->lock);
	}
	while (pos < end) {
		uint32_t idx = pos / cc->chunk_size;
		uint64_t start = (uint64_t)idx * cc->chunk_size;
		size_t n = pieces ? piece_copy(cc, dst, end - pos, pos) : 0;
		struct chunk *c;
		int ret;

		if (n == 0) {
			bool hit;

			n = end - pos < start + cc->chunk_size - pos ? end - pos : start + cc->chunk_size - pos;
			ret = chunk_acquire(cc, idx, &c, &hit);
			if (ret == 0 && c->bad && check_bad_in(cc, c, pos - start, n))
				ret = chunk_reread(cc, &c, hit, pos - start, n);
			if (ret == -EWOULDBLOCK)
				ret = fetch_direct(cc, dst, n, pos);
			else if (ret == 0) {
				memcpy(dst, c->data + (pos - start), n);
				profiled = profiled && c->warmed;
				chunk_release(cc, c);
			}
			if (ret < 0)
				return ret;
		}
		dst += n;
		pos += n;
	}
	if (profiled)
		return 0;
	/*
	 * While a replay runs, its profile is the readahead: a guess made now
	 * would fetch whole chunks of what the replay is fetching exactly.
	 */
	pthread_mutex_lock(&cc->lock);
	if (!cc->warming)
		readahead_locked(cc, off, len);
	pthread_mutex_unlock(&cc->lock);
	return 0;
}

/* Pin: fetch now, in few large requests, and keep for the source's life. */
static int chunk_cache_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct chunk_cache *cc = src->priv;
	uint32_t first, last;
	uint64_t pinned;

	if (!chunk_span(cc, off, len, &first, &last))
		return 0;
	pthread_mutex_lock(&cc->lock);
	pinned = cc->pinned_bytes;
	pthread_mutex_unlock(&cc->lock);
	if (pinned + (uint64_t)(last - first + 1) * cc->chunk_size > PIN_MAX_BYTES)
		return qs_set_error(-E2BIG, "will not pin more than %llu MiB in memory",
				    PIN_MAX_BYTES >> 20);
	return chunk_load_range(cc, first, last, true);
}

static int chunk_cache_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct chunk_cache *cc = src->priv;
	int ret;

	pthread_mutex_lock(&cc->lock);
	cc->warming++;
	pthread_mutex_unlock(&cc->lock);
	ret = piece_warm_range(cc, off, len);
	pthread_mutex_lock(&cc->lock);
	cc->warming--;
	pthread_mutex_unlock(&cc->lock);
	return ret;
}

/* Will be needed soon: queue for the workers and return. */
static int chunk_cache_willneed(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct chunk_cache *cc = src->priv;
	uint32_t first, last, idx;

	if (!chunk_span(cc, off, len, &first, &last))
		return 0;
	pthread_mutex_lock(&cc->lock);
	for (idx = first; idx <= last && idx - first < HINT_MAX_CHUNKS; idx++)
		readahead_queue_locked(cc, idx);
	pthread_mutex_unlock(&cc->lock);
	return 0;
}

static void chunk_cache_close(struct qs_source *src)
{
	struct chunk_cache *cc = src->priv;
	uint32_t i;

	readahead_stop(cc);
	if (cc->budget) {
		chunk_budget_leave(cc);
		__atomic_fetch_sub(&cc->budget->used, cc->lru_bytes, __ATOMIC_RELAXED);
	}
	for (i = 0; cc->table && i < cc->nchunks; i++)
		if (cc->table[i])
			chunk_free(cc->table[i]);
	while (cc->npieces)
		piece_drop_locked(cc, cc->npieces - 1);
	free(cc->pieces);
	free(cc->table);
	if (cc->disk)
		disk_cache_close(cc->disk);
	if (cc->fetcher.close)
		cc->fetcher.close(cc->fetcher.ctx);
	pthread_mutex_destroy(&cc->lock);
	pthread_cond_destroy(&cc->loaded);
	pthread_cond_destroy(&cc->work);
	free(cc->notice);
	free(cc);
}

/*
 * From now on, check what arrives before keeping it (a verifier above:
 * lib/verity/), and what was held before.  Units must tile the chunks.
 */
static int chunk_cache_set_check(struct qs_source *src, const struct qs_source_check *check)
{
	struct chunk_cache *cc = src->priv;

	if (!check->fn || !check->unit || cc->chunk_size % check->unit)
		return qs_set_error(-EINVAL, "%zu-byte chunks cannot be checked in units of %u bytes",
				    cc->chunk_size, check->unit);
	pthread_mutex_lock(&cc->lock);
	if (cc->has_check) {
		pthread_mutex_unlock(&cc->lock);
		return qs_set_error(-EINVAL, "the chunk cache is checked already");
	}
	cc->check = *check;
	__atomic_store_n(&cc->has_check, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cc->lock);
	chunk_check_held(cc);
	piece_check_held(cc);
	return 0;
}

static const struct qs_source_ops chunk_cache_ops = {
	.pread = chunk_cache_pread,
	.close = chunk_cache_close,
	.prefetch = chunk_cache_prefetch,
	.willneed = chunk_cache_willneed,
	.warm = chunk_cache_warm,
	.set_check = chunk_cache_set_check,
};

int chunk_cache_open(const struct chunk_fetcher *fetcher, const char *name, const char *identity,
		     uint64_t size, const struct qs_source_options *opt, const void *first,
		     size_t first_len, const char *notice, struct qs_source **out)
{
	struct chunk_cache *cc = calloc(1, sizeof(*cc));
	int ret;

	if (!cc) {
		if (fetcher->close)
			fetcher->close(fetcher->ctx);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	cc->fetcher = *fetcher;
	cc->size = size;
	pthread_mutex_init(&cc->lock, NULL);
	pthread_cond_init(&cc->loaded, NULL);
	pthread_cond_init(&cc->work, NULL);
	cc->lru.next = cc->lru.prev = &cc->lru;
	cc->memory_limit = opt && opt->memory_cache ? opt->memory_cache : CHUNK_DEFAULT_MEMORY;
	cc->budget = opt ? opt->memory_budget : NULL;
	if (cc->budget)
		chunk_budget_join(cc);
	ret = chunk_cache_chunk_size(opt, &cc->chunk_size);
	if (ret < 0)
		goto fail;
	if (size / cc->chunk_size >= CHUNK_MAX_COUNT) {
		ret = qs_set_error(-EFBIG, "%llu bytes is too large for %zu-byte chunks",
				   (unsigned long long)size, cc->chunk_size);
		goto fail;
	}
	cc->nchunks = (size + cc->chunk_size - 1) / cc->chunk_size;
	cc->table = calloc(cc->nchunks ? cc->nchunks : 1, sizeof(*cc->table));
	if (!cc->table || (notice && !(cc->notice = strdup(notice)))) {
		ret = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	if (opt && opt->cache_dir) {
		ret = disk_cache_open(opt->cache_dir, opt->cache_dir_limit, identity, cc->chunk_size,
				      &cc->disk);
		if (ret < 0)
			goto fail;
	}
	ret = piece_seed(cc, first, first_len);
	if (ret < 0)
		goto fail;
	*out = qs_source_alloc(&chunk_cache_ops, name, identity, size, cc);
	if (!*out) {
		ret = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	cc->name = (*out)->name;
	(*out)->notice = cc->notice;
	return 0;
fail:
	{
		struct qs_source tmp = { .priv = cc };

		chunk_cache_close(&tmp);
	}
	return ret;
}
