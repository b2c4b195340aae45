/*
 * profile_plan.c - the replay plan of a prefetch profile: the profile's
 * ranges turned into the requests a replay makes, and their order.
 *
 * A profile lists ranges in first-touch order, wherever the workload's
 * bytes lie.  Asked for one by one they would cost a round trip each;
 * fetched in offset order they would come in an order the workload does
 * not read them in.  The plan sorts them, merges close ones
 * (PROFILE_MERGE_GAP), keeps a run read in the order of its bytes one
 * request (an image laid out by pack --order streams in the order it is
 * read), cuts a run read out of order into PROFILE_CUT_SIZE requests, and
 * orders the requests: the metadata first (opening the image waits for
 * it), then by the earliest touch each holds.  Nothing here fetches: the
 * replay (profile.c) works through the turns.
 */
#include <errno.h>
#include <stdlib.h>

#include "profile_plan.h"

struct plan_entry {
	uint64_t off, end;
	size_t first;                   /* earliest place in the profile */
};

static int by_offset(const void *a, const void *b)
{
	const struct plan_entry *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

struct plan_turn {
	bool data;                      /* not metadata: after all of that */
	size_t first;                   /* earliest place in the profile */
	size_t idx;                     /* the entry's place by offset */
};

static int by_turn(const void *a, const void *b)
{
	const struct plan_turn *x = a, *y = b;

	if (x->data != y->data)
		return x->data ? 1 : -1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;      /* a range's slices in the order of their bytes */
}

#define RUN_CUT ((size_t)1 << (sizeof(size_t) * 8 - 1))   /* a run cut into requests */

/* prof's ranges clipped to [0, size), by offset, into e[]; their count. */
static size_t clip_sorted(const struct qs_profile *prof, uint64_t size, struct plan_entry *e)
{
	size_t n = 0;

	for (size_t i = 0; i < prof->count; i++) {
		uint64_t off = prof->ranges[i].off, len = prof->ranges[i].len;

		if (off >= size)
			continue;
		if (len > size - off)
			len = size - off;
		e[n++] = (struct plan_entry){ off, off + len, i };
	}
	qsort(e, n, sizeof(*e), by_offset);
	return n;
}

/* e[0..n) merged where less than PROFILE_MERGE_GAP apart into run[]; a run's 'first' is its first index in e[]. */
static size_t merge_runs(const struct plan_entry *e, size_t n, struct plan_entry *run)
{
	size_t nrun = 0;

	for (size_t i = 0; i < n; i++) {
		if (nrun && e[i].off <= run[nrun - 1].end + PROFILE_MERGE_GAP) {
			if (e[i].end > run[nrun - 1].end)
				run[nrun - 1].end = e[i].end;
		} else {
			run[nrun++] = (struct plan_entry){ e[i].off, e[i].end, i };
		}
	}
	return nrun;
}

/*
 * A run read in the order of its bytes (an image laid out by pack
 * --order) stays one request, streamed in that order.  One read out of
 * order, a range touched PROFILE_ORDER_SLACK ranges or more before one
 * at lower offsets, is cut into requests of PROFILE_CUT_SIZE, each
 * fetched in the turn of the earliest touch it holds: as one request in
 * the turn of its earliest, a large library's first page would put all
 * of it, streamed in offset order, ahead of what the workload wants next.
 * Marks the runs cut (RUN_CUT in 'first'); the number of requests.
 */
static size_t mark_cuts(const struct plan_entry *e, size_t n, struct plan_entry *run, size_t nrun)
{
	uint64_t cut_bytes = 0;
	size_t nr = 0;

	for (size_t i = 0; i < nrun; i++) {
		size_t last = i + 1 < nrun ? run[i + 1].first : n, latest = 0;
		bool cut = false;

		for (size_t k = run[i].first; k < last && !cut; k++) {
			cut = e[k].first + PROFILE_ORDER_SLACK < latest;
			if (e[k].first > latest)
				latest = e[k].first;
		}
		/* Only as many bytes as a replay fetches are cut: a hostile profile's plan stays small. */
		cut = cut && cut_bytes + (run[i].end - run[i].off) <= PROFILE_PREFETCH_MAX;
		if (cut)
			cut_bytes += run[i].end - run[i].off;
		nr += cut ? (run[i].end - run[i].off + PROFILE_CUT_SIZE - 1) / PROFILE_CUT_SIZE : 1;
		run[i].first |= cut ? RUN_CUT : 0;
	}
	return nr;
}

/* The runs as requests r[] (cut ones in PROFILE_CUT_SIZE slices), each with the earliest touch it holds; their count. */
static size_t make_requests(const struct plan_entry *e, size_t n, const struct plan_entry *run, size_t nrun,
			    struct plan_entry *r)
{
	size_t m = 0;

	for (size_t i = 0; i < nrun; i++) {
		size_t k0 = run[i].first & ~RUN_CUT, from = m;
		size_t last = i + 1 < nrun ? run[i + 1].first & ~RUN_CUT : n;
		uint64_t step = run[i].first & RUN_CUT ? PROFILE_CUT_SIZE : run[i].end - run[i].off;
		uint64_t covered = run[i].off;

		for (uint64_t o = run[i].off; o < run[i].end; o += step)
			r[m++] = (struct plan_entry){ o, run[i].end - o <= step ? run[i].end : o + step, SIZE_MAX };
		/*
		 * Each request in the turn of the earliest range it overlaps.  A
		 * range marks the requests it adds to what the ranges before it
		 * covered, and the one it starts in: overlapping ranges cost no
		 * more than one pass over the requests.
		 */
		for (size_t k = k0; k < last; k++) {
			size_t q = from + (e[k].off - run[i].off) / step;

			if (e[k].first < r[q].first)
				r[q].first = e[k].first;
			if (e[k].end <= covered)
				continue;
			for (q = from + ((e[k].off > covered ? e[k].off : covered) - run[i].off) / step;
			     q < m && r[q].off < e[k].end; q++)
				if (e[k].first < r[q].first)
					r[q].first = e[k].first;
			covered = e[k].end;
		}
	}
	return m;
}

/* Requests r[0..m) in their turns (t[] has room for m), capped, into the plan. */
static void order_requests(struct plan_entry *r, size_t m, struct plan_turn *t, uint64_t meta, struct qs_plan *plan)
{
	uint64_t total = 0;

	for (size_t i = 0; i < m; i++)
		t[i] = (struct plan_turn){ r[i].off < meta, r[i].first, i };
	qsort(t, m, sizeof(*t), by_turn);
	/* Over the cap: what comes last in the profile's order is left out. */
	for (size_t i = 0; i < m; i++) {
		struct plan_entry *x = &r[t[i].idx];

		if (total + (x->end - x->off) > PROFILE_PREFETCH_MAX)
			x->end = x->off + (PROFILE_PREFETCH_MAX - total);
		total += x->end - x->off;
	}
	/* Requests by offset, empty ones dropped; then the turns, renumbered. */
	for (size_t i = 0; i < m; i++) {
		r[i].first = plan->nreq;        /* now: its index in the plan */
		if (r[i].end > r[i].off)
			plan->req[plan->nreq++] = (struct qs_profile_range){ r[i].off, r[i].end - r[i].off };
	}
	for (size_t i = 0; i < m; i++)
		if (r[t[i].idx].end > r[t[i].idx].off)
			plan->turns[plan->nturns++] = r[t[i].idx].first;
}

/*
 * The gaps merged in count against PROFILE_PREFETCH_MAX too: many small
 * ranges far apart must not become the whole image.
 */
int qs_plan_make(const struct qs_profile *prof, uint64_t size, uint64_t meta, bool with_meta, struct qs_plan *plan)
{
	struct plan_entry *e = calloc(prof->count ? prof->count : 1, sizeof(*e));
	struct plan_entry *run = NULL, *r = NULL;      /* merged runs; the requests they are cut into */
	struct plan_turn *t = NULL;
	size_t n, nrun, nr;
	int ret = -ENOMEM;

	*plan = (struct qs_plan){ 0 };
	if (!e)
		return -ENOMEM;
	if (!with_meta && meta < size)
		size = meta;
	n = clip_sorted(prof, size, e);
	run = calloc(n ? n : 1, sizeof(*run));
	if (!run)
		goto out;
	nrun = merge_runs(e, n, run);
	nr = mark_cuts(e, n, run, nrun);
	r = calloc(nr ? nr : 1, sizeof(*r));
	t = calloc(nr ? nr : 1, sizeof(*t));
	plan->req = calloc(nr ? nr : 1, sizeof(*plan->req));
	plan->turns = calloc(nr ? nr : 1, sizeof(*plan->turns));
	if (!r || !t || !plan->req || !plan->turns)
		goto out;
	order_requests(r, make_requests(e, n, run, nrun, r), t, meta, plan);
	ret = 0;
out:
	if (ret < 0)
		qs_plan_free(plan);
	free(t);
	free(r);
	free(run);
	free(e);
	return ret;
}

void qs_plan_free(struct qs_plan *plan)
{
	free(plan->req);
	free(plan->turns);
	*plan = (struct qs_plan){ 0 };
}
