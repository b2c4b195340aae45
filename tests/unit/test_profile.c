/*
 * test_profile.c - prefetch profiles (lib/io/profile/): the parser's
 * bounds and refusals, the recorder's first-touch order and merging, and
 * the replay's identity check, on a local file with a squashfs superblock;
 * the replay's plan (profile_plan.c): merging, cutting, the order, the cap.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "quash.h"
#include "source.h"
#include "squashfs_fs.h"
#include "profile_plan.h"

#define IMAGE_SIZE 4096

static char workdir[256], image[300], recorded[300], other[300];

static int parse(const char *text, struct qs_profile **out)
{
	return qs_profile_parse(text, strlen(text), "t", out);
}

static void test_parse_good(void **state)
{
	struct qs_profile *p = NULL;

	(void)state;
	assert_int_equal(parse("quash-profile 1\r\n# a comment\nimage size=1 x=2\n\n0 128\n4096 1\n", &p), 0);
	assert_string_equal(p->identity, "size=1 x=2");
	assert_int_equal(p->count, 2);
	assert_int_equal(p->ranges[1].off, 4096);
	assert_int_equal(p->ranges[1].len, 1);
	qs_profile_free(p);
}

static void test_parse_refusals(void **state)
{
	static const char *const bad[] = {
		"",
		"quash-profile 2\nimage a\n",
		"quash-profile 1\n0 1\n",                          /* no image line */
		"quash-profile 1\nimage a\n12 apples\n",
		"quash-profile 1\nimage a\n1 0\n",                 /* empty range */
		"quash-profile 1\nimage a\n-1 2\n",
		"quash-profile 1\nimage a\n18446744073709551615 2\n",   /* past 2^64 */
		"quash-profile 1\nimage a\n99999999999999999999 1\n",   /* not a u64 */
		"quash-profile 1\nimage a\n1 2 3\n",
		"quash-profile 1\nimage a\n1 2\nimage b\n",
	};
	struct qs_profile *p = NULL;
	char *big;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &p), -EINVAL);
		assert_non_null(strchr(qs_last_error(), ':'));
	}
	/* A NUL inside a line, a line too long, too many bytes. */
	assert_int_equal(qs_profile_parse("quash-profile 1\nimage a\n1\0 2\n", 27, "t", &p), -EINVAL);
	big = malloc(QS_PROFILE_MAX_BYTES + 2);
	assert_non_null(big);
	memset(big, '1', 1000);
	memcpy(big, "quash-profile 1\nimage a\n", 24);
	big[1000] = '\0';
	assert_int_equal(parse(big, &p), -EINVAL);
	assert_int_equal(qs_profile_parse(big, QS_PROFILE_MAX_BYTES + 1, "t", &p), -E2BIG);
	/* One range more than the limit. */
	{
		size_t n = 24;

		memcpy(big, "quash-profile 1\nimage a\n", 24);
		for (unsigned i = 0; i <= QS_PROFILE_MAX_RANGES && n + 8 < QS_PROFILE_MAX_BYTES; i++) {
			memcpy(big + n, "1 2\n", 4);
			n += 4;
		}
		assert_int_equal(qs_profile_parse(big, n, "t", &p), -E2BIG);
	}
	free(big);
}

