/*
 * chunk_check.c - a verifier's check of what the chunk cache keeps
 * (qs_source_ops.set_check; lib/verity/ sets it for a verified image): the
 * check and its wrong units here, what to do about them where chunks
 * (chunk_table.c) and pieces (pieces.c) are loaded.
 *
 * A chunk is checked as it arrives, before it goes on the LRU or into the
 * cache directory, and again when it is read back from there.  A chunk
 * that is wrong is fetched again once; if it is still wrong, each unit is
 * checked on its own, the wrong ones are zeroed and marked, and the chunk
 * is kept in memory only: its right units serve reads, a read of a wrong
 * one fails with the check's message, and the next such read fetches the
 * chunk again, so that a server put right heals without a remount.
 *
 * The check reads the tree through this same cache (an appended tree is
 * part of the object).  A chunk this thread is checking serves the tree's
 * bytes it holds, and a chunk another thread is loading is not waited for
 * but read from the fetcher (chunk_acquire()): two loads checking each
 * other's tree would otherwise wait for each other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_cache_int.h"
#include "disk_cache.h"
#include "quash.h"

static __thread unsigned checking;     /* depth of checks on this thread */

bool check_active(void)
{
	return checking > 0;
}

static int run_check(struct chunk_cache *cc, uint64_t off, const char *buf, size_t len)
{
	int ret;

	checking++;
	ret = cc->check.fn(cc->check.ctx, off, buf, len);
	checking--;
	return ret;
}

int check_bytes(struct chunk_cache *cc, uint64_t off, char *buf, size_t len, uint8_t **bad)
{
	uint32_t unit = cc->check.unit;
	size_t units = (len + unit - 1) / unit;
	bool any = false;

	if (run_check(cc, off, buf, len) == 0)
		return 0;
	if (!bad)
		return 1;
	*bad = calloc((units + 7) / 8, 1);
	if (!*bad)
		return 1;       /* unchecked units are as good as wrong ones: a retry fetches them */
	for (size_t u = 0; u < units; u++) {
		size_t at = u * unit, n = len - at < unit ? len - at : unit;

		if (run_check(cc, off + at, buf + at, n) != 0) {
			memset(buf + at, 0, n);
			(*bad)[u / 8] |= (uint8_t)(1u << (u % 8));
			any = true;
		}
	}
	if (!any) {
		free(*bad);
		*bad = NULL;
		return 0;
	}
	return 1;
}

void check_disk_event(struct chunk_cache *cc, const char *what, uint64_t off)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "cache directory: %s at %llu failed its check, fetched again: %s", what,
		 (unsigned long long)off, qs_last_error());
	qs_source_event(cc->name, msg);
}

static bool unit_bad(const struct chunk *c, size_t u)
{
	return c->bad && (c->bad[u / 8] >> (u % 8)) & 1;
}

bool check_bad_in(const struct chunk_cache *cc, const struct chunk *c, size_t in, size_t n)
{
	for (size_t u = in / cc->check.unit; u <= (in + n - 1) / cc->check.unit; u++)
		if (unit_bad(c, u))
			return true;
	return false;
}

int check_units(struct chunk_cache *cc, const struct chunk *c, size_t in, size_t n)
{
	uint32_t unit = cc->check.unit;
	int ret = 0;

	/* The check of a zeroed unit says which hash it fails, as it did when the unit arrived. */
	for (size_t u = in / unit; ret == 0 && u <= (in + n - 1) / unit; u++) {
		size_t at = u * unit, len = c->len - at < unit ? c->len - at : unit;

		if (unit_bad(c, u))
			ret = run_check(cc, (uint64_t)c->idx * cc->chunk_size + at, c->data + at, len);
	}
	return ret;
}
