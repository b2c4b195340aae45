/*
 * test_sif.c - finding the squashfs partition of a SIF container.
 *
 * No SIF tool is at hand, so the containers are written here byte by byte
 * following pkg/sif of sylabs/sif (128-byte global header, 585-byte
 * descriptors, little-endian, unpadded), around a real squashfs image that
 * mksquashfs makes.  The found partition is then opened with the reader
 * (qs_image_open without an offset), which must see the file put into it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "quash.h"
#include "sif.h"
#include "squashfs_fs.h"

#define HDR_SIZE	128
#define DESCR_SIZE	585
#define DATA_PARTITION	0x4004
#define DATA_DEFFILE	0x4001
#define DATA_SIGNATURE	0x4005
#define FS_SQUASHFS	1
#define FS_EXT3		2
#define PART_SYSTEM	1
#define PART_PRIMSYS	2
#define PART_DATA	3

static char workdir[256];
static uint8_t *squashfs;
static size_t squashfs_len;
static const char payload[] = "hello from inside a SIF container\n";

struct descr {
	int32_t type;
	uint8_t used;
	int64_t offset, size;
	int32_t fs_type, part_type;
};

struct sif_spec {
	const char *version;            /* "01" */
	int64_t total;                  /* descriptor count in the header (default: ndescr) */
	int64_t table_offset;           /* default HDR_SIZE */
	int64_t table_size;             /* default total * DESCR_SIZE */
	int ndescr;
	struct descr d[4];
};

static void put_descr(uint8_t *p, const struct descr *d, uint32_t id)
{
	memset(p, 0, DESCR_SIZE);
	sqfs_put32(p + 0, (uint32_t)d->type);
	p[4] = d->used;
	sqfs_put32(p + 5, id);
	sqfs_put32(p + 9, 0xf0000001u);         /* group 1 */
	sqfs_put64(p + 17, (uint64_t)d->offset);
	sqfs_put64(p + 25, (uint64_t)d->size);
	sqfs_put64(p + 33, (uint64_t)d->size);
	snprintf((char *)p + 73, 128, "object-%u", id);
	sqfs_put32(p + 201, (uint32_t)d->fs_type);
	sqfs_put32(p + 205, (uint32_t)d->part_type);
	memcpy(p + 209, "02", 3);               /* amd64 */
}

