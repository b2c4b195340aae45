/*
 * chunk_cache.c - remote bytes in aligned chunks: single-flight loads, a
 * bounded LRU in memory, pinned metadata, readahead and background fetches.
 *
 * Every read is served from chunks.  The first thread to miss a chunk puts
 * a LOADING entry in the table and fetches it (from the cache directory, else
 * from the fetcher) without holding the lock; threads that miss the same
 * chunk meanwhile wait for that one load, so a chunk costs one request
 * however many readers want it.  Ready chunks sit on an LRU list bounded by
 * the memory limit, except pinned ones (the image's metadata), which stay.
 *
 * Sequential reads are noticed per stream (a few recent read positions);
 * each continuation doubles the stream's window, up to a limit, and the
 * chunks ahead are queued to a few worker threads, which is also how
 * several requests are in flight at once.  Once the fetcher reports that the
 * object changed (-ESTALE), every later read fails the same way: bytes of
 * two versions are never mixed.
 *
 * A profile's replay (warm()) knows exactly which bytes will be read, so it
 * fetches those and no more: "pieces", exact ranges held beside the chunks,
 * within the same memory limit.  Fetching the whole chunks
 * instead cost 4.4x the bytes on the fleet bench's Python start-up (77.8
 * MiB of 4 MiB chunks for 17.5 MiB of profile), and at 200 Mbit/s a node
 * the bytes are the time.  Where the chunks are already held, in memory or
 * in the cache directory, warm() loads those instead.  A piece fetched is
 * written to the cache directory as a range, and the next replay of the
 * same profile reads each range there first: a node starting the same
 * workload again asks the server for nothing but the open request.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chunk_cache.h"
#include "cond_wait.h"
#include "disk_cache.h"
#include "quash.h"

#define CHUNK_MAX_COUNT      (1u << 22)   /* objects needing more chunks are refused */
#define PIN_MAX_BYTES        (512ull << 20) /* bound on pinned (metadata) bytes */
#define PIN_RUN_MAX_BYTES    (64u << 20)  /* largest single request of a pinned range */
#define READAHEAD_MAX_CHUNKS 8u           /* a sequential stream's window grows up to this */
#define READAHEAD_STREAMS    16           /* sequential readers told apart */
#define READAHEAD_SLACK      (1u << 20)   /* how far off a stream's end a read may start */
#define READAHEAD_MIN_RUN    (256u << 10) /* a stream reads this much before readahead starts */
#define HINT_MAX_CHUNKS      64u          /* one async prefetch hint queues at most this many */
#define WARM_SHARE_DIV       2u           /* warm() fills at most this fraction of the memory limit */
#define PIECE_MAX_COUNT      65536u       /* pieces held at once; warm() declines beyond */
#define WORKERS              4            /* background fetch threads */
#define QUEUE_LEN            256          /* pending background fetches; more are dropped */
#define CHUNK_INTERRUPT_POLL_NS (100 * 1000000L) /* a reader waiting on another's fetch checks for an interrupt */
#define MSG_MAX              256
/*
 * After a load fails (the server gave no answer within the whole retry
 * budget, say), new loads fail at once for this long with the same error.
 * The kernel follows a failed readahead with a read of the page itself:
 * without the hold, one read(2) on a dead server waited two budgets.
 */
#define FAILURE_HOLD_MS      2000

enum chunk_state { CHUNK_LOADING, CHUNK_READY, CHUNK_FAILED };

struct chunk {
	uint32_t idx;
	enum chunk_state state;
	bool in_table;
	bool pinned;
	bool warmed;                    /* loaded by warm(): a profile said it would be read */
	unsigned refs;
	int err;                        /* CHUNK_FAILED: why, for every waiter */
	char *msg;
	size_t len;
	char *data;
	struct chunk *prev, *next;      /* LRU list, most recent first; only ready, unpinned chunks */
};

/* Exact bytes a profile's replay fetched; read from, then dropped. */
struct piece {
	uint64_t off;
	size_t len;
	size_t filled;                  /* the first bytes in: readable while the rest arrives */
	bool loading;                   /* its request is under way */
	bool read;                      /* read from at least once: the first to go for room */
	unsigned refs;                  /* readers copying from it, unlocked */
	bool dropped;                   /* out of the set; the last reader frees it */
	char *data;
};

