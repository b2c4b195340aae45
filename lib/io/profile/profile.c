/*
 * profile.c - prefetch profiles: the byte ranges a workload read from an
 * image, recorded by a wrapper source and replayed at the next open; this
 * file is the wrapper and its recording.
 *
 * The wrapper sits over whatever qs_source_open() opened (a local file, or
 * the chunk cache over HTTP(S) or S3), so it sees exactly the reads the
 * reader makes: metadata blocks, data blocks and fragments, at offsets of
 * the source.  Recording keeps them in first-touch order, a read that only
 * repeats bytes already seen being dropped and one that continues the last
 * range extending it.  The list is written (to a temporary file, then
 * renamed) every PROFILE_FLUSH_SECONDS while it changes and when the source
 * closes, so a killed daemon still leaves a profile behind.
 *
 * Replay (profile_replay.c) starts at open when asked to, and the
 * wrapper's reads and hints wait for or hurry its ranges.
 *
 * The file format is profile_file.c's (docs/profile.md).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"
#include "profile_file.h"
#include "profile_int.h"
#include "quash.h"

/* the profile found beside an image */
#define PROFILE_FLUSH_SECONDS  10                  /* a recording is rewritten this often while it grows */

static int grow(struct qs_profile_range **a, size_t *cap, size_t want)
{
	size_t ncap;
	struct qs_profile_range *r;

	if (want <= *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 256;
	r = realloc(*a, ncap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	*a = r;
	*cap = ncap;
	return 0;
}

/* Note a successful read of [off, off+len).  Under p->lock. */
static void record_locked(struct profiled *p, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	size_t lo = 0, hi = p->nseen, j;
	struct qs_profile_range *last;

	/* The first seen range that ends at or after off. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->seen[mid].off + p->seen[mid].len < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nseen && p->seen[lo].off <= off && p->seen[lo].off + p->seen[lo].len >= end)
		return;                 /* nothing new: a re-read after the block cache let it go */
	if (p->full || grow(&p->order, &p->cap, p->n + 1) || grow(&p->seen, &p->seen_cap, p->nseen + 1)) {
		p->full = true;
		return;
	}
	/* Replace every seen range that overlaps or touches [off, end) by their union. */
	{
		uint64_t uoff = off, uend = end;

		for (j = lo; j < p->nseen && p->seen[j].off <= end; j++) {
			if (p->seen[j].off < uoff)
				uoff = p->seen[j].off;
			if (p->seen[j].off + p->seen[j].len > uend)
				uend = p->seen[j].off + p->seen[j].len;
		}
		if (j == lo) {
			memmove(p->seen + lo + 1, p->seen + lo, (p->nseen - lo) * sizeof(*p->seen));
			p->nseen++;
		} else if (j > lo + 1) {
			memmove(p->seen + lo + 1, p->seen + j, (p->nseen - j) * sizeof(*p->seen));
			p->nseen -= j - lo - 1;
		}
		p->seen[lo] = (struct qs_profile_range){ uoff, uend - uoff };
	}

	last = p->n ? &p->order[p->n - 1] : NULL;
	if (last && off >= last->off && off <= last->off + last->len) {
		if (off + len > last->off + last->len)
			last->len = off + len - last->off;
	} else if (p->n < QS_PROFILE_MAX_RANGES) {
		p->order[p->n++] = (struct qs_profile_range){ off, len };
	} else {
		p->full = true;
	}
	p->dirty = true;
}

static int profiled_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct profiled *p = src->priv;
	int ret;

	if (p->nplan)
		replay_ahead(p, off);
	ret = qs_source_pread(p->base, buf, len, off);
	if (ret == 0 && len && p->record_path) {
		pthread_mutex_lock(&p->lock);
		record_locked(p, off, len);
		pthread_mutex_unlock(&p->lock);
	}
	return ret;
}

/* Write the recording if it changed; the copy is taken under the lock, the file written outside it. */
static void flush_recording(struct profiled *p)
{
	struct qs_profile_range *copy = NULL;
	size_t n;

	pthread_mutex_lock(&p->lock);
	if (!p->dirty) {
		pthread_mutex_unlock(&p->lock);
		return;
	}
	n = p->n;
	copy = malloc((n ? n : 1) * sizeof(*copy));
	if (copy) {
		memcpy(copy, p->order, n * sizeof(*copy));
		p->dirty = false;
	}
	pthread_mutex_unlock(&p->lock);
	if (copy && profile_write(p->record_path, p->identity, copy, n) < 0) {
		pthread_mutex_lock(&p->lock);
		p->dirty = true;        /* try again at the next flush */
		pthread_mutex_unlock(&p->lock);
	}
	free(copy);
}

static void *flusher_main(void *arg)
{
	struct profiled *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += PROFILE_FLUSH_SECONDS;
		pthread_cond_timedwait(&p->stop_cond, &p->lock, &until);
		if (p->stopping)
			break;
		pthread_mutex_unlock(&p->lock);
		flush_recording(p);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static int profiled_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	return replay_prefetch(src->priv, off, len);
}

static int profiled_willneed(struct qs_source *src, uint64_t off, uint64_t len)
{
	return qs_source_willneed(((struct profiled *)src->priv)->base, off, len);
}

static int profiled_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	return qs_source_warm(((struct profiled *)src->priv)->base, off, len);
}