/* A file that starts with a squashfs superblock, bytes_used = its size. */
static void write_image(const char *path, uint32_t mkfs_time)
{
	struct sqfs_super sb = { .magic = SQFS_MAGIC, .mkfs_time = mkfs_time, .bytes_used = IMAGE_SIZE };
	uint8_t buf[IMAGE_SIZE] = { 0 };
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	sqfs_super_encode(&sb, buf);
	for (size_t i = SQFS_SUPER_SIZE; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
	fclose(f);
}

static void rd(struct qs_source *src, uint64_t off, size_t len)
{
	uint8_t buf[256];

	assert_true(len <= sizeof(buf));
	assert_int_equal(qs_source_pread(src, buf, len, off), 0);
	for (size_t i = 0; i < len; i++)
		if (off + i >= SQFS_SUPER_SIZE)
			assert_int_equal(buf[i], (uint8_t)(off + i));
}

static void test_record(void **state)
{
	struct qs_source_options opt = { .record = recorded };
	static const uint64_t want[][2] = { { 100, 20 }, { 50, 10 }, { 200, 10 }, { 60, 5 }, { 4000, 96 } };
	struct qs_source *src;
	struct qs_profile *p;
	char id[QS_PROFILE_ID_MAX];

	(void)state;
	assert_int_equal(qs_source_open(image, &opt, &src), 0);
	rd(src, 100, 10);
	rd(src, 110, 10);       /* continues the last range */
	rd(src, 105, 5);        /* nothing new */
	rd(src, 50, 10);
	rd(src, 200, 10);
	rd(src, 60, 5);         /* touches 50..60 but is not a continuation of the last */
	rd(src, 4000, 96);
	rd(src, 52, 10);        /* within what was read */
	qs_source_close(src);

	assert_int_equal(qs_profile_load(recorded, &p), 0);
	assert_int_equal(p->count, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < p->count; i++) {
		assert_int_equal(p->ranges[i].off, want[i][0]);
		assert_int_equal(p->ranges[i].len, want[i][1]);
	}
	assert_int_equal(qs_source_open_file(image, &src), 0);
	assert_int_equal(qs_profile_identity(src, 0, id, sizeof(id)), 0);
	qs_source_close(src);
	assert_string_equal(p->identity, id);
	qs_profile_free(p);
}

static void test_replay(void **state)
{
	struct qs_source_options opt = { .prefetch = recorded };
	struct qs_source *src;
	char path[320];
	FILE *f;

	(void)state;
	/* The image it was recorded on: replayed, nothing said, reads unchanged. */
	assert_int_equal(qs_source_open(image, &opt, &src), 0);
	assert_null(src->notice);
	rd(src, 100, 200);
	qs_source_close(src);

	/* Another image of the same size: one notice, reads unchanged. */
	assert_int_equal(qs_source_open(other, &opt, &src), 0);
	assert_non_null(src->notice);
	assert_non_null(strstr(src->notice, "recorded against another image"));
	assert_null(strchr(src->notice, '\n'));
	rd(src, 100, 200);
	qs_source_close(src);

	/* Beside the image: silent when missing, used when there. */
	opt = (struct qs_source_options){ .prefetch_beside = true };
	assert_int_equal(qs_source_open(other, &opt, &src), 0);
	assert_null(src->notice);
	qs_source_close(src);
	snprintf(path, sizeof(path), "%s.profile", other);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not a profile\n", f);
	fclose(f);
	assert_int_equal(qs_source_open(other, &opt, &src), 0);
	assert_non_null(src->notice);
	assert_non_null(strstr(src->notice, "not a quash profile"));
	qs_source_close(src);
	unlink(path);

	/* Not a squashfs image: nothing to record against. */
	opt = (struct qs_source_options){ .record = recorded };
	f = fopen(path, "w");
	fputs("hello", f);
	fclose(f);
	assert_int_equal(qs_source_open(path, &opt, &src), -EINVAL);
	unlink(path);
}

/* ---- the replay plan ------------------------------------------------------ */

#define MiB (1ull << 20)
#define KiB (1ull << 10)

static struct qs_profile prof_of(struct qs_profile_range *r, size_t n)
{
	struct qs_profile p = { .ranges = r, .count = n };

	return p;
}

/*
 * What every plan must be: requests sorted, disjoint, none empty, within
 * [0, end); turns a permutation of them; at most PROFILE_PREFETCH_MAX bytes.
 * Returns the bytes planned.
 */
static uint64_t check_plan(const struct qs_plan *pl, uint64_t end)
{
	uint64_t total = 0;
	char *seen = calloc(pl->nreq ? pl->nreq : 1, 1);

	assert_non_null(seen);
	for (size_t i = 0; i < pl->nreq; i++) {
		assert_true(pl->req[i].len > 0);
		assert_true(pl->req[i].off + pl->req[i].len <= end);
		if (i)
			assert_true(pl->req[i - 1].off + pl->req[i - 1].len <= pl->req[i].off);
		total += pl->req[i].len;
	}
	assert_int_equal(pl->nturns, pl->nreq);
	for (size_t i = 0; i < pl->nturns; i++) {
		assert_true(pl->turns[i] < pl->nreq);
		assert_false(seen[pl->turns[i]]);
		seen[pl->turns[i]] = 1;
	}
	free(seen);
	assert_true(total <= PROFILE_PREFETCH_MAX);
	return total;
}

/* Whether request i of the plan holds [off, off+len) whole. */
static bool holds(const struct qs_plan *pl, size_t i, uint64_t off, uint64_t len)
{
	return pl->req[i].off <= off && off + len <= pl->req[i].off + pl->req[i].len;
}

static void test_plan_merge_and_order(void **state)
{
	/* touched: data far out, data near 0, metadata, data 10 KiB after the second */
	struct qs_profile_range r[] = {
		{ 900 * KiB, 4 * KiB }, { 0, 4 * KiB }, { 1500 * KiB, 8 * KiB }, { 14 * KiB, 2 * KiB },
	};
	struct qs_profile prof = prof_of(r, 4);
	struct qs_plan pl;

	(void)state;
	assert_int_equal(qs_plan_make(&prof, 2 * MiB, 1400 * KiB, true, &pl), 0);
	check_plan(&pl, 2 * MiB);
	/* 0 and 14 KiB are less than PROFILE_MERGE_GAP apart: one request, the gap in it */
	assert_int_equal(pl.nreq, 3);
	assert_true(holds(&pl, 0, 0, 16 * KiB) && pl.req[0].len == 16 * KiB);
	assert_true(holds(&pl, 1, 900 * KiB, 4 * KiB));
	assert_true(holds(&pl, 2, 1500 * KiB, 8 * KiB));
	/* the metadata first, then the data by first touch */
	assert_int_equal(pl.turns[0], 2);
	assert_int_equal(pl.turns[1], 1);
	assert_int_equal(pl.turns[2], 0);
	qs_plan_free(&pl);

	/* without the metadata (pinned at open instead): clipped at its start */
	assert_int_equal(qs_plan_make(&prof, 2 * MiB, 1400 * KiB, false, &pl), 0);
	check_plan(&pl, 1400 * KiB);
	assert_int_equal(pl.nreq, 2);
	qs_plan_free(&pl);

	/* ranges past the source dropped, one across its end clipped */
	r[2] = (struct qs_profile_range){ 1900 * KiB, 1 * MiB };
	r[0] = (struct qs_profile_range){ 5 * MiB, 4 * KiB };
	assert_int_equal(qs_plan_make(&prof, 2 * MiB, 2 * MiB, true, &pl), 0);
	assert_int_equal(check_plan(&pl, 2 * MiB), 16 * KiB + 148 * KiB);
	qs_plan_free(&pl);
}

static void test_plan_runs(void **state)
{
	enum { N = 64 };
	struct qs_profile_range r[N];
	struct qs_profile prof = prof_of(r, N);
	struct qs_plan pl;

	(void)state;
	/* 64 x 16 KiB read in the order of their bytes: one request, longer than a cut */
	for (size_t i = 0; i < N; i++)
		r[i] = (struct qs_profile_range){ i * 16 * KiB, 16 * KiB };
	assert_int_equal(qs_plan_make(&prof, 4 * MiB, 4 * MiB, true, &pl), 0);
	check_plan(&pl, 4 * MiB);
	assert_int_equal(pl.nreq, 1);
	assert_int_equal(pl.req[0].len, N * 16 * KiB);
	qs_plan_free(&pl);

	/* shuffled by fewer than PROFILE_ORDER_SLACK places (readahead): still one */
	for (size_t i = 0; i + 1 < N; i += 2) {
		struct qs_profile_range x = r[i];

		r[i] = r[i + 1], r[i + 1] = x;
	}
	assert_int_equal(qs_plan_make(&prof, 4 * MiB, 4 * MiB, true, &pl), 0);
	assert_int_equal(pl.nreq, 1);
	qs_plan_free(&pl);

	/* read backwards: cut into PROFILE_CUT_SIZE requests, the last bytes' first */
	for (size_t i = 0; i < N; i++)
		r[i] = (struct qs_profile_range){ (N - 1 - i) * 16 * KiB, 16 * KiB };
	assert_int_equal(qs_plan_make(&prof, 4 * MiB, 4 * MiB, true, &pl), 0);
	check_plan(&pl, 4 * MiB);
	assert_int_equal(pl.nreq, N * 16 * KiB / PROFILE_CUT_SIZE);
	for (size_t i = 0; i < pl.nreq; i++) {
		assert_int_equal(pl.req[i].off, i * PROFILE_CUT_SIZE);
		assert_int_equal(pl.turns[i], pl.nreq - 1 - i);
	}
	qs_plan_free(&pl);

	/* one long range in a run cut: its slices in the order of their bytes */
	r[0] = (struct qs_profile_range){ 0, 1 * MiB };
	r[1] = (struct qs_profile_range){ 1 * MiB + 4 * KiB, 4 * KiB };
	for (size_t i = 2; i < 40; i++)
		r[i] = (struct qs_profile_range){ 1 * MiB + 4 * KiB, 4 * KiB };   /* repeats: nothing more */
	r[40] = (struct qs_profile_range){ 8 * KiB, 4 * KiB };                  /* out of order, inside r[0] */
	prof.count = 41;
	assert_int_equal(qs_plan_make(&prof, 4 * MiB, 4 * MiB, true, &pl), 0);
	check_plan(&pl, 4 * MiB);
	assert_int_equal(pl.nreq, 5);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(pl.turns[i], i);
	qs_plan_free(&pl);
}

static void test_plan_cap(void **state)
{
	enum { N = 1000 };
	struct qs_profile_range *r = calloc(N, sizeof(*r));
	struct qs_profile prof = prof_of(r, N);
	uint64_t size = 2000 * MiB, total;
	struct qs_plan pl;

	(void)state;
	assert_non_null(r);
	/* 1000 ranges of 1 MiB, 2 MiB apart, touched last to first: the cap keeps the first touched */
	for (size_t i = 0; i < N; i++)
		r[i] = (struct qs_profile_range){ (N - 1 - i) * 2 * MiB, 1 * MiB };
	assert_int_equal(qs_plan_make(&prof, size, size, true, &pl), 0);
	total = check_plan(&pl, size);
	assert_int_equal(total, PROFILE_PREFETCH_MAX);
	assert_int_equal(pl.req[pl.nreq - 1].off, (N - 1) * 2 * MiB);
	assert_true(pl.req[0].off >= (N - PROFILE_PREFETCH_MAX / MiB) * 2 * MiB);
	qs_plan_free(&pl);

	/* 1-byte ranges PROFILE_MERGE_GAP apart merge, gaps and all: the gaps count against the cap */
	for (size_t i = 0; i < N; i++)
		r[i] = (struct qs_profile_range){ i * PROFILE_MERGE_GAP, 1 };
	assert_int_equal(qs_plan_make(&prof, size, size, true, &pl), 0);
	total = check_plan(&pl, size);
	assert_int_equal(total, (N - 1) * (uint64_t)PROFILE_MERGE_GAP + 1);
	qs_plan_free(&pl);

	/* empty: nothing planned */
	prof.count = 0;
	assert_int_equal(qs_plan_make(&prof, size, size, true, &pl), 0);
	assert_int_equal(pl.nreq, 0);
	assert_int_equal(pl.nturns, 0);
	qs_plan_free(&pl);
	free(r);
}

/* Hostile profiles: overlapping, repeated, huge and zero-length-at-the-end ranges. */
static void test_plan_hostile(void **state)
{
	enum { N = 20000 };
	struct qs_profile_range *r = calloc(N, sizeof(*r));
	struct qs_profile prof = prof_of(r, N);
	uint64_t size = 300 * MiB, x = 88172645463325252ull;
	struct qs_plan pl;

	(void)state;
	assert_non_null(r);
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < N; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			r[i].off = x % (size + size / 8);                 /* some past the end */
			r[i].len = 1 + (x >> 40) % (round % 4 == 3 ? 64 * MiB : 300 * KiB);
			if (round % 5 == 4)
				r[i].len = UINT64_MAX - r[i].off;               /* to the top of the range */
		}
		assert_int_equal(qs_plan_make(&prof, size, size - 10 * MiB, round % 2, &pl), 0);
		check_plan(&pl, size);
		qs_plan_free(&pl);
	}
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_plan_merge_and_order),
		cmocka_unit_test(test_plan_runs),
		cmocka_unit_test(test_plan_cap),
		cmocka_unit_test(test_plan_hostile),
	};
	int ret;

	snprintf(workdir, sizeof(workdir), "/tmp/quash-test-profile-XXXXXX");
	if (!mkdtemp(workdir))
		return 1;
	snprintf(image, sizeof(image), "%s/image", workdir);
	snprintf(other, sizeof(other), "%s/other", workdir);
	snprintf(recorded, sizeof(recorded), "%s/recorded", workdir);
	write_image(image, 1);
	write_image(other, 2);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(image);
	unlink(other);
	unlink(recorded);
	rmdir(workdir);
	return ret;
}
