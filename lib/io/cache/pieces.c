/*
 * pieces.c - exact ranges a profile's replay fetched ("pieces"), held beside
 * the chunks within the same memory limit, and the open request's bytes
 * seeding the cache.
 *
 * A profile's replay (warm()) knows exactly which bytes will be read, so it
 * fetches those and no more: fetching whole chunks instead costs several
 * times the bytes, and on a slow link the bytes are the time (the fleet
 * bench, docs/benchmarks.md).  Where the chunks are already held, in memory
 * or in the cache directory, warm() loads those instead.  A piece fetched is
 * written to the cache directory as a range, and the next replay of the
 * same profile reads each range there first: a node starting the same
 * workload again asks the server for nothing but the open request.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_cache_int.h"
#include "disk_cache.h"
#include "quash.h"

/* The index of the first piece ending after 'off'. */
static uint32_t piece_search_locked(const struct chunk_cache *cc, uint64_t off)
{
	uint32_t lo = 0, hi = cc->npieces;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cc->pieces[mid]->off + cc->pieces[mid]->len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool piece_overlaps_locked(const struct chunk_cache *cc, uint64_t off, uint64_t len)
{
	uint32_t i = piece_search_locked(cc, off);

	return i < cc->npieces && cc->pieces[i]->off < off + len;
}

static void piece_free(struct piece *p)
{
	free(p->data);
	free(p);
}

static void piece_account_locked(struct chunk_cache *cc, const struct piece *p, bool add)
{
	if (add)
		cc->piece_bytes += p->len;
	else
		cc->piece_bytes -= p->len;
	if (cc->budget) {
		if (add)
			__atomic_fetch_add(&cc->budget->used, p->len, __ATOMIC_RELAXED);
		else
			__atomic_fetch_sub(&cc->budget->used, p->len, __ATOMIC_RELAXED);
	}
}

/* Take piece i out of the set; freed now, or by the last reader copying from it. */
void piece_drop_locked(struct chunk_cache *cc, uint32_t i)
{
	struct piece *p = cc->pieces[i];

	memmove(cc->pieces + i, cc->pieces + i + 1, (cc->npieces - i - 1) * sizeof(*cc->pieces));
	__atomic_store_n(&cc->npieces, cc->npieces - 1, __ATOMIC_RELAXED);
	piece_account_locked(cc, p, false);
	p->dropped = true;
	if (p->refs == 0)
		piece_free(p);
}

/* Add a piece; false (the caller frees it) if another overlaps it or there is no room. */
static bool piece_insert_locked(struct chunk_cache *cc, struct piece *p)
{
	uint32_t i = piece_search_locked(cc, p->off);

	if ((i < cc->npieces && cc->pieces[i]->off < p->off + p->len) || cc->npieces == PIECE_MAX_COUNT)
		return false;
	if (cc->npieces == cc->pieces_cap) {
		uint32_t cap = cc->pieces_cap ? 2 * cc->pieces_cap : 64;
		struct piece **a = realloc(cc->pieces, cap * sizeof(*a));

		if (!a)
			return false;
		cc->pieces = a;
		cc->pieces_cap = cap;
	}
	memmove(cc->pieces + i + 1, cc->pieces + i, (cc->npieces - i) * sizeof(*cc->pieces));
	cc->pieces[i] = p;
	__atomic_store_n(&cc->npieces, cc->npieces + 1, __ATOMIC_RELAXED);
	piece_account_locked(cc, p, true);
	return true;
}

/*
 * Copy what a piece holds of [off, off+len) from off on: the bytes copied,
 * 0 if no piece holds off.  Bytes are copied unlocked under a reference.
 * A piece is kept after it was read: the same bytes are often read twice
 * (two threads missing the block cache at once, then the page-cache fill),
 * and a dropped piece would send the second read to a whole chunk's fetch.
 */
size_t piece_copy(struct chunk_cache *cc, void *buf, size_t len, uint64_t off)
{
	struct piece *p;
	uint32_t i;
	size_t n;

	pthread_mutex_lock(&cc->lock);
	i = piece_search_locked(cc, off);
	/* After the object changed, the chunks' path says so: every read fails alike. */
	if (cc->stale_err || i == cc->npieces || cc->pieces[i]->off > off) {
		pthread_mutex_unlock(&cc->lock);
		return 0;
	}
	p = cc->pieces[i];
	p->refs++;
	n = p->off + p->len - off < len ? p->off + p->len - off : len;
	/* Still arriving: wait for these bytes, not for the whole piece. */
	while (p->loading && p->filled < off + n - p->off && !qs_source_interrupted())
		chunk_wait_loaded_locked(cc);
	/* Its request failed (or an interrupt came): the chunks' path, with its own errors, instead. */
	if (p->dropped || p->filled < off + n - p->off)
		n = 0;
	pthread_mutex_unlock(&cc->lock);
	if (n)
		memcpy(buf, p->data + (off - p->off), n);
	pthread_mutex_lock(&cc->lock);
	p->read = p->read || n;
	if (--p->refs == 0 && p->dropped)
		piece_free(p);
	pthread_mutex_unlock(&cc->lock);
	return n;
}

/*
 * Room for 'len' more bytes of pieces within the warm() budget: pieces
 * already read from are dropped first, oldest offset first; ones nobody
 * read yet are what the workload is about to want, so rather than drop
 * them warm() declines.
 */
static bool piece_room_locked(struct chunk_cache *cc, uint64_t len)
{
	uint64_t limit = cc->memory_limit / WARM_SHARE_DIV;
	uint32_t i = 0;

	while (cc->piece_bytes + len > limit && i < cc->npieces) {
		if (cc->pieces[i]->read && !cc->pieces[i]->loading)
			piece_drop_locked(cc, i);
		else
			i++;
	}
	return cc->piece_bytes + len <= limit;
}

struct piece_load {
	struct chunk_cache *cc;
	struct piece *p;
};

/* The fetcher's progress: readers waiting on these bytes may go on. */
static void piece_progress(void *arg, size_t filled)
{
	struct piece_load *l = arg;

	pthread_mutex_lock(&l->cc->lock);
	if (filled > l->p->filled && filled <= l->p->len) {
		l->p->filled = filled;
		pthread_cond_broadcast(&l->cc->loaded);
	}
	pthread_mutex_unlock(&l->cc->lock);
}

/* A new piece for exactly [off, off+len), in the set and loading; NULL if out of memory. */
static struct piece *piece_new_locked(struct chunk_cache *cc, uint64_t off, uint64_t len)
{
	struct piece *p = calloc(1, sizeof(*p));

	if (!p || !(p->data = malloc(len))) {
		free(p);
		return NULL;
	}
	p->off = off;
	p->len = len;
	p->loading = true;
	if (!piece_insert_locked(cc, p)) {
		piece_free(p);
		return NULL;
	}
	return p;
}

/*
 * [off, off+len) as an earlier replay kept it whole in the cache directory,
 * made a piece: true if so.  Looked for before the range is trimmed to the
 * chunks held around it, since the chunks (the metadata pinned at the end
 * of that replay, say) may have come in after it was kept.
 */
static bool warm_kept(struct chunk_cache *cc, uint64_t off, uint64_t len)
{
	struct piece *p;
	bool ok;

	/* A first replay has none: a look at the file's name and size before the buffer is made. */
	if (!cc->disk || len > SIZE_MAX || !disk_cache_has_range(cc->disk, off, (size_t)len) ||
	    !(p = calloc(1, sizeof(*p))))
		return false;
	p->off = off;
	p->len = p->filled = (size_t)len;
	p->data = malloc(p->len);
	if (!p->data || disk_cache_get_range(cc->disk, off, p->data, p->len) < 0) {
		piece_free(p);
		return false;
	}
	/* A file is only as good as the directory: checked again, and removed if wrong. */
	if (__atomic_load_n(&cc->has_check, __ATOMIC_ACQUIRE) && check_bytes(cc, off, p->data, p->len, NULL)) {
		check_disk_event(cc, "range", off);
		disk_cache_drop_range(cc->disk, off, p->len);
		piece_free(p);
		return false;
	}
	pthread_mutex_lock(&cc->lock);
	ok = !cc->stale_err && !piece_overlaps_locked(cc, off, len) && piece_room_locked(cc, len) &&
	     piece_insert_locked(cc, p);
	pthread_mutex_unlock(&cc->lock);
	if (!ok)
		piece_free(p);
	return ok;
}

/*
 * Fill piece p, which this thread made: streamed where the fetcher can,
 * so that a reader waits only for its own bytes, not for a large piece (a
 * whole shared library) to arrive.  A piece that failed leaves the set.
 */
static int piece_fetch(struct chunk_cache *cc, struct piece *p)
{
	struct piece_load l = { cc, p };
	struct iovec iov = { p->data, p->len };
	bool from_disk = cc->disk && disk_cache_get_range(cc->disk, p->off, p->data, p->len) == 0;
	bool checked = __atomic_load_n(&cc->has_check, __ATOMIC_ACQUIRE);
	int ret = 0;

	/* Checked bytes are announced all at once, after the check: no streaming. */
	if (!from_disk && cc->fetcher.fetch_stream && !checked)
		ret = cc->fetcher.fetch_stream(cc->fetcher.ctx, p->data, p->len, p->off, piece_progress, &l);
	else if (!from_disk)
		ret = cc->fetcher.fetch(cc->fetcher.ctx, &iov, 1, p->off);
	/* A wrong piece leaves the set unkept: the chunks' path fetches, checks and reports it. */
	if (ret == 0 && checked && check_bytes(cc, p->off, p->data, p->len, NULL)) {
		if (from_disk) {
			check_disk_event(cc, "range", p->off);
			disk_cache_drop_range(cc->disk, p->off, p->len);
		}
		ret = 1;
	}
	pthread_mutex_lock(&cc->lock);
	if (ret == -ESTALE && !cc->stale_err) {
		cc->stale_err = ret;
		snprintf(cc->stale_msg, sizeof(cc->stale_msg), "%s", qs_last_error());
	}
	p->loading = false;
	if (ret == 0) {
		p->filled = p->len;
		p->refs++;      /* for the copy to the cache directory below, readers let go meanwhile */
	} else {
		/* Loading pieces are never dropped for room, and close waits for the replay: it is there. */
		uint32_t i = piece_search_locked(cc, p->off);

		if (i < cc->npieces && cc->pieces[i] == p)
			piece_drop_locked(cc, i);
	}
	pthread_cond_broadcast(&cc->loaded);
	pthread_mutex_unlock(&cc->lock);
	if (ret != 0)
		return ret > 0 ? 0 : ret;
	/* Kept for the next mount: the same profile asks for the same ranges. */
	if (!from_disk && cc->disk)
		disk_cache_put_range(cc->disk, p->off, p->data, p->len);
	pthread_mutex_lock(&cc->lock);
	if (--p->refs == 0 && p->dropped)
		piece_free(p);
	pthread_mutex_unlock(&cc->lock);
	return 0;
}

/* Are chunks [first, last] all held, in memory (or loading) or in the cache directory? */
static bool chunks_held(struct chunk_cache *cc, uint32_t first, uint32_t last)
{
	for (uint32_t idx = first; idx <= last; idx++) {
		bool in_memory;

		pthread_mutex_lock(&cc->lock);
		in_memory = cc->table[idx] != NULL;
		pthread_mutex_unlock(&cc->lock);
		if (!in_memory && !(cc->disk && disk_cache_has(cc->disk, idx, chunk_len(cc, idx))))
			return false;
	}
	return true;
}

/*
 * A profile's replay: fetch [off, off+len) now.  Chunks held in memory or
 * in the cache directory cost no request, so those are loaded; otherwise
 * exactly these bytes become a piece.  Declines (-E2BIG) past its budget.
 */
int piece_warm_range(struct chunk_cache *cc, uint64_t off, uint64_t len)
{
	struct piece *p = NULL;
	uint32_t first, last;
	int ret = 0;

	if (!chunk_span(cc, off, len, &first, &last))
		return 0;
	if (len > cc->size - off)
		len = cc->size - off;
	if (__atomic_load_n(&cc->has_check, __ATOMIC_ACQUIRE)) {
		/* Only whole units can be checked: the range grows to them. */
		uint64_t unit = cc->check.unit, end = (off + len + unit - 1) / unit * unit;

		off -= off % unit;
		len = (end < cc->size ? end : cc->size) - off;
	}
	if (chunks_held(cc, first, last)) {
		uint64_t want = (uint64_t)(last - first + 1) * cc->chunk_size;

		pthread_mutex_lock(&cc->lock);
		if (cc->warmed_bytes + want > cc->memory_limit / WARM_SHARE_DIV)
			ret = -E2BIG;
		else
			cc->warmed_bytes += want;
		pthread_mutex_unlock(&cc->lock);
		return ret ? qs_set_error(ret, "will not warm more than 1/%u of the memory cache", WARM_SHARE_DIV)
			   : chunk_load_range(cc, first, last, false);
	}
	if (warm_kept(cc, off, len))
		return 0;
	/* Chunks held at either end (the first chunk, which opening fetched) need no second fetch. */
	for (; first < last && chunks_held(cc, first, first); first++) {
		len -= (uint64_t)(first + 1) * cc->chunk_size - off;
		off = (uint64_t)(first + 1) * cc->chunk_size;
	}
	for (; last > first && chunks_held(cc, last, last); last--)
		len = (uint64_t)last * cc->chunk_size - off;
	/* What no piece holds yet, gap by gap: one may hold its start (the open request's 64 KiB). */
	for (uint64_t end = off + len; off < end && ret == 0;) {
		uint64_t gap_end = end;
		uint32_t i;

		pthread_mutex_lock(&cc->lock);
		i = piece_search_locked(cc, off);
		if (i < cc->npieces && cc->pieces[i]->off < end)
			gap_end = cc->pieces[i]->off > off ? cc->pieces[i]->off : cc->pieces[i]->off + cc->pieces[i]->len;
		if (cc->stale_err)
			ret = chunk_stale_error_locked(cc);
		else if (i < cc->npieces && cc->pieces[i]->off <= off)
			p = NULL;       /* held (or being fetched by another replay thread) from here */
		else if (!piece_room_locked(cc, gap_end - off))
			ret = qs_set_error(-E2BIG, "will not hold more than 1/%u of the memory cache in pieces",
					   WARM_SHARE_DIV);
		else if (!(p = piece_new_locked(cc, off, gap_end - off)))
			ret = qs_set_error(-ENOMEM, "out of memory for a %llu-byte piece",
					   (unsigned long long)(gap_end - off));
		pthread_mutex_unlock(&cc->lock);
		if (ret == 0 && p)
			ret = piece_fetch(cc, p);
		off = gap_end < end ? gap_end : end;
	}
	return ret;
}

/*
 * The open request's bytes become chunk 0, so the superblock costs no
 * second trip; fewer bytes than a chunk (a profile says what else to
 * fetch) become a piece, kept in the cache directory as a range like the
 * replay's ('fresh': from the server, not from there).
 */
static int seed_first_chunk(struct chunk_cache *cc, const void *first, size_t first_len, bool fresh)
{
	struct chunk *c;

	if (first_len < chunk_len(cc, 0)) {
		struct piece *p = calloc(1, sizeof(*p));

		if (!p || !(p->data = malloc(first_len))) {
			free(p);
			return qs_set_error(-ENOMEM, "out of memory");
		}
		p->len = p->filled = first_len;
		memcpy(p->data, first, first_len);
		if (!piece_insert_locked(cc, p)) {
			piece_free(p);
			return qs_set_error(-ENOMEM, "out of memory");
		}
		if (fresh && cc->disk)
			disk_cache_put_range(cc->disk, 0, first, first_len);
		return 0;
	}
	c = chunk_new_locked(cc, 0, false);

	if (!c || chunk_alloc_data(c) < 0)
		return qs_set_error(-ENOMEM, "out of memory");
	memcpy(c->data, first, c->len);
	if (fresh && cc->disk)
		disk_cache_put(cc->disk, 0, c->data, c->len);
	chunk_finish_locked(cc, c, 0);
	chunk_put_locked(c);
	chunk_budget_settle(cc);
	return 0;
}

int piece_seed(struct chunk_cache *cc, const void *first, size_t first_len)
{
	size_t len;
	void *kept;
	int ret = 0;

	if (first && first_len && cc->size)
		return seed_first_chunk(cc, first, first_len, true);
	if (!first_len || !cc->size || !cc->disk)
		return 0;
	/* No open request (the server unreachable): its bytes as an earlier open kept them. */
	len = first_len < cc->size ? first_len : (size_t)cc->size;
	kept = malloc(len);
	if (kept && disk_cache_get_range(cc->disk, 0, kept, len) == 0)
		ret = seed_first_chunk(cc, kept, len, false);
	free(kept);
	return ret;
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
void piece_check_held(struct chunk_cache *cc)
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
		if (--p->refs == 0 && p->dropped)
			piece_free(p);
		pthread_mutex_unlock(&cc->lock);
	}
	free(held);
}