static int profiled_replayed(struct qs_source *src, size_t *next, uint64_t *off, uint64_t *len)
{
	struct profiled *p = src->priv;

	/* A recording must see the workload's reads only, not a warmer's. */
	if (p->record_path)
		return 0;
	return replay_next(p, next, off, len);
}

static void profiled_free(struct profiled *p)
{
	replay_stop(p);
	if (p->flusher_started) {
		pthread_mutex_lock(&p->lock);
		p->stopping = true;
		pthread_cond_broadcast(&p->stop_cond);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->flusher, NULL);
	}
	if (p->record_path)
		flush_recording(p);
	qs_source_close(p->base);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->stop_cond);
	free(p->order);
	free(p->seen);
	free(p->plan);
	free(p->turns);
	free(p->touch);
	pthread_cond_destroy(&p->replayed);
	free(p->record_path);
	free(p->notice);
	free(p);
}

static void profiled_close(struct qs_source *src)
{
	profiled_free(src->priv);
}

static const struct qs_source_ops profiled_ops = {
	.pread = profiled_pread,
	.close = profiled_close,
	.prefetch = profiled_prefetch,
	.willneed = profiled_willneed,
	.warm = profiled_warm,
	.replayed = profiled_replayed,
};

/* A relative path made absolute against the current directory; NULL if out of memory. */
static char *absolute(const char *path)
{
	char cwd[PATH_MAX];
	size_t n;
	char *s;

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	n = strlen(cwd) + strlen(path) + 2;
	s = malloc(n);
	if (s)
		snprintf(s, n, "%s/%s", cwd, path);
	return s;
}

int qs_source_open_profiled(struct qs_source *base, const char *spec, const struct qs_source_options *opt,
			    struct qs_source **out)
{
	struct profiled *p = calloc(1, sizeof(*p));
	char identity[QS_PROFILE_ID_MAX];
	uint64_t sb_offset;
	bool have_id;
	int err = 0;

	if (!p) {
		qs_source_close(base);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	p->base = base;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->stop_cond, NULL);
	pthread_cond_init(&p->replayed, NULL);
	sb_offset = profile_superblock_offset(base, opt);
	have_id = qs_profile_identity(base, sb_offset, identity, sizeof(identity)) == 0;
	if (opt->record) {
		/* The file is written now, empty, so that a path that cannot be written is said at once. */
		if (!have_id) {
			err = qs_set_error(-EINVAL, "-o record: no squashfs superblock to record against");
			goto fail;
		}
		snprintf(p->identity, sizeof(p->identity), "%s", identity);
		p->record_path = absolute(opt->record);
		if (!p->record_path) {
			err = qs_set_error(-ENOMEM, "out of memory");
			goto fail;
		}
		err = profile_write(p->record_path, p->identity, NULL, 0);
		if (err < 0) {
			err = qs_set_error(err, "-o record=%s: %s", opt->record, qs_last_error());
			goto fail;
		}
		if (pthread_create(&p->flusher, NULL, flusher_main, p) == 0)
			p->flusher_started = true;
	}
	if (opt->prefetch || opt->prefetch_beside)
		replay_start(p, spec, opt, have_id ? identity : NULL, sb_offset);
	if (!p->record_path && p->nreplayers == 0 && !p->notice) {
		/* Nothing to record or replay: no wrapper in the way. */
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->stop_cond);
		pthread_cond_destroy(&p->replayed);
		free(p->plan);
		free(p->turns);
		free(p->touch);
		free(p);
		*out = base;
		return 0;
	}
	if (base->notice) {
		/* The source's own notice first ("server unreachable ..."), then the profile's. */
		char *ours = p->notice;

		p->notice = NULL;
		profile_add_notice(p, "%s", base->notice);
		if (ours)
			profile_add_notice(p, "%s", ours);
		free(ours);
	}
	*out = qs_source_alloc(&profiled_ops, base->name, base->identity, base->size, p);
	if (!*out) {
		err = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	(*out)->notice = p->notice;
	return 0;
fail:
	profiled_free(p);
	return err;
}
