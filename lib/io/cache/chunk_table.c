/*
 * chunk_table.c - the chunk cache's core: the table of chunks, single-flight
 * loads, the LRU bounded by the memory limit, and the budget shared with
 * other caches.
 *
 * Every read is served from chunks.  The first thread to miss a chunk puts
 * a LOADING entry in the table and fetches it (from the cache directory, else
 * from the fetcher) without holding the lock; threads that miss the same
 * chunk meanwhile wait for that one load, so a chunk costs one request
 * however many readers want it.  Ready chunks sit on an LRU list bounded by
 * the memory limit, except pinned ones (the image's metadata), which stay.
 * Once the fetcher reports that the object changed (-ESTALE), every later
 * read fails the same way: bytes of two versions are never mixed.  With a
 * check set (chunk_check.c), a load checks what it fetched or read from the
 * cache directory before the chunk is published or written there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chunk_cache_int.h"
#include "cond_wait.h"
#include "disk_cache.h"
#include "quash.h"

size_t chunk_len(const struct chunk_cache *cc, uint32_t idx)
{
	uint64_t start = (uint64_t)idx * cc->chunk_size;

	return cc->size - start < cc->chunk_size ? cc->size - start : cc->chunk_size;
}

/* ---- LRU list and table; all under cc->lock ------------------------------ */

static void lru_unlink(struct chunk_cache *cc, struct chunk *c)
{
	if (!c->next)
		return;
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->prev = c->next = NULL;
	cc->lru_bytes -= c->len;
	if (cc->budget)
		__atomic_fetch_sub(&cc->budget->used, c->len, __ATOMIC_RELAXED);
}

static void lru_push(struct chunk_cache *cc, struct chunk *c)
{
	c->next = cc->lru.next;
	c->prev = &cc->lru;
	cc->lru.next->prev = c;
	cc->lru.next = c;
	cc->lru_bytes += c->len;
	if (cc->budget)
		__atomic_fetch_add(&cc->budget->used, c->len, __ATOMIC_RELAXED);
}

/* Over this cache's own limit (pieces included), or over the budget it shares with other caches? */
static bool over_limit(const struct chunk_cache *cc)
{
	return cc->lru_bytes + cc->piece_bytes > cc->memory_limit ||
	       (cc->budget && __atomic_load_n(&cc->budget->used, __ATOMIC_RELAXED) > cc->budget->limit);
}

void chunk_free(struct chunk *c)
{
	free(c->data);
	free(c->msg);
	free(c->bad);
	free(c);
}

void chunk_put_locked(struct chunk *c)
{
	if (--c->refs == 0 && !c->in_table)
		chunk_free(c);
}

static void table_remove(struct chunk_cache *cc, struct chunk *c)
{
	lru_unlink(cc, c);
	cc->table[c->idx] = NULL;
	c->in_table = false;
	if (c->refs == 0)
		chunk_free(c);
}

void chunk_forget_locked(struct chunk_cache *cc, struct chunk *c)
{
	if (!c->in_table || cc->table[c->idx] != c)
		return;
	if (c->pinned && c->state == CHUNK_READY)
		cc->pinned_bytes -= c->len;
	table_remove(cc, c);
}

/* Drop least recently used chunks nobody is copying from until under the limit. */
static void evict_locked(struct chunk_cache *cc)
{
	struct chunk *c = cc->lru.prev;

	while (over_limit(cc) && c != &cc->lru) {
		struct chunk *prev = c->prev;

		if (c->refs == 0)
			table_remove(cc, c);
		c = prev;
	}
}

void qs_memory_budget_init(struct qs_memory_budget *budget, uint64_t limit)
{
	memset(budget, 0, sizeof(*budget));
	budget->limit = limit;
	pthread_mutex_init(&budget->lock, NULL);
}

void qs_memory_budget_destroy(struct qs_memory_budget *budget)
{
	pthread_mutex_destroy(&budget->lock);
}

void chunk_budget_join(struct chunk_cache *cc)
{
	struct qs_memory_budget *b = cc->budget;

	pthread_mutex_lock(&b->lock);
	cc->budget_prev = NULL;
	cc->budget_next = b->members;
	if (b->members)
		b->members->budget_prev = cc;
	b->members = cc;
	pthread_mutex_unlock(&b->lock);
}

void chunk_budget_leave(struct chunk_cache *cc)
{
	struct qs_memory_budget *b = cc->budget;

	pthread_mutex_lock(&b->lock);
	if (cc->budget_prev)
		cc->budget_prev->budget_next = cc->budget_next;
	else if (b->members == cc)
		b->members = cc->budget_next;
	if (cc->budget_next)
		cc->budget_next->budget_prev = cc->budget_prev;
	cc->budget_next = cc->budget_prev = NULL;
	pthread_mutex_unlock(&b->lock);
}

