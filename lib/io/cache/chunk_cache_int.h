/*
 * chunk_cache_int.h - what the chunk cache's files share: the cache, its
 * chunks, pieces and streams, and each file's functions for the others.
 *
 *   chunk_table.c  the table of chunks, single-flight loads, the LRU within
 *                  the memory limit and the budget shared between caches
 *   pieces.c       exact ranges a profile's replay fetched, and the open
 *                  request's bytes seeding the cache
 *   readahead.c    sequential streams and the background fetch workers
 *   chunk_check.c  a verifier's check of chunks and pieces as they arrive
 *   chunk_cache.c  the source over them all: reads, pins, warm(), open, close
 *
 * Functions named *_locked are called with cc->lock held.
 */
#ifndef QUASH_CHUNK_CACHE_INT_H
#define QUASH_CHUNK_CACHE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk_fetcher.h"
#include "source.h"

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
	pthread_t loader;               /* the thread that made it and loads it */
	bool checked;                   /* its load checks it (a check was set when it was made) */
	bool filled;                    /* LOADING: its bytes are in, being checked by the loader */
	uint8_t *bad;                   /* units its check found wrong twice (zeroed), one bit each; or NULL */
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
	struct qs_source_check check;   /* set once (set_check), before has_check */
	bool has_check;                 /* read atomically: loads check what arrives */
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

/* chunk_table.c */
size_t chunk_len(const struct chunk_cache *cc, uint32_t idx);
void chunk_free(struct chunk *c);
void chunk_put_locked(struct chunk *c);
void chunk_budget_join(struct chunk_cache *cc);
void chunk_budget_leave(struct chunk_cache *cc);
/* After a load, with no cache's lock held: bring the shared budget back under its bound. */
void chunk_budget_settle(struct chunk_cache *cc);
/* A new LOADING chunk in the table, with the caller's reference; NULL if out of memory. */
struct chunk *chunk_new_locked(struct chunk_cache *cc, uint32_t idx, bool pinned);
/* A load ended: publish the chunk or its failure, wake the waiters.  Keeps the caller's reference. */
void chunk_finish_locked(struct chunk_cache *cc, struct chunk *c, int err);
void chunk_pin_locked(struct chunk_cache *cc, struct chunk *c);
int chunk_alloc_data(struct chunk *c);
int chunk_stale_error_locked(struct chunk_cache *cc);
/* Wait until a load makes progress, or a short while, so that the caller can look for an interrupt. */
void chunk_wait_loaded_locked(struct chunk_cache *cc);
/*
 * Chunk 'idx', ready, with a reference the caller drops with chunk_release();
 * *hit (may be NULL): it was ready before this call.  Inside a check
 * (check_active()), a chunk another load holds is not waited for:
 * -EWOULDBLOCK, no message (the caller fetches the bytes itself).
 */
int chunk_acquire(struct chunk_cache *cc, uint32_t idx, struct chunk **out, bool *hit);
void chunk_release(struct chunk_cache *cc, struct chunk *c);
/*
 * A read of [in, in+n) of *cp touches units its check found wrong: if the
 * chunk was held before the read ('hit'), it is fetched again once (the
 * server may be right by now); units still wrong give -EIO with the
 * check's message.  0 with *cp (perhaps another chunk) to copy from, or
 * -errno with *cp released (-EWOULDBLOCK as chunk_acquire()).
 */
int chunk_reread(struct chunk_cache *cc, struct chunk **cp, bool hit, size_t in, size_t n);
/* The chunks held before the check was set, checked now: a wrong one is dropped (memory and directory). */
void chunk_check_held(struct chunk_cache *cc);
/* Take c out of the table, if it is still there: the next read loads it again. */
void chunk_forget_locked(struct chunk_cache *cc, struct chunk *c);
/* Wait for a chunk another thread loads: 0 with a reference, or its error. */
int chunk_wait_locked(struct chunk_cache *cc, struct chunk *c);
/* Load chunks [first, last] in few large requests: pinned, or on the LRU marked warmed. */
int chunk_load_range(struct chunk_cache *cc, uint32_t first, uint32_t last, bool pin);
/* The chunks [*first, *last] holding [off, off+len) clipped to the object; false if none. */
bool chunk_span(const struct chunk_cache *cc, uint64_t off, uint64_t len, uint32_t *first, uint32_t *last);

/* pieces.c */
bool piece_overlaps_locked(const struct chunk_cache *cc, uint64_t off, uint64_t len);
void piece_drop_locked(struct chunk_cache *cc, uint32_t i);
/* Copy what a piece holds of [off, off+len) from off on: the bytes copied, 0 if none holds off. */
size_t piece_copy(struct chunk_cache *cc, void *buf, size_t len, uint64_t off);
/* The pieces held before the check was set (the open request's), checked now: wrong ones dropped. */
void piece_check_held(struct chunk_cache *cc);
/* A profile's replay: fetch [off, off+len) now, as chunks held or as a piece; -E2BIG past its budget. */
int piece_warm_range(struct chunk_cache *cc, uint64_t off, uint64_t len);
/* The object's first bytes at open (chunk_cache_open()'s 'first'), or what an earlier open kept of them. */
int piece_seed(struct chunk_cache *cc, const void *first, size_t first_len);

/* chunk_check.c */
/* Is the calling thread inside a check (reading the tree through this cache)? */
bool check_active(void);
/*
 * Check len bytes at off with cc->check: 0 right, 1 not.  With 'bad', the
 * units of a wrong answer are checked one by one, the wrong ones zeroed and
 * marked in *bad (allocated; left NULL when each alone is right).
 */
int check_bytes(struct chunk_cache *cc, uint64_t off, char *buf, size_t len, uint8_t **bad);
/* The check of a cache-directory file at off failed (its message is the last error): one event line. */
void check_disk_event(struct chunk_cache *cc, const char *what, uint64_t off);
/* Does [in, in+n) of c touch a unit its check found wrong? */
bool check_bad_in(const struct chunk_cache *cc, const struct chunk *c, size_t in, size_t n);
/* The check of c's wrong units among [in, in+n) again: 0 if none is still wrong, else its error. */
int check_units(struct chunk_cache *cc, const struct chunk *c, size_t in, size_t n);

/* readahead.c */
/* Queue chunk 'idx' for a worker unless held or the queue is full. */
void readahead_queue_locked(struct chunk_cache *cc, uint32_t idx);
/* A read of [off, off+len) happened: keep sequential streams fed. */
void readahead_locked(struct chunk_cache *cc, uint64_t off, size_t len);
/* Stop the workers and wait for them (closing). */
void readahead_stop(struct chunk_cache *cc);

#endif
