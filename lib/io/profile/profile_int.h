/*
 * profile_int.h - what the profile wrapper (profile.c) and its replay
 * (profile_replay.c) share: the wrapper's state, and the replay's calls.
 */
#ifndef QUASH_PROFILE_INT_H
#define QUASH_PROFILE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source.h"

/*
 * Replay requests in flight: enough to keep a slow, distant link busy
 * between requests; more only delays the mount, its metadata sharing the
 * link with them (the fleet bench, docs/benchmarks.md).
 */
#define PROFILE_REPLAY_THREADS 12

enum replay_state { REPLAY_PENDING, REPLAY_LOADING, REPLAY_DONE };

struct replay_range {
	uint64_t off, len;
	atomic_int state;               /* enum replay_state */
};

struct profiled {
	struct qs_source *base;
	char *notice;

	/* recording: everything under lock */
	char *record_path;              /* absolute: the daemon changes directory */
	char identity[QS_PROFILE_ID_MAX];
	pthread_mutex_t lock;
	pthread_cond_t stop_cond;
	struct qs_profile_range *order; /* first-touch order */
	size_t n, cap;
	struct qs_profile_range *seen;  /* bytes read so far: sorted, disjoint, not adjacent */
	size_t nseen, seen_cap;
	bool full, dirty, stopping;
	pthread_t flusher;
	bool flusher_started;

	/* replay */
	struct replay_range *plan;      /* merged requests, by offset */
	size_t nplan;
	size_t *turns;                  /* plan indices, earliest-touched first */
	size_t nturns;
	pthread_cond_t replayed;        /* a range of the plan left REPLAY_LOADING (under lock) */
	atomic_size_t next;
	atomic_bool stop_replay;
	int active;                     /* replay threads still running (under lock) */
	bool defer_pin;                 /* the plan has the profile's metadata: pin the rest at its end */
	bool pin_deferred;              /* the opener's prefetch() waits for the replay's end (under lock) */
	uint64_t pin_off, pin_len;
	pthread_t replayers[PROFILE_REPLAY_THREADS];
	int nreplayers;
	struct qs_profile_range *touch; /* the profile's ranges in first-touch order, for replayed() */
	size_t ntouch;
	uint64_t meta_start;            /* where the metadata begins (pinned at open unless defer_pin) */
};

/* profile_replay.c */

/* Load the profile to replay and start the threads; every problem is only a line in p->notice. */
void replay_start(struct profiled *p, const char *spec, const struct qs_source_options *opt,
		  const char *identity, uint64_t sb_offset);
/* Stop the replay threads and wait for them. */
void replay_stop(struct profiled *p);
/* A read at 'off' before the replay reached it: fetch its (small) range now. */
void replay_ahead(struct profiled *p, uint64_t off);
/* The opener's pin of [off, off+len): now, or, with a replay running, once it is over. */
int replay_prefetch(struct profiled *p, uint64_t off, uint64_t len);
int replay_next(struct profiled *p, size_t *next, uint64_t *off, uint64_t *len);
/* Where the image's superblock is: the given offset, a SIF partition, or 0. */
uint64_t profile_superblock_offset(struct qs_source *base, const struct qs_source_options *opt);
/* Add one line to the wrapper's notice (shown once by the opener). */
void profile_add_notice(struct profiled *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
