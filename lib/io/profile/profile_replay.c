/*
 * profile_replay.c - replaying a prefetch profile under the wrapper
 * (profile.c): loading it (from a file, beside the image, or as a remote
 * URL.profile), the plan, the threads that fetch it, and what reads wait for.
 *
 * Replay loads a profile, checks that it was recorded against these very
 * bytes (the image's size, bytes_used and an XXH3 of its superblock), and
 * turns its ranges into a plan (profile_plan.c): the first
 * PROFILE_PREFETCH_MAX bytes in first-touch order, sorted, merged when
 * closer than PROFILE_MERGE_GAP, fetched by several threads with the
 * source's warm() hook, the earliest-touched first.  The metadata the
 * profile read goes first, and the opener's pin of all of it waits for the
 * replay's end (see replay_prefetch()); where all of it is smaller than
 * PROFILE_PIN_DEFER_MIN it is simply pinned at once, and the plan leaves
 * it out.  A read that wants a range of the plan before its turn fetches
 * it at once itself, rather than take the slower path the replay was meant
 * to spare it; one being fetched it leaves to the source, which lets the
 * read go on as soon as its own bytes are in.
 * A profile that does not match or does not parse costs one line in the
 * source's notice and nothing else: it is only a hint.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cond_wait.h"
#include "profile_int.h"
#include "profile_plan.h"
#include "quash.h"
#include "sif.h"
#include "source_remote.h"
#include "squashfs_fs.h"

#define PROFILE_SUFFIX         ".profile"          /* the profile found beside an image */
/*
 * Metadata smaller than this is pinned at open as usual: on a slow link it
 * takes less than the extra request deferring it costs.
 */
#define PROFILE_PIN_DEFER_MIN  (256u << 10)
/*
 * A read ahead of the replay fetches a range of the plan itself only up to
 * this size.  A larger one it leaves to the replay threads (it comes early
 * in their order): a read of a few bytes (a superblock the open request
 * brought already) must not hold the mount for a run of megabytes that
 * pack --order laid out around it.  One request cut out of a run at most.
 */
#define PROFILE_CLAIM_MAX      PROFILE_CUT_SIZE
#define PROFILE_WAIT_POLL_NS   (100 * 1000000L)     /* a read waiting on a replay thread checks for an interrupt */
#define PROFILE_FETCH_RETRY_SECONDS 2              /* a remote URL.profile is not worth a long wait */
#define PROFILE_NOTICE_MAX     512