struct stream {
	uint64_t start;                 /* where the stream's first read began */
	uint64_t next_off;              /* where a continuing read starts */
	uint32_t window;                /* chunks to keep fetched ahead */
	uint32_t ahead;                 /* highest chunk already queued */
	uint64_t used;                  /* tick of last use, to replace the oldest */
};

struct chunk_cache {
	struct chunk_fetcher fetcher;
	struct disk_cache *disk;
	const char *name;
	uint64_t size;
	size_t chunk_size;
	uint32_t nchunks;
	char *notice;

	pthread_mutex_t lock;
	pthread_cond_t loaded;          /* some chunk left CHUNK_LOADING */
	uint64_t failed_until_ms;       /* CLOCK_MONOTONIC: new loads fail at once until then */
	int failed_err;
	char failed_msg[MSG_MAX];
	struct chunk **table;           /* by index; NULL = not held */
	struct chunk lru;               /* list head */
	size_t lru_bytes, memory_limit;
	struct qs_memory_budget *budget;    /* shared with other caches, or NULL */
	struct chunk_cache *budget_next, *budget_prev;  /* its members, under budget->lock */
	uint64_t pinned_bytes;
	uint64_t warmed_bytes;          /* asked for by warm(), against its budget */
	struct piece **pieces;          /* sorted by offset, disjoint */
	uint32_t npieces, pieces_cap;   /* npieces: changed under lock, atomically, so a read can glance unlocked */
	uint64_t piece_bytes;           /* held in pieces; counts against the warm() budget too */
	unsigned warming;               /* warm() calls under way: no readahead meanwhile */
	int stale_err;                  /* sticky once the object changed */
	char stale_msg[MSG_MAX];

	struct stream streams[READAHEAD_STREAMS];
	uint64_t tick;

	pthread_cond_t work;            /* queue gained an entry, or stopping */
	pthread_t workers[WORKERS];
	int nworkers;
	bool stopping;
	uint32_t queue[QUEUE_LEN];
	unsigned queue_head, queue_len;
};

int chunk_cache_chunk_size(const struct qs_source_options *opt, size_t *chunk_size)
{
	size_t cs = opt && opt->chunk_size ? opt->chunk_size : CHUNK_DEFAULT_SIZE;

	if (cs < CHUNK_MIN_SIZE || cs > CHUNK_MAX_SIZE || cs % 4096)
		return qs_set_error(-EINVAL, "chunk size %zu: must be a multiple of 4 KiB from %u KiB to "
				    "%u MiB", cs, CHUNK_MIN_SIZE >> 10, CHUNK_MAX_SIZE >> 20);
	*chunk_size = cs;
	return 0;
}

static size_t chunk_len(const struct chunk_cache *cc, uint32_t idx)
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

static void chunk_free(struct chunk *c)
{
	free(c->data);
	free(c->msg);
	free(c);
}

static void chunk_put_locked(struct chunk *c)
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

static void budget_join(struct chunk_cache *cc)
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

static void budget_leave(struct chunk_cache *cc)
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
 * under a cache's, so waiting for each member's lock cannot deadlock (a
 * trylock, the first version, skipped a busy member and could leave the
 * sum over the bound until the next load).
 */
static void budget_settle(struct chunk_cache *cc)
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

static struct chunk *chunk_new_locked(struct chunk_cache *cc, uint32_t idx, bool pinned)
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
static void chunk_finish_locked(struct chunk_cache *cc, struct chunk *c, int err)
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

static void pin_locked(struct chunk_cache *cc, struct chunk *c)
{
	if (c->pinned)
		return;
	lru_unlink(cc, c);
	c->pinned = true;
	cc->pinned_bytes += c->len;
}

/* ---- loading ------------------------------------------------------------- */

static int chunk_alloc_data(struct chunk *c)
{
	c->data = malloc(c->len);
	return c->data ? 0 : qs_set_error(-ENOMEM, "out of memory for a %zu-byte chunk", c->len);
}