static bool budget_over(const struct qs_memory_budget *b)
{
	return __atomic_load_n(&b->used, __ATOMIC_RELAXED) > b->limit;
}

/*
 * After a load, with no cache's lock held: still over the shared budget
 * once the loading cache evicted what it could (chunk_finish_locked()),
 * evict the other members' chunks nobody is copying from.  Only here is a
 * cache's lock taken under the budget's, and nothing takes the budget's
 * under a cache's, so waiting for each member's lock cannot deadlock; a
 * trylock would skip a busy member and leave the sum over the bound.
 */
void chunk_budget_settle(struct chunk_cache *cc)
{
	struct qs_memory_budget *b = cc->budget;

	if (!b || !budget_over(b))
		return;
	pthread_mutex_lock(&b->lock);
	for (struct chunk_cache *m = b->members; m && budget_over(b); m = m->budget_next) {
		pthread_mutex_lock(&m->lock);
		evict_locked(m);
		pthread_mutex_unlock(&m->lock);
	}
	pthread_mutex_unlock(&b->lock);
}

struct chunk *chunk_new_locked(struct chunk_cache *cc, uint32_t idx, bool pinned)
{
	struct chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->idx = idx;
	c->state = CHUNK_LOADING;
	c->refs = 1;
	c->pinned = pinned;
	c->len = chunk_len(cc, idx);
	c->in_table = true;
	c->loader = pthread_self();
	c->checked = __atomic_load_n(&cc->has_check, __ATOMIC_ACQUIRE);
	cc->table[idx] = c;
	return c;
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A load ended: publish the chunk or its failure, wake the waiters.  Keeps the caller's reference. */
void chunk_finish_locked(struct chunk_cache *cc, struct chunk *c, int err)
{
	if (err < 0) {
		c->state = CHUNK_FAILED;
		c->err = err;
		c->msg = strdup(qs_last_error());
		/* An interrupted reader or a short allocation says nothing about the server. */
		if (err != -EINTR && err != -ENOMEM) {
			cc->failed_until_ms = monotonic_ms() + FAILURE_HOLD_MS;
			cc->failed_err = err;
			snprintf(cc->failed_msg, sizeof(cc->failed_msg), "%s", qs_last_error());
		}
		if (err == -ESTALE && !cc->stale_err) {
			cc->stale_err = err;
			snprintf(cc->stale_msg, sizeof(cc->stale_msg), "%s", qs_last_error());
		}
		table_remove(cc, c);
	} else {
		c->state = CHUNK_READY;
		if (c->pinned)
			cc->pinned_bytes += c->len;
		else
			lru_push(cc, c);
		evict_locked(cc);
	}
	pthread_cond_broadcast(&cc->loaded);
}

void chunk_pin_locked(struct chunk_cache *cc, struct chunk *c)
{
	if (c->pinned)
		return;
	lru_unlink(cc, c);
	c->pinned = true;
	cc->pinned_bytes += c->len;
}

/* ---- loading ------------------------------------------------------------- */

int chunk_alloc_data(struct chunk *c)
{
	c->data = malloc(c->len);
	return c->data ? 0 : qs_set_error(-ENOMEM, "out of memory for a %zu-byte chunk", c->len);
}

/*
 * Chunk c from the cache directory, checked again when the cache checks (a
 * file is only as good as the directory): 0, or -ENOENT when it is not
 * there or wrong (then removed, so that a fetch replaces it).
 */
static int disk_load(struct chunk_cache *cc, struct chunk *c)
{
	if (!cc->disk || disk_cache_get(cc->disk, c->idx, c->data, c->len) < 0)
		return -ENOENT;
	if (!c->checked)
		return 0;
	c->filled = true;
	if (check_bytes(cc, (uint64_t)c->idx * cc->chunk_size, c->data, c->len, NULL) == 0)
		return 0;
	check_disk_event(cc, "chunk", (uint64_t)c->idx * cc->chunk_size);
	disk_cache_drop(cc->disk, c->idx);
	c->filled = false;
	return -ENOENT;
}

/*
 * c's bytes from the fetcher ('fetched': they are in already), checked
 * when the cache checks: wrong ones are fetched again once (a transient
 * corruption heals), and if still wrong, their units are zeroed and marked
 * (c->bad) and the chunk is not kept in the cache directory.
 */
static int fetch_checked(struct chunk_cache *cc, struct chunk *c, bool fetched)
{
	struct iovec iov = { c->data, c->len };
	uint64_t off = (uint64_t)c->idx * cc->chunk_size;
	int ret;

	for (int attempt = 0; c->checked || attempt == 0; attempt++) {
		if ((!fetched || attempt) && (ret = cc->fetcher.fetch(cc->fetcher.ctx, &iov, 1, off)) < 0)
			return ret;
		if (!c->checked)
			break;
		c->filled = true;
		free(c->bad);
		c->bad = NULL;
		ret = check_bytes(cc, off, c->data, c->len, attempt ? &c->bad : NULL);
		if (ret == 0)
			break;
		if (attempt == 1)
			return 0;
	}
	if (cc->disk)
		disk_cache_put(cc->disk, c->idx, c->data, c->len);
	return 0;
}

static int chunk_load(struct chunk_cache *cc, struct chunk *c)
{
	int ret = chunk_alloc_data(c);

	if (ret < 0)
		return ret;
	if (disk_load(cc, c) == 0)
		return 0;
	return fetch_checked(cc, c, false);
}

int chunk_stale_error_locked(struct chunk_cache *cc)
{
	return qs_set_error(cc->stale_err, "%s", cc->stale_msg);
}

/* Wait until a load makes progress, or CHUNK_INTERRUPT_POLL_NS, so that the caller can look for an interrupt. */
void chunk_wait_loaded_locked(struct chunk_cache *cc)
{
	qs_cond_wait_ns(&cc->loaded, &cc->lock, CHUNK_INTERRUPT_POLL_NS);
}

/* Wait for a chunk another thread loads; returns 0 with a reference, or its error. */
int chunk_wait_locked(struct chunk_cache *cc, struct chunk *c)
{
	int err;

	c->refs++;
	while (c->state == CHUNK_LOADING) {
		/* The loader may be another thread, slowed by the server: heed an interrupt meanwhile. */
		if (qs_source_interrupted()) {
			chunk_put_locked(c);
			return qs_set_error(-EINTR, "interrupted");
		}
		chunk_wait_loaded_locked(cc);
	}
	if (c->state == CHUNK_READY)
		return 0;
	err = qs_set_error(c->err, "%s", c->msg ? c->msg : "chunk load failed");
	chunk_put_locked(c);
	return err;
}

/* Chunk 'idx', ready, with a reference the caller drops with chunk_release() (chunk_cache_int.h). */
int chunk_acquire(struct chunk_cache *cc, uint32_t idx, struct chunk **out, bool *hit)
{
	struct chunk *c;
	int ret;

	if (hit)
		*hit = false;
	pthread_mutex_lock(&cc->lock);
	if (cc->stale_err) {
		ret = chunk_stale_error_locked(cc);
		pthread_mutex_unlock(&cc->lock);
		return ret;
	}
	c = cc->table[idx];
	if (c && c->state == CHUNK_LOADING && check_active()) {
		/*
		 * A check reads the tree through this cache: a chunk this thread
		 * is checking serves its bytes (the tree's are checked against
		 * their parents), and one another load holds is not waited for,
		 * since that load may be waiting for this one.
		 */
		ret = pthread_equal(c->loader, pthread_self()) && c->filled ? 0 : -EWOULDBLOCK;
		if (ret == 0)
			c->refs++;
		pthread_mutex_unlock(&cc->lock);
		*out = c;
		return ret;
	}
	if (c) {
		if (hit)
			*hit = c->state == CHUNK_READY;
		ret = chunk_wait_locked(cc, c);
		if (ret == 0 && c->next) {
			lru_unlink(cc, c);
			lru_push(cc, c);
		}
		pthread_mutex_unlock(&cc->lock);
		*out = c;
		return ret;
	}
	if (cc->failed_until_ms && monotonic_ms() < cc->failed_until_ms) {
		ret = qs_set_error(cc->failed_err, "%s", cc->failed_msg);
		pthread_mutex_unlock(&cc->lock);
		return ret;
	}
	c = chunk_new_locked(cc, idx, false);
	pthread_mutex_unlock(&cc->lock);
	if (!c)
		return qs_set_error(-ENOMEM, "out of memory");

	ret = chunk_load(cc, c);
	pthread_mutex_lock(&cc->lock);
	chunk_finish_locked(cc, c, ret);
	if (ret < 0)
		chunk_put_locked(c);
	pthread_mutex_unlock(&cc->lock);
	chunk_budget_settle(cc);
	*out = c;
	return ret;
}

void chunk_release(struct chunk_cache *cc, struct chunk *c)
{
	pthread_mutex_lock(&cc->lock);
	chunk_put_locked(c);
	pthread_mutex_unlock(&cc->lock);
}

/* ---- loading ranges: pins and warmed chunks in few large requests ------- */

/* Fetch chunks owned[0..n) (consecutive indices, LOADING) in one request. */
static int fetch_run(struct chunk_cache *cc, struct chunk **owned, uint32_t n)
{
	struct iovec *iov = calloc(n, sizeof(*iov));
	uint32_t i;
	int ret = 0;

	if (!iov)
		return qs_set_error(-ENOMEM, "out of memory");
	for (i = 0; i < n && ret == 0; i++) {
		ret = chunk_alloc_data(owned[i]);
		iov[i].iov_base = owned[i]->data;
		iov[i].iov_len = owned[i]->len;
	}
	if (ret == 0)
		ret = cc->fetcher.fetch(cc->fetcher.ctx, iov, n, (uint64_t)owned[0]->idx * cc->chunk_size);
	free(iov);
	for (i = 0; i < n && ret == 0; i++)
		owned[i]->filled = true;    /* a check of one may read the tree in another */
	for (i = 0; i < n && ret == 0; i++)
		ret = fetch_checked(cc, owned[i], true);
	return ret;
}

/* Load the chunks this thread created for a pin: the cache directory first, then runs of requests. */
static int pin_load(struct chunk_cache *cc, struct chunk **owned, uint32_t n)
{
	uint32_t i = 0, run, max_run = PIN_RUN_MAX_BYTES / cc->chunk_size;
	int ret = 0, err;

	if (max_run == 0)
		max_run = 1;
	while (i < n) {
		err = 0;
		if (ret == 0 && cc->disk && chunk_alloc_data(owned[i]) == 0 && disk_load(cc, owned[i]) == 0)
			run = 1;
		else {
			for (run = 1; i + run < n && run < max_run &&
			     owned[i + run]->idx == owned[i]->idx + run; run++)
				;
			free(owned[i]->data);
			owned[i]->data = NULL;
			err = ret ? ret : fetch_run(cc, owned + i, run);
		}
		pthread_mutex_lock(&cc->lock);
		for (uint32_t k = i; k < i + run; k++) {
			chunk_finish_locked(cc, owned[k], err);
			chunk_put_locked(owned[k]);
		}
		pthread_mutex_unlock(&cc->lock);
		chunk_budget_settle(cc);
		if (err < 0 && ret == 0)
			ret = err;
		i += run;
	}
	return ret;
}

/*
 * Load chunks [first, last] in runs of few large requests: pinned for
 * prefetch(), on the LRU for warm().  Waits for chunks others were loading
 * only when pinning.
 */
int chunk_load_range(struct chunk_cache *cc, uint32_t first, uint32_t last, bool pin)
{
	uint32_t n = 0, idx;
	struct chunk **owned = calloc(last - first + 1, sizeof(*owned));
	int ret = 0;

	if (!owned)
		return qs_set_error(-ENOMEM, "out of memory");
	pthread_mutex_lock(&cc->lock);
	for (idx = first; idx <= last; idx++) {
		struct chunk *c = cc->table[idx];

		if (!c) {
			c = chunk_new_locked(cc, idx, pin);
			if (!c) {
				ret = qs_set_error(-ENOMEM, "out of memory");
				break;
			}
			c->warmed = !pin;
			owned[n++] = c;
		} else if (pin && c->state == CHUNK_READY) {
			chunk_pin_locked(cc, c);
		}
	}
	pthread_mutex_unlock(&cc->lock);
	if (n) {
		int err = pin_load(cc, owned, n);

		if (ret == 0)
			ret = err;
	}
	free(owned);
	if (ret < 0 || !pin)
		return ret;
	/* Chunks that other threads were loading: wait for them, then pin. */
	pthread_mutex_lock(&cc->lock);
	for (idx = first; idx <= last && ret == 0; idx++) {
		struct chunk *c = cc->table[idx];

		if (!c || c->pinned)
			continue;
		ret = chunk_wait_locked(cc, c);
		if (ret == 0) {
			chunk_pin_locked(cc, c);
			chunk_put_locked(c);
		}
	}
	pthread_mutex_unlock(&cc->lock);
	return ret;
}

/* The chunks [*first, *last] holding [off, off+len) clipped to the object; false if none. */
bool chunk_span(const struct chunk_cache *cc, uint64_t off, uint64_t len, uint32_t *first,
		       uint32_t *last)
{
	if (off >= cc->size || len == 0)
		return false;
	if (len > cc->size - off)
		len = cc->size - off;
	*first = off / cc->chunk_size;
	*last = (off + len - 1) / cc->chunk_size;
	return true;
}

/* ---- a check set late (chunk_check.c) ---------------------------------- */

int chunk_reread(struct chunk_cache *cc, struct chunk **cp, bool hit, size_t in, size_t n)
{
	struct chunk *c = *cp;
	uint32_t idx = c->idx;
	int ret;

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
	ret = check_units(cc, c, in, n);
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

void chunk_check_held(struct chunk_cache *cc)
{
	for (uint32_t idx = 0; idx < cc->nchunks; idx++)
		check_held_chunk(cc, idx);
}