/* Fetch plan range i unless another thread took it; its waiters are woken either way. */
static int replay_one(struct profiled *p, size_t i)
{
	int expected = REPLAY_PENDING, ret;

	if (!atomic_compare_exchange_strong(&p->plan[i].state, &expected, REPLAY_LOADING))
		return 0;
	ret = qs_source_warm(p->base, p->plan[i].off, p->plan[i].len);
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->plan[i].state, REPLAY_DONE);
	pthread_cond_broadcast(&p->replayed);
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/* The index of the first plan range ending after 'off'. */
static size_t plan_search(const struct profiled *p, uint64_t off)
{
	size_t lo = 0, hi = p->nplan;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->plan[mid].off + p->plan[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Wait under p->lock for a plan range to leave REPLAY_LOADING, or PROFILE_WAIT_POLL_NS (to check for an interrupt). */
static void wait_replayed_locked(struct profiled *p)
{
	qs_cond_wait_ns(&p->replayed, &p->lock, PROFILE_WAIT_POLL_NS);
}

/* Plan range i fetched: by this thread if its turn has not come, else by the thread fetching it. */
static void replay_wait(struct profiled *p, size_t i)
{
	if (atomic_load(&p->plan[i].state) == REPLAY_DONE)
		return;
	replay_one(p, i);
	pthread_mutex_lock(&p->lock);
	while (atomic_load(&p->plan[i].state) == REPLAY_LOADING && !qs_source_interrupted())
		wait_replayed_locked(p);
	pthread_mutex_unlock(&p->lock);
}

/*
 * A read before the replay reached its range: fetch that range now (if no
 * larger than PROFILE_CLAIM_MAX), so that the read finds it in and no
 * second request for the same bytes goes out.
 * A range being fetched already is left to the source, which lets a read
 * go on as soon as its own bytes are in (the chunk cache's pieces.c).
 */
void replay_ahead(struct profiled *p, uint64_t off)
{
	size_t i = plan_search(p, off);

	if (i < p->nplan && p->plan[i].off <= off && p->plan[i].len <= PROFILE_CLAIM_MAX &&
	    atomic_load(&p->plan[i].state) == REPLAY_PENDING)
		replay_wait(p, i);
}

static void *replay_main(void *arg)
{
	struct profiled *p = arg;

	bool pin = false;

	while (!atomic_load(&p->stop_replay)) {
		size_t i = atomic_fetch_add(&p->next, 1);

		if (i >= p->nturns)
			break;
		/* A hint: a failure (a budget spent, a server gone) only ends this replay. */
		if (replay_one(p, p->turns[i]) < 0)
			break;
	}
	/* The last one out pins what the opener asked to (see replay_prefetch()). */
	pthread_mutex_lock(&p->lock);
	if (--p->active == 0 && p->pin_deferred && !atomic_load(&p->stop_replay)) {
		pin = true;
		p->pin_deferred = false;
	}
	pthread_mutex_unlock(&p->lock);
	if (pin)
		qs_source_prefetch(p->base, p->pin_off, p->pin_len);
	return NULL;
}

/*
 * The opener pins the image's metadata, of which a workload often reads a
 * small part (the fleet bench's Python start-up).  With a replay running,
 * the profile has that part, fetched first and exactly: wait for it alone,
 * and pin the whole once the replay is over, so that the mount is ready
 * that much sooner and the pin does not share the link with the replay.
 */
int replay_prefetch(struct profiled *p, uint64_t off, uint64_t len)
{
	bool now;

	if (!p->nreplayers || !p->defer_pin)
		return qs_source_prefetch(p->base, off, len);
	for (size_t i = plan_search(p, off); i < p->nplan && p->plan[i].off < off + len; i++)
		replay_wait(p, i);
	pthread_mutex_lock(&p->lock);
	now = p->active == 0;
	if (!now) {
		p->pin_deferred = true;
		p->pin_off = off;
		p->pin_len = len;
	}
	pthread_mutex_unlock(&p->lock);
	return now ? qs_source_prefetch(p->base, off, len) : 0;
}

/*
 * Whether [off, off+len) is in: 1 once every plan range over it is fetched
 * (waiting for them), 0 if the plan does not cover it all (past the
 * prefetch cap), -1 if the replay ended, or the caller's interrupt flag
 * was set, before it came.  Metadata pinned at open is in from the start.
 */
static int replay_ready(struct profiled *p, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, covered = off;
	int ret = 1;

	if (!p->defer_pin && off >= p->meta_start)
		return 1;
	pthread_mutex_lock(&p->lock);
	for (size_t i = plan_search(p, off); i < p->nplan && covered < end && ret == 1; i++) {
		struct replay_range *r = &p->plan[i];

		if (r->off > covered) {
			ret = 0;
			break;
		}
		while (atomic_load(&r->state) != REPLAY_DONE) {
			if (atomic_load(&p->stop_replay) || qs_source_interrupted() ||
			    (p->active == 0 && atomic_load(&r->state) == REPLAY_PENDING)) {
				ret = -1;
				break;
			}
			wait_replayed_locked(p);
		}
		covered = r->off + r->len;
	}
	pthread_mutex_unlock(&p->lock);
	return ret == 1 && covered < end ? 0 : ret;
}

/* The next range of the profile, first touch first, once its bytes are in: 1, or 0 at the end. */
int replay_next(struct profiled *p, size_t *next, uint64_t *off, uint64_t *len)
{
	while (*next < p->ntouch) {
		const struct qs_profile_range *r = &p->touch[(*next)++];
		int in = replay_ready(p, r->off, r->len);

		if (in < 0)
			return 0;
		if (in > 0) {
			*off = r->off;
			*len = r->len;
			return 1;
		}
	}
	return 0;
}

void replay_stop(struct profiled *p)
{
	atomic_store(&p->stop_replay, true);
	for (int i = 0; i < p->nreplayers; i++)
		pthread_join(p->replayers[i], NULL);
}

/* ---- loading a profile and starting the replay ------------------------------ */

/* The plan (profile_plan.c), its requests given a state each. */
static int make_plan(struct profiled *p, const struct qs_profile *prof, uint64_t meta)
{
	struct qs_plan plan;
	int ret = qs_plan_make(prof, p->base->size, meta, p->defer_pin, &plan);

	if (ret < 0)
		return ret;
	p->plan = calloc(plan.nreq ? plan.nreq : 1, sizeof(*p->plan));
	if (!p->plan) {
		qs_plan_free(&plan);
		return -ENOMEM;
	}
	for (size_t i = 0; i < plan.nreq; i++) {
		p->plan[i].off = plan.req[i].off;
		p->plan[i].len = plan.req[i].len;
		atomic_init(&p->plan[i].state, REPLAY_PENDING);
	}
	p->nplan = plan.nreq;
	p->turns = plan.turns;          /* taken over */
	p->nturns = plan.nturns;
	free(plan.req);
	return 0;
}

/*
 * The profile's ranges in first-touch order, clipped to the source, up to
 * PROFILE_PREFETCH_MAX bytes as the plan: what replayed() hands out.
 */
static int keep_touch_order(struct profiled *p, const struct qs_profile *prof, uint64_t meta)
{
	uint64_t total = 0, size = p->base->size;

	p->meta_start = meta;
	p->touch = calloc(prof->count ? prof->count : 1, sizeof(*p->touch));
	if (!p->touch)
		return -ENOMEM;
	for (size_t i = 0; i < prof->count && total < PROFILE_PREFETCH_MAX; i++) {
		uint64_t off = prof->ranges[i].off, len = prof->ranges[i].len;

		if (off >= size || len == 0)
			continue;
		if (len > size - off)
			len = size - off;
		p->touch[p->ntouch++] = (struct qs_profile_range){ off, len };
		total += len;
	}
	return 0;
}

/* Add one line to the wrapper's notice (shown once by the opener). */
void profile_add_notice(struct profiled *p, const char *fmt, ...)
{
	char line[PROFILE_NOTICE_MAX];
	char *joined;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (p->notice) {
		size_t n = strlen(p->notice) + strlen(line) + 3;

		joined = malloc(n);
		if (joined)
			snprintf(joined, n, "%s; %s", p->notice, line);
	} else {
		joined = strdup(line);
	}
	if (joined) {
		free(p->notice);
		p->notice = joined;
	}
}

/* SPEC with ".profile" before any query string; NULL if out of memory. */
static char *beside_name(const char *spec)
{
	const char *q = strstr(spec, "://") ? strchr(spec, '?') : NULL;
	size_t head = q ? (size_t)(q - spec) : strlen(spec);
	size_t n = strlen(spec) + sizeof(PROFILE_SUFFIX);
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%.*s%s%s", (int)head, spec, PROFILE_SUFFIX, q ? q : "");
	return s;
}

/*
 * The remote URL.profile, fetched once (through its own source, no cache
 * directory, a short retry budget).  1 and *out if found, 0 if there is
 * none (or the server would not say), -errno if it is there but unusable.
 */
static int fetch_remote_profile(const char *url, const struct qs_source_options *opt, struct qs_profile **out)
{
	struct qs_source_options o = *opt;
	char *fallback = NULL;
	struct qs_source *src;
	char *text;
	int err;

	o.cache_dir = NULL;
	o.record = o.prefetch = NULL;
	o.prefetch_beside = false;
	o.retry_seconds = PROFILE_FETCH_RETRY_SECONDS;
	/* The image's fallback has its own URL.profile beside it. */
	if (opt->fallback && !(o.fallback = fallback = beside_name(opt->fallback)))
		return qs_set_error(-ENOMEM, "out of memory");
	/* Straight to the remote opener: o asks for no profile, so qs_source_open() would add nothing. */
	err = qs_source_open_remote(url, &o, &src);
	free(fallback);
	if (err < 0)
		return 0;
	if (src->size > QS_PROFILE_MAX_BYTES) {
		err = qs_set_error(-E2BIG, "%s: larger than %u MiB; not a profile", src->name,
				   QS_PROFILE_MAX_BYTES >> 20);
		qs_source_close(src);
		return err;
	}
	text = malloc(src->size + 1);
	if (!text) {
		qs_source_close(src);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	err = qs_source_pread(src, text, src->size, 0);
	if (!err)
		err = qs_profile_parse(text, src->size, src->name, out);
	free(text);
	qs_source_close(src);
	return err < 0 ? err : 1;
}

/* Where the image's superblock is: the given offset, a SIF partition, or 0. */
uint64_t profile_superblock_offset(struct qs_source *base, const struct qs_source_options *opt)
{
	uint64_t off = 0, size;

	if (opt->image_offset_given)
		return opt->image_offset;
	return qs_sif_find_squashfs(base, &off, &size) > 0 ? off : 0;
}

/* Where the metadata tables of the image at 'sb_offset' begin (or UINT64_MAX), and their size. */
static uint64_t metadata_start(struct qs_source *base, uint64_t sb_offset, uint64_t *len)
{
	uint8_t raw[SQFS_SUPER_SIZE];
	struct sqfs_super sb;

	*len = 0;
	if (sb_offset > base->size || base->size - sb_offset < SQFS_SUPER_SIZE ||
	    qs_source_pread(base, raw, sizeof(raw), sb_offset) < 0)
		return UINT64_MAX;
	sqfs_super_decode(&sb, raw);
	if (sb.magic != SQFS_MAGIC || sb.inode_table_start > sb.bytes_used || sb.bytes_used > base->size - sb_offset)
		return UINT64_MAX;
	*len = sb.bytes_used - sb.inode_table_start;
	return sb_offset + sb.inode_table_start;
}

/* Load the profile to replay and start the threads; every problem is only a notice. */
void replay_start(struct profiled *p, const char *spec, const struct qs_source_options *opt,
			 const char *identity, uint64_t sb_offset)
{
	struct qs_profile *prof = NULL;
	const char *shown = opt->prefetch;
	uint64_t meta, meta_len;
	char *remote_shown = NULL;
	char *beside = NULL;
	int err;

	if (opt->prefetch) {
		err = qs_profile_load(opt->prefetch, &prof);
		if (err < 0) {
			profile_add_notice(p, "prefetch profile ignored: %s", qs_last_error());
			return;
		}
	} else {
		/* Beside the image: only worth a look when the source is healthy. */
		if (p->base->notice || !(beside = beside_name(spec)))
			return;
		if (qs_source_spec_is_remote(spec)) {
			err = fetch_remote_profile(beside, opt, &prof);
			remote_shown = qs_source_display_name(beside);
			shown = remote_shown ? remote_shown : "URL.profile";
		} else {
			err = access(beside, F_OK) == 0 ? qs_profile_load(beside, &prof) : 0;
			shown = beside;
		}
		if (err < 0)
			profile_add_notice(p, "prefetch profile ignored: %s", qs_last_error());
		if (err <= 0 && !prof) {
			free(beside);
			free(remote_shown);
			return;
		}
	}
	if (!identity || strcmp(prof->identity, identity) != 0) {
		profile_add_notice(p, "prefetch profile %s was recorded against another image (%s); ignored", shown,
			   identity ? "its superblock differs" : "no superblock here");
		goto out;
	}
	meta = metadata_start(p->base, sb_offset, &meta_len);
	p->defer_pin = meta_len >= PROFILE_PIN_DEFER_MIN;
	if (make_plan(p, prof, meta) < 0 || keep_touch_order(p, prof, meta) < 0)
		goto out;
	pthread_mutex_lock(&p->lock);
	for (int i = 0; i < PROFILE_REPLAY_THREADS && (size_t)i < p->nturns; i++)
		if (pthread_create(&p->replayers[p->nreplayers], NULL, replay_main, p) == 0) {
			p->nreplayers++;
			p->active++;
		}
	pthread_mutex_unlock(&p->lock);
out:
	free(beside);
	free(remote_shown);
	qs_profile_free(prof);
}