static int chunk_load(struct chunk_cache *cc, struct chunk *c)
{
	struct iovec iov;
	int ret = chunk_alloc_data(c);

	if (ret < 0)
		return ret;
	if (cc->disk && disk_cache_get(cc->disk, c->idx, c->data, c->len) == 0)
		return 0;
	iov.iov_base = c->data;
	iov.iov_len = c->len;
	ret = cc->fetcher.fetch(cc->fetcher.ctx, &iov, 1, (uint64_t)c->idx * cc->chunk_size);
	if (ret == 0 && cc->disk)
		disk_cache_put(cc->disk, c->idx, c->data, c->len);
	return ret;
}

static int stale_error_locked(struct chunk_cache *cc)
{
	return qs_set_error(cc->stale_err, "%s", cc->stale_msg);
}

/* Wait until a load makes progress, or CHUNK_INTERRUPT_POLL_NS, so that the caller can look for an interrupt. */
static void wait_loaded_locked(struct chunk_cache *cc)
{
	qs_cond_wait_ns(&cc->loaded, &cc->lock, CHUNK_INTERRUPT_POLL_NS);
}

/* Wait for a chunk another thread loads; returns 0 with a reference, or its error. */
static int chunk_wait_locked(struct chunk_cache *cc, struct chunk *c)
{
	int err;

	c->refs++;
	while (c->state == CHUNK_LOADING) {
		/* The loader may be another thread, slowed by the server: heed an interrupt meanwhile. */
		if (qs_source_interrupted()) {
			chunk_put_locked(c);
			return qs_set_error(-EINTR, "interrupted");
		}
		wait_loaded_locked(cc);
	}
	if (c->state == CHUNK_READY)
		return 0;
	err = qs_set_error(c->err, "%s", c->msg ? c->msg : "chunk load failed");
	chunk_put_locked(c);
	return err;
}

/* Chunk 'idx', ready, with a reference the caller drops with chunk_release(). */
static int chunk_acquire(struct chunk_cache *cc, uint32_t idx, struct chunk **out)
{
	struct chunk *c;
	int ret;

	pthread_mutex_lock(&cc->lock);
	if (cc->stale_err) {
		ret = stale_error_locked(cc);
		pthread_mutex_unlock(&cc->lock);
		return ret;
	}
	c = cc->table[idx];
	if (c) {
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
	budget_settle(cc);
	*out = c;
	return ret;
}

static void chunk_release(struct chunk_cache *cc, struct chunk *c)
{
	pthread_mutex_lock(&cc->lock);
	chunk_put_locked(c);
	pthread_mutex_unlock(&cc->lock);
}

/* ---- pieces: exact ranges a profile's replay fetched; under cc->lock ------ */

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

static bool piece_overlaps_locked(const struct chunk_cache *cc, uint64_t off, uint64_t len)
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
static void piece_drop_locked(struct chunk_cache *cc, uint32_t i)
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
 * A piece is kept after it was read: dropping each once all its bytes had
 * been read sent a third of the fleet bench's second reads (two threads
 * missing the block cache at once, the page-cache fill) to 4 MiB chunk
 * fetches.
 */
static size_t piece_copy(struct chunk_cache *cc, void *buf, size_t len, uint64_t off)
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
		wait_loaded_locked(cc);
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
 * so that a reader waits only for its own bytes (a 4 MiB libpython, one
 * request, took 0.8 s to arrive whole on bench/fleet.sh's link while every
 * import waited for it).  A piece that failed leaves the set.
 */
static int piece_fetch(struct chunk_cache *cc, struct piece *p)
{
	struct piece_load l = { cc, p };
	struct iovec iov = { p->data, p->len };
	bool from_disk = cc->disk && disk_cache_get_range(cc->disk, p->off, p->data, p->len) == 0;
	int ret = 0;

	if (!from_disk && cc->fetcher.fetch_stream)
		ret = cc->fetcher.fetch_stream(cc->fetcher.ctx, p->data, p->len, p->off, piece_progress, &l);
	else if (!from_disk)
		ret = cc->fetcher.fetch(cc->fetcher.ctx, &iov, 1, p->off);
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
		return ret;
	/* Kept for the next mount: the same profile asks for the same ranges. */
	if (!from_disk && cc->disk)
		disk_cache_put_range(cc->disk, p->off, p->data, p->len);
	pthread_mutex_lock(&cc->lock);
	if (--p->refs == 0 && p->dropped)
		piece_free(p);
	pthread_mutex_unlock(&cc->lock);
	return 0;
}

