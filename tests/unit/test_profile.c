/*
 * test_profile.c - prefetch profiles (lib/io/profile.c): the parser's
 * bounds and refusals, the recorder's first-touch order and merging, and
 * the replay's identity check, on a local file with a squashfs superblock.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_replay),
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
