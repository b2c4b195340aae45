/*
 * profile_plan.h - the replay plan of a prefetch profile (profile_plan.c):
 * which byte ranges to request, and in which order.
 */
#ifndef QUASH_PROFILE_PLAN_H
#define QUASH_PROFILE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source.h"

#define PROFILE_PREFETCH_MAX   (256ull << 20)      /* bytes a replay fetches at most */
/*
 * Ranges closer than this are fetched as one: the gap's bytes cost less
 * than a request of their own while never growing the plan by much (the
 * fleet bench, docs/benchmarks.md).
 */
#define PROFILE_MERGE_GAP      (64u << 10)
/*
 * A merged run read out of its bytes' order is cut into requests of this:
 * smaller ones pay a round trip each, larger ones hold back what the
 * workload wants next (the fleet bench, docs/benchmarks.md).
 */
#define PROFILE_CUT_SIZE       (256u << 10)
/*
 * Out of order means touched this many ranges before a range at lower
 * offsets of the same request: the kernel's readahead and the daemon's
 * threads shuffle a sequential read's recording by a few.
 */
#define PROFILE_ORDER_SLACK    32u

struct qs_plan {
	struct qs_profile_range *req;   /* the requests, by offset, disjoint, none empty */
	size_t nreq;
	size_t *turns;                  /* indices into req[], in the order to fetch them */
	size_t nturns;
};

/*
 * The plan for replaying prof over a source of 'size' bytes whose metadata
 * starts at 'meta': the ranges clipped to the source (and to the metadata's
 * start unless with_meta), merged where less than PROFILE_MERGE_GAP apart,
 * a merged run read out of order cut into requests of PROFILE_CUT_SIZE.
 * The turns: the metadata's requests first, then each request by the
 * earliest touch of the bytes it holds, up to PROFILE_PREFETCH_MAX bytes in
 * that order (the gaps merged in counted too).  0 or -ENOMEM; free with
 * qs_plan_free().
 */
int qs_plan_make(const struct qs_profile *prof, uint64_t size, uint64_t meta, bool with_meta, struct qs_plan *plan);
void qs_plan_free(struct qs_plan *plan);

#endif