/* ---- background fetches -------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct chunk_cache *cc = arg;

	pthread_mutex_lock(&cc->lock);
	for (;;) {
		struct chunk *c;
		uint32_t idx;

		while (!cc->stopping && cc->queue_len == 0)
			pthread_cond_wait(&cc->work, &cc->lock);
		if (cc->stopping)
			break;
		idx = cc->queue[cc->queue_head];
		cc->queue_head = (cc->queue_head + 1) % QUEUE_LEN;
		cc->queue_len--;
		if (cc->table[idx] || cc->stale_err)
			continue;
		pthread_mutex_unlock(&cc->lock);
		if (chunk_acquire(cc, idx, &c) == 0)
			chunk_release(cc, c);
		pthread_mutex_lock(&cc->lock);
	}
	pthread_mutex_unlock(&cc->lock);
	return NULL;
}

/* Queue chunk 'idx' for a worker unless held or the queue is full. */
static void queue_locked(struct chunk_cache *cc, uint32_t idx)
{
	if (idx >= cc->nchunks || cc->table[idx] || cc->queue_len == QUEUE_LEN || cc->stale_err)
		return;
	/* A profile's replay fetched what the workload reads of it: the rest of it is not wanted. */
	if (piece_overlaps_locked(cc, (uint64_t)idx * cc->chunk_size, chunk_len(cc, idx)))
		return;
	if (cc->nworkers < WORKERS && cc->nworkers <= (int)cc->queue_len &&
	    pthread_create(&cc->workers[cc->nworkers], NULL, worker_main, cc) == 0)
		cc->nworkers++;
	if (cc->nworkers == 0)
		return;
	cc->queue[(cc->queue_head + cc->queue_len) % QUEUE_LEN] = idx;
	cc->queue_len++;
	pthread_cond_signal(&cc->work);
}

/* A read of [off, off+len) happened: keep sequential streams fed. */
static void readahead_locked(struct chunk_cache *cc, uint64_t off, size_t len)
{
	struct stream *s = NULL, *oldest = &cc->streams[0];
	uint32_t cur = (off + len - 1) / cc->chunk_size, i;

	cc->tick++;
	for (i = 0; i < READAHEAD_STREAMS; i++) {
		struct stream *t = &cc->streams[i];

		if (t->used && off + READAHEAD_SLACK >= t->next_off && off <= t->next_off + READAHEAD_SLACK) {
			s = t;
			break;
		}
		if (t->used < oldest->used)
			oldest = t;
	}
	if (!s) {
		*oldest = (struct stream){ .start = off, .next_off = off + len, .ahead = cur, .used = cc->tick };
		return;
	}
	s->used = cc->tick;
	/* Only progress counts: re-reading a header or a table is no sign of a sequential reader. */
	if (off + len <= s->next_off)
		return;
	s->next_off = off + len;
	if (s->next_off - s->start < READAHEAD_MIN_RUN)
		return;
	if (s->window == 0)
		s->window = 1;
	else if (cur + 1 > s->ahead && s->window < READAHEAD_MAX_CHUNKS)
		s->window *= 2;
	if (s->ahead < cur)
		s->ahead = cur;
	while (s->ahead < cur + s->window && s->ahead + 1 < cc->nchunks)
		queue_locked(cc, ++s->ahead);
}