/* Write a SIF file: header, descriptors, and the squashfs image at 'data_at'. */
static void write_sif(const char *path, const struct sif_spec *s, int64_t data_at)
{
	int64_t total = s->total ? s->total : s->ndescr;
	int64_t table = s->table_offset ? s->table_offset : HDR_SIZE;
	size_t len = (size_t)data_at + squashfs_len;
	uint8_t *buf = calloc(1, len);
	FILE *f;

	assert_non_null(buf);
	memcpy(buf, "#!/usr/bin/env run-singularity\n", 31);
	memcpy(buf + 32, "SIF_MAGIC", 10);
	memcpy(buf + 42, s->version ? s->version : "01", 3);
	memcpy(buf + 45, "02", 3);
	memset(buf + 48, 0xab, 16);             /* UUID */
	sqfs_put64(buf + 64, 1700000000);
	sqfs_put64(buf + 72, 1700000000);
	sqfs_put64(buf + 80, 0);
	sqfs_put64(buf + 88, (uint64_t)total);
	sqfs_put64(buf + 96, (uint64_t)table);
	sqfs_put64(buf + 104, (uint64_t)(s->table_size ? s->table_size : s->ndescr * DESCR_SIZE));
	sqfs_put64(buf + 112, (uint64_t)data_at);
	sqfs_put64(buf + 120, squashfs_len);
	for (int i = 0; i < s->ndescr; i++)
		if (table >= 0 && (size_t)table + (size_t)(i + 1) * DESCR_SIZE <= len)
			put_descr(buf + table + (size_t)i * DESCR_SIZE, &s->d[i], (uint32_t)i + 1);
	memcpy(buf + data_at, squashfs, squashfs_len);

	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

#define DATA_AT 65536

static struct descr squash_part(int32_t part_type)
{
	return (struct descr){ DATA_PARTITION, 1, DATA_AT, 0, FS_SQUASHFS, part_type };
}

static int find(const char *name, const struct sif_spec *s, uint64_t *off, uint64_t *size)
{
	char path[300];
	struct qs_source *src;
	int r;

	snprintf(path, sizeof(path), "%s/%s", workdir, name);
	write_sif(path, s, DATA_AT);
	assert_int_equal(qs_source_open_file(path, &src), 0);
	r = qs_sif_find_squashfs(src, off, size);
	qs_source_close(src);
	return r;
}

static int setup(void **state)
{
	const char *base = getenv("QUASH_WORK");
	char cmd[2048];
	FILE *f;

	(void)state;
	snprintf(workdir, sizeof(workdir), "%s/test_sif.XXXXXX", base ? base : "/tmp");
	if (base)
		mkdir(base, 0755);
	if (!mkdtemp(workdir))
		return -1;
	snprintf(cmd, sizeof(cmd), "mkdir '%s/root' && printf '%%s' '%s' > '%s/root/hello' && "
		 "mksquashfs '%s/root' '%s/plain.sqfs' -quiet -no-progress -noappend >/dev/null",
		 workdir, payload, workdir, workdir, workdir);
	if (system(cmd) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "%s/plain.sqfs", workdir);
	f = fopen(cmd, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	squashfs_len = (size_t)ftell(f);
	rewind(f);
	squashfs = malloc(squashfs_len);
	if (!squashfs || fread(squashfs, 1, squashfs_len, f) != squashfs_len)
		return -1;
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	free(squashfs);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_primary_partition(void **state)
{
	struct sif_spec s = { .ndescr = 3 };
	uint64_t off = 0, size = 0;

	(void)state;
	s.d[0] = (struct descr){ DATA_DEFFILE, 1, 4096, 100, 0, 0 };
	s.d[1] = squash_part(PART_PRIMSYS);
	s.d[1].size = (int64_t)squashfs_len;
	s.d[2] = (struct descr){ DATA_SIGNATURE, 1, 8192, 200, 0, 0 };
	assert_int_equal(find("primary.sif", &s, &off, &size), 1);
	assert_int_equal(off, DATA_AT);
	assert_int_equal(size, squashfs_len);
}

/* With no partition marked primary, the first partition is the one. */
static void test_first_partition(void **state)
{
	struct sif_spec s = { .ndescr = 2 };
	uint64_t off = 0, size = 0;

	(void)state;
	s.d[0] = squash_part(PART_SYSTEM);
	s.d[0].size = (int64_t)squashfs_len;
	s.d[1] = squash_part(PART_DATA);
	s.d[1].offset = 4096;
	s.d[1].size = 4096;
	assert_int_equal(find("first.sif", &s, &off, &size), 1);
	assert_int_equal(off, DATA_AT);
}

/* A primary system partition wins over an earlier one, and unused descriptors are skipped. */
static void test_primary_wins(void **state)
{
	struct sif_spec s = { .ndescr = 4 };
	uint64_t off = 0, size = 0;

	(void)state;
	s.d[0] = squash_part(PART_PRIMSYS);
	s.d[0].used = 0;                        /* deleted: must be ignored */
	s.d[0].offset = 4096;
	s.d[1] = (struct descr){ DATA_PARTITION, 1, 8192, 4096, FS_EXT3, PART_DATA };
	s.d[2] = squash_part(PART_PRIMSYS);
	s.d[2].size = (int64_t)squashfs_len;
	s.d[3] = squash_part(PART_PRIMSYS);     /* a second one: the first primary counts */
	s.d[3].offset = 4096;
	s.d[3].size = 4096;
	assert_int_equal(find("wins.sif", &s, &off, &size), 1);
	assert_int_equal(off, DATA_AT);
	assert_int_equal(size, squashfs_len);
}

/* The reader finds the partition by itself and reads the file inside. */
static void test_image_open(void **state)
{
	struct sif_spec s = { .ndescr = 1 };
	struct qs_image_options opt = { 0 };
	struct qs_source *src;
	struct qs_image *img;
	struct qs_inode ino;
	struct qs_file *file;
	char path[300], buf[128];
	ssize_t n;

	(void)state;
	s.d[0] = squash_part(PART_PRIMSYS);
	s.d[0].size = (int64_t)squashfs_len;
	snprintf(path, sizeof(path), "%s/open.sif", workdir);
	write_sif(path, &s, DATA_AT);
	assert_int_equal(qs_source_open_file(path, &src), 0);
	if (qs_image_open(src, &opt, &img) != 0)
		fail_msg("qs_image_open: %s", qs_last_error());
	assert_int_equal(qs_image_info(img)->offset, DATA_AT);
	assert_int_equal(qs_lookup_path(img, "hello", &ino), 0);
	assert_int_equal(qs_file_open(img, &ino, &file), 0);
	n = qs_file_pread(file, buf, sizeof(buf), 0);
	assert_int_equal(n, strlen(payload));
	assert_memory_equal(buf, payload, strlen(payload));
	qs_file_close(file);
	qs_image_close(img);
}

/* A partition too short for the image in it: the image must not read past its partition. */
static void test_image_bounded_by_partition(void **state)
{
	struct sif_spec s = { .ndescr = 1 };
	struct qs_image_options opt = { 0 };
	struct qs_source *src;
	struct qs_image *img;
	char path[300];

	(void)state;
	s.d[0] = squash_part(PART_PRIMSYS);
	s.d[0].size = (int64_t)sqfs_le64(squashfs + 40) - 1;     /* bytes_used - 1 */
	snprintf(path, sizeof(path), "%s/short.sif", workdir);
	write_sif(path, &s, DATA_AT);
	assert_int_equal(qs_source_open_file(path, &src), 0);
	assert_int_equal(qs_image_open(src, &opt, &img), -EINVAL);
	assert_non_null(strstr(qs_last_error(), "truncated"));
}

static void test_not_sif(void **state)
{
	char path[300];
	struct qs_source *src;
	uint64_t off = 7, size = 7;
	FILE *f;

	(void)state;
	/* A plain squashfs image. */
	snprintf(path, sizeof(path), "%s/plain.sqfs", workdir);
	assert_int_equal(qs_source_open_file(path, &src), 0);
	assert_int_equal(qs_sif_find_squashfs(src, &off, &size), 0);
	qs_source_close(src);
	assert_int_equal(off, 7);

	/* Shorter than a SIF header, and a magic one byte off. */
	snprintf(path, sizeof(path), "%s/short", workdir);
	f = fopen(path, "wb");
	assert_non_null(f);
	fputs("#!/usr/bin/env run-singularity\nSIF_MAGIC", f);
	fclose(f);
	assert_int_equal(qs_source_open_file(path, &src), 0);
	assert_int_equal(qs_sif_find_squashfs(src, &off, &size), 0);
	qs_source_close(src);

	snprintf(path, sizeof(path), "%s/nearly", workdir);
	f = fopen(path, "wb");
	assert_non_null(f);
	for (int i = 0; i < 4096; i++)
		fputc(i < 32 ? ' ' : i < 42 ? "SIF_MAGIX"[i - 32] : 0, f);
	fclose(f);
	assert_int_equal(qs_source_open_file(path, &src), 0);
	assert_int_equal(qs_sif_find_squashfs(src, &off, &size), 0);
	qs_source_close(src);
}

struct corrupt_case {
	const char *what;
	int err;
	struct sif_spec s;
};

static void test_corrupt(void **state)
{
	struct corrupt_case cases[] = {
		{ "huge descriptor count", -EINVAL, { .ndescr = 1, .total = 1ll << 40 } },
		{ "negative descriptor count", -EINVAL, { .ndescr = 1, .total = -1 } },
		{ "count just over the cap", -EINVAL, { .ndescr = 1, .total = 4097 } },
		{ "table past the end", -EINVAL, { .ndescr = 1, .table_offset = 1ll << 40 } },
		{ "table runs past the end", -EINVAL, { .ndescr = 1, .total = 200 } },
		{ "negative table offset", -EINVAL, { .ndescr = 1, .table_offset = -585 } },
		{ "table size too small", -EINVAL, { .ndescr = 2, .table_size = 585 } },
		{ "unknown version", -ENOTSUP, { .ndescr = 1, .version = "02" } },
		{ "no partition", -EINVAL, { .ndescr = 1 } },
		{ "ext3 system partition", -ENOTSUP, { .ndescr = 1 } },
		{ "partition past the end", -EINVAL, { .ndescr = 1 } },
		{ "negative partition offset", -EINVAL, { .ndescr = 1 } },
		{ "partition size overflows", -EINVAL, { .ndescr = 1 } },
		{ "partition without squashfs", -EINVAL, { .ndescr = 1 } },
	};
	uint64_t off = 7, size = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sif_spec *s = &cases[i].s;
		const char *what = cases[i].what;

		s->d[0] = squash_part(PART_PRIMSYS);
		s->d[0].size = (int64_t)squashfs_len;
		s->d[1] = s->d[0];
		if (strcmp(what, "no partition") == 0)
			s->d[0].type = DATA_DEFFILE;
		else if (strcmp(what, "ext3 system partition") == 0)
			s->d[0].fs_type = FS_EXT3;
		else if (strcmp(what, "partition past the end") == 0)
			s->d[0].offset = 1ll << 40;
		else if (strcmp(what, "negative partition offset") == 0)
			s->d[0].offset = -4096;
		else if (strcmp(what, "partition size overflows") == 0)
			s->d[0].size = INT64_MAX;
		else if (strcmp(what, "partition without squashfs") == 0)
			s->d[0].offset = 4096;
		qs_set_error(0, "%s", "");
		int r = find("corrupt.sif", s, &off, &size);
		if (r != cases[i].err)
			fail_msg("%s: got %d, want %d (%s)", what, r, cases[i].err, qs_last_error());
		assert_true(strncmp(qs_last_error(), "SIF: ", 5) == 0);
		assert_int_equal(off, 7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_primary_partition),
		cmocka_unit_test(test_first_partition),
		cmocka_unit_test(test_primary_wins),
		cmocka_unit_test(test_image_open),
		cmocka_unit_test(test_image_bounded_by_partition),
		cmocka_unit_test(test_not_sif),
		cmocka_unit_test(test_corrupt),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
