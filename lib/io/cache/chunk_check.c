/*
 * chunk_check.c - a verifier's check of what the chunk cache keeps
 * (qs_source_ops.set_check; lib/verity/ sets it for a verified image).
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

int check_reread(struct chunk_cache *cc, struct chunk **cp, bool hit, size_t in, size_t n)
{
	struct chunk *c = *cp;
	uint32_t idx = c->idx, unit = cc->check.unit;
	int ret = 0;

	if (hit) {
		pthread_mutex_lock(&cc->lock);
		chunk_forget_locked(cc, c);
		chunk_put_locked(c);
		pthread_mutex_unlock(&cc->lock);
		*cp = NULL;
		ret = chunk_acquire(cc, idx, &c, NULL);
		if (ret < 0)
			return ret;
		*cp = c;
	}
	/* The check of a zeroed unit says which hash it fails, as it did when the unit arrived. */
	for (size_t u = in / unit; ret == 0 && u <= (in + n - 1) / unit; u++) {
		size_t at = u * unit, len = c->len - at < unit ? c->len - at : unit;

		if (unit_bad(c, u) && (ret = run_check(cc, (uint64_t)idx * cc->chunk_size + at, c->data + at, len)) > 0)
			ret = -EIO;
	}
	if (ret < 0) {
		chunk_release(cc, c);
		*cp = NULL;
	}
	return ret;
}

/* Chunk idx, held before the check was set: checked now, and dropped (memory and directory) if wrong. */
static void check_held_chunk(struct chunk_cache *cc, uint32_t idx)
{
	struct chunk *c;
	int wrong;

	pthread_mutex_lock(&cc->lock);
	c = cc->table[idx];
	if (!c || c->checked || chunk_wait_locked(cc, c) < 0) {
		pthread_mutex_unlock(&cc->lock);
		return;
	}
	pthread_mutex_unlock(&cc->lock);
	wrong = check_bytes(cc, (uint64_t)idx * cc->chunk_size, c->data, c->len, NULL);
	pthread_mutex_lock(&cc->lock);
	if (wrong)
		chunk_forget_locked(cc, c);
	else
		c->checked = true;
	chunk_put_locked(c);
	pthread_mutex_unlock(&cc->lock);
	if (wrong && cc->disk)
		disk_cache_drop(cc->disk, idx);
}

/* Piece p is out of the set now if it is still in it; the last reader frees it. */
static void piece_forget_locked(struct chunk_cache *cc, struct piece *p)
{
	for (uint32_t i = 0; i < cc->npieces; i++)
		if (cc->pieces[i] == p) {
			piece_drop_locked(cc, i);
			return;
		}
}

/*
 * The pieces held now (the open request's bytes; no replay runs before
 * the check is set): checked, and dropped if wrong or not whole units.
 */
static void check_held_pieces(struct chunk_cache *cc)
{
	uint32_t unit = cc->check.unit, n;
	struct piece **held;

	pthread_mutex_lock(&cc->lock);
	n = cc->npieces;
	held = calloc(n ? n : 1, sizeof(*held));
	for (uint32_t i = 0; i < n; i++) {
		if (held) {
			held[i] = cc->pieces[i];
			held[i]->refs++;
		}
	}
	while (!held && cc->npieces)
		piece_drop_locked(cc, cc->npieces - 1);
	pthread_mutex_unlock(&cc->lock);
	for (uint32_t i = 0; held && i < n; i++) {
		struct piece *p = held[i];
		bool whole = !p->loading && p->off % unit == 0 && (p->len % unit == 0 || p->off + p->len == cc->size);
		int wrong = !whole || check_bytes(cc, p->off, p->data, p->len, NULL);

		if (wrong && cc->disk)
			disk_cache_drop_range(cc->disk, p->off, p->len);
		pthread_mutex_lock(&cc->lock);
		if (wrong)
			piece_forget_locked(cc, p);
		if (--p->refs == 0 && p->dropped) {
			free(p->data);
			free(p);
		}
		pthread_mutex_unlock(&cc->lock);
	}
	free(held);
}

void check_held(struct chunk_cache *cc)
{
	for (uint32_t idx = 0; idx < cc->nchunks; idx++)
		check_held_chunk(cc, idx);
	check_held_pieces(cc);
}