/* ---- source ops ---------------------------------------------------------- */

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
	/* Unlocked: a piece missed by a stale count only sends the read to the chunks. */
	pieces = __atomic_load_n(&cc->npieces, __ATOMIC_RELAXED) != 0;

	if (!pieces) {
		uint32_t first = off / cc->chunk_size, last = (off + len - 1) / cc->chunk_size;

		/* A read spanning chunks: fetch the later ones in parallel with the first. */
		pthread_mutex_lock(&cc->lock);
		for (uint32_t idx = first + 1; idx <= last; idx++)
			queue_locked(cc, idx);
		pthread_mutex_unlock(&cc->lock);
	}
	while (pos < end) {
		uint32_t idx = pos / cc->chunk_size;
		uint64_t start = (uint64_t)idx * cc->chunk_size;
		size_t n = pieces ? piece_copy(cc, dst, end - pos, pos) : 0;
		struct chunk *c;
		int ret;

		if (n == 0) {
			n = end - pos < start + cc->chunk_size - pos ? end - pos : start + cc->chunk_size - pos;
			ret = chunk_acquire(cc, idx, &c);
			if (ret < 0)
				return ret;
			memcpy(dst, c->data + (pos - start), n);
			profiled = profiled && c->warmed;
			chunk_release(cc, c);
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
	for (i = 0; i < n && ret == 0 && cc->disk; i++)
		disk_cache_put(cc->disk, owned[i]->idx, owned[i]->data, owned[i]->len);
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
		if (ret == 0 && cc->disk && chunk_alloc_data(owned[i]) == 0 &&
		    disk_cache_get(cc->disk, owned[i]->idx, owned[i]->data, owned[i]->len) == 0)
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
		budget_settle(cc);
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
static int load_range(struct chunk_cache *cc, uint32_t first, uint32_t last, bool pin)
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
			pin_locked(cc, c);
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
			pin_locked(cc, c);
			chunk_put_locked(c);
		}
	}
	pthread_mutex_unlock(&cc->lock);
	return ret;
}

/* The chunks [*first, *last] holding [off, off+len) clipped to the object; false if none. */
static bool chunk_span(const struct chunk_cache *cc, uint64_t off, uint64_t len, uint32_t *first,
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
	return load_range(cc, first, last, true);
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
static int warm_range(struct chunk_cache *cc, uint64_t off, uint64_t len)
{
	struct piece *p = NULL;
	uint32_t first, last;
	int ret = 0;

	if (!chunk_span(cc, off, len, &first, &last))
		return 0;
	if (len > cc->size - off)
		len = cc->size - off;
	if (chunks_held(cc, first, last)) {
		uint64_t want = (uint64_t)(last - first + 1) * cc->chunk_size;

		pthread_mutex_lock(&cc->lock);
		if (cc->warmed_bytes + want > cc->memory_limit / WARM_SHARE_DIV)
			ret = -E2BIG;
		else
			cc->warmed_bytes += want;
		pthread_mutex_unlock(&cc->lock);
		return ret ? qs_set_error(ret, "will not warm more than 1/%u of the memory cache", WARM_SHARE_DIV)
			   : load_range(cc, first, last, false);
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
			ret = stale_error_locked(cc);
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

static int chunk_cache_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct chunk_cache *cc = src->priv;
	int ret;

	pthread_mutex_lock(&cc->lock);
	cc->warming++;
	pthread_mutex_unlock(&cc->lock);
	ret = warm_range(cc, off, len);
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
		queue_locked(cc, idx);
	pthread_mutex_unlock(&cc->lock);
	return 0;
}

static void chunk_cache_close(struct qs_source *src)
{
	struct chunk_cache *cc = src->priv;
	uint32_t i;

	pthread_mutex_lock(&cc->lock);
	cc->stopping = true;
	pthread_cond_broadcast(&cc->work);
	pthread_mutex_unlock(&cc->lock);
	for (int w = 0; w < cc->nworkers; w++)
		pthread_join(cc->workers[w], NULL);
	if (cc->budget) {
		budget_leave(cc);
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

static const struct qs_source_ops chunk_cache_ops = {
	.pread = chunk_cache_pread,
	.close = chunk_cache_close,
	.prefetch = chunk_cache_prefetch,
	.willneed = chunk_cache_willneed,
	.warm = chunk_cache_warm,
};

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
	budget_settle(cc);
	return 0;
}

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
		budget_join(cc);
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
	if (first && first_len && size) {
		ret = seed_first_chunk(cc, first, first_len, true);
		if (ret < 0)
			goto fail;
	} else if (first_len && size && cc->disk) {
		/* No open request (the server unreachable): its bytes as an earlier open kept them. */
		size_t len = first_len < size ? first_len : (size_t)size;
		void *kept = malloc(len);

		ret = 0;
		if (kept && disk_cache_get_range(cc->disk, 0, kept, len) == 0)
			ret = seed_first_chunk(cc, kept, len, false);
		free(kept);
		if (ret < 0)
			goto fail;
	}
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
