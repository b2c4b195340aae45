/*
 * test_reader.c - the reader library against images made by Debian's
 * mksquashfs from a tree this test writes itself: path lookups (through the
 * directory index of a large directory too), file reads at random offsets
 * compared with the source bytes, sparse and fragment tails, the stored
 * size words and fragment positions appending copies blocks by, and
 * superblocks broken one field at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "quash.h"
#include "squashfs_fs.h"

#define BIG_DIR_ENTRIES 5000
#define BIG_FILE_SIZE (3u << 20)

static char dir[] = "/tmp/quash-test-reader.XXXXXX";
static char src[512], image[512], image_nofrag[512];
static uint8_t *big;

static void write_file(const char *rel, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", src, rel);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static int make_tree(void **state)
{
	char cmd[8192], path[4096];
	uint32_t x = 12345;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(path, sizeof(path), "%s/src/many", dir);
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	for (int i = 0; i < BIG_DIR_ENTRIES; i++) {
		char name[64];

		snprintf(name, sizeof(name), "many/entry-%05d", i);
		write_file(name, name, strlen(name));
	}
	big = malloc(BIG_FILE_SIZE);
	for (size_t i = 0; i < BIG_FILE_SIZE; i++) {
		x = x * 1103515245 + 12345;
		big[i] = (i / 5000) % 2 ? (uint8_t)(x >> 16) : (uint8_t)(i % 251);
	}
	write_file("big", big, BIG_FILE_SIZE - 777);       /* full blocks and a tail */
	write_file("empty", "", 0);
	write_file("sparse", "", 0);
	snprintf(path, sizeof(path), "%s/sparse", src);
	assert_int_equal(truncate(path, 1 << 20), 0);
	snprintf(path, sizeof(path), "%s/src/link", dir);
	assert_int_equal(symlink("big", path), 0);

	snprintf(image, sizeof(image), "%s/img.sqfs", dir);
	snprintf(image_nofrag, sizeof(image_nofrag), "%s/nofrag.sqfs", dir);
	snprintf(cmd, sizeof(cmd), "mksquashfs %s %s -quiet -no-progress -noappend -b 4096 >/dev/null && "
		 "mksquashfs %s %s -quiet -no-progress -noappend -comp zstd -no-fragments >/dev/null",
		 src, image, src, image_nofrag);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int remove_tree(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	free(big);
	return system(cmd) == 0 ? 0 : -1;
}

static struct qs_image *open_image(const char *path)
{
	struct qs_source *s;
	struct qs_image *img;
	struct qs_image_options opt = { .offset_given = true };

	assert_int_equal(qs_source_open(path, NULL, &s), 0);
	assert_int_equal(qs_image_open(s, &opt, &img), 0);
	return img;
}

static void test_lookup_every_entry(void **state)
{
	struct qs_image *img = open_image(image);
	struct qs_inode in;

	(void)state;
	for (int i = 0; i < BIG_DIR_ENTRIES; i += 7) {
		char name[64];

		snprintf(name, sizeof(name), "/many/entry-%05d", i);
		assert_int_equal(qs_lookup_path(img, name, &in), 0);
		assert_int_equal(in.type, QS_FILE);
		assert_int_equal(in.size, strlen(name) - 1);
	}
	assert_int_equal(qs_lookup_path(img, "/many/entry-99999", &in), -ENOENT);
	assert_int_equal(qs_lookup_path(img, "/many/entry-", &in), -ENOENT);
	assert_int_equal(qs_lookup_path(img, "/many/a", &in), -ENOENT);
	assert_int_equal(qs_lookup_path(img, "/many/zzz", &in), -ENOENT);
	assert_int_equal(qs_lookup_path(img, "/big/x", &in), -ENOTDIR);
	assert_int_equal(qs_lookup_path(img, "//many/./entry-00000", &in), 0);
	qs_image_close(img);
}

static void test_big_directory_has_index(void **state)
{
	struct qs_image *img = open_image(image);
	struct qs_inode in;
	struct qs_dir_iter it;
	struct qs_dirent ent;
	int n = 0, r;
	char prev[300] = "";

	(void)state;
	assert_int_equal(qs_lookup_path(img, "/many", &in), 0);
	assert_true(in.extended);
	assert_true(in.u.dir.index_count > 0);
	assert_int_equal(qs_dir_open(img, &in, &it), 0);
	while ((r = qs_dir_next(&it, &ent)) > 0) {
		assert_true(strcmp(prev, ent.name) < 0);
		snprintf(prev, sizeof(prev), "%s", ent.name);
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, BIG_DIR_ENTRIES);
	qs_image_close(img);
}

static void check_reads(const char *path)
{
	struct qs_image *img = open_image(path);
	size_t size = BIG_FILE_SIZE - 777;
	uint8_t *buf = malloc(200000);
	struct qs_file *f;
	struct qs_inode in;
	uint32_t x = 99;

	assert_int_equal(qs_lookup_path(img, "/big", &in), 0);
	assert_int_equal(in.size, size);
	assert_int_equal(qs_file_open(img, &in, &f), 0);
	/* Reading backwards first makes the checkpoints build out of order. */
	assert_int_equal(qs_file_pread(f, buf, 777, size - 777), 777);
	assert_memory_equal(buf, big + size - 777, 777);
	for (int i = 0; i < 300; i++) {
		uint64_t off, len;

		x = x * 1103515245 + 12345;
		off = (x >> 4) % (size + 1000);
		len = (x >> 8) % 200000;
		ssize_t n = qs_file_pread(f, buf, len, off);
		size_t want = off >= size ? 0 : (off + len > size ? size - off : len);

		assert_int_equal(n, want);
		if (want)
			assert_memory_equal(buf, big + off, want);
	}
	qs_file_close(f);

	assert_int_equal(qs_lookup_path(img, "/sparse", &in), 0);
	assert_int_equal(qs_file_open(img, &in, &f), 0);
	assert_int_equal(qs_file_pread(f, buf, 100000, 500000), 100000);
	for (int i = 0; i < 100000; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(qs_file_block_is_sparse(f, 1), 1);
	qs_file_close(f);

	assert_int_equal(qs_lookup_path(img, "/empty", &in), 0);
	assert_int_equal(qs_file_open(img, &in, &f), 0);
	assert_int_equal(qs_file_pread(f, buf, 10, 0), 0);
	qs_file_close(f);

	assert_int_equal(qs_lookup_path(img, "/link", &in), 0);
	assert_int_equal(qs_readlink(img, &in, (char *)buf, 200000), 3);
	assert_string_equal((char *)buf, "big");
	assert_int_equal(qs_readlink(img, &in, (char *)buf, 3), -ERANGE);
	free(buf);
	qs_image_close(img);
}

static void test_reads_with_fragments(void **state)
{
	(void)state;
	check_reads(image);
}

static void test_reads_without_fragments(void **state)
{
	(void)state;
	check_reads(image_nofrag);
}

/*
 * qs_file_block_words read in pieces that straddle checkpoints must agree
 * with one read of them all; blocks stored uncompressed (the random halves
 * of "big", in 4K blocks) must be the source's bytes at the positions the words give.
 */
static void check_stored_blocks(const char *path, uint32_t block_size, bool some_raw)
{
	struct qs_image *img = open_image(path);
	const struct qs_info *info = qs_image_info(img);
	uint32_t *all, piece[300];
	uint8_t *raw = malloc(block_size);
	uint64_t pos, start;
	uint32_t word, raw_blocks = 0;
	struct qs_file *f;
	struct qs_inode in;

	assert_int_equal(qs_lookup_path(img, "/big", &in), 0);
	assert_int_equal(qs_file_open(img, &in, &f), 0);
	all = calloc(in.u.file.block_count + 1, sizeof(*all));
	assert_int_equal(qs_file_block_words(f, 0, all, in.u.file.block_count), 0);
	for (uint32_t first = 0; first < in.u.file.block_count; first += 211) {
		size_t n = in.u.file.block_count - first < 300 ? in.u.file.block_count - first : 300;

		assert_int_equal(qs_file_block_words(f, first, piece, n), 0);
		assert_memory_equal(piece, all + first, n * sizeof(*piece));
	}
	assert_int_equal(qs_file_block_words(f, in.u.file.block_count, piece, 1), -EINVAL);
	pos = in.u.file.blocks_start;
	for (uint32_t i = 0; i < in.u.file.block_count; i++) {
		uint32_t len = all[i] & 0xffffff;

		assert_true(len > 0 && len <= block_size);
		if (all[i] & QS_BLOCK_UNCOMPRESSED) {
			assert_int_equal(qs_source_pread(qs_image_source(img), raw, len, pos), 0);
			assert_memory_equal(raw, big + (size_t)i * block_size, len);
			raw_blocks++;
		}
		pos += len;
	}
	assert_true(some_raw ? raw_blocks > 0 : true);
	assert_true(raw_blocks < in.u.file.block_count);
	assert_true(pos <= info->inode_table_start);
	if (in.u.file.fragment != QS_NO_FRAGMENT) {
		assert_int_equal(qs_fragment_get(img, in.u.file.fragment, &start, &word), 0);
		assert_true(start >= pos && start < info->inode_table_start);
		assert_true((word & 0xffffff) > 0 && (word & 0xffffff) <= block_size);
		assert_true(qs_fragment_get(img, info->fragment_count, &start, &word) < 0);
	}
	qs_file_close(f);

	assert_int_equal(qs_lookup_path(img, "/sparse", &in), 0);
	assert_int_equal(qs_file_open(img, &in, &f), 0);
	assert_int_equal(qs_file_block_words(f, 0, all, 2), 0);
	assert_int_equal(all[0] | all[1], 0);                              /* holes */
	qs_file_close(f);
	free(all);
	free(raw);
	qs_image_close(img);
}

static void test_stored_blocks(void **state)
{
	(void)state;
	check_stored_blocks(image, 4096, true);         /* 4K blocks wholly in the random 5000-byte runs */
	check_stored_blocks(image_nofrag, 128 << 10, false);
}

/* Open a copy of the image with 'len' bytes at 'off' replaced; return the error. */
static int open_patched(size_t off, const void *bytes, size_t len, uint64_t truncate_to)
{
	char path[4200], cmd[8500];
	struct qs_source *s;
	struct qs_image *img;
	struct qs_image_options opt = { .offset_given = true };
	int fd, err;

	snprintf(path, sizeof(path), "%s/patched.sqfs", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", image, path);
	assert_int_equal(system(cmd), 0);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	if (len)
		assert_int_equal(pwrite(fd, bytes, len, (off_t)off), (ssize_t)len);
	if (truncate_to)
		assert_int_equal(ftruncate(fd, (off_t)truncate_to), 0);
	close(fd);
	assert_int_equal(qs_source_open(path, NULL, &s), 0);
	err = qs_image_open(s, &opt, &img);
	if (!err)
		qs_image_close(img);
	else
		assert_true(strlen(qs_last_error()) > 0);
	return err;
}

static void test_bad_superblocks(void **state)
{
	uint8_t b[8];

	(void)state;
	assert_int_equal(open_patched(0, "hsqX", 4, 0), -EINVAL);
	sqfs_put16(b, 3);
	assert_int_equal(open_patched(28, b, 2, 0), -EINVAL);              /* version 3 */
	sqfs_put16(b, 11);
	assert_int_equal(open_patched(22, b, 2, 0), -EINVAL);              /* block_log != block_size */
	sqfs_put64(b, 1ull << 40);
	assert_int_equal(open_patched(40, b, 8, 0), -EINVAL);              /* bytes_used past the end */
	assert_int_equal(open_patched(0, NULL, 0, 4096), -EINVAL);         /* truncated */
	assert_int_equal(open_patched(0, NULL, 0, 50), -EINVAL);           /* shorter than a superblock */
	sqfs_put16(b, 9);
	assert_int_equal(open_patched(20, b, 2, 0), -EINVAL);              /* unknown compressor */
	sqfs_put64(b, 0);
	assert_true(open_patched(48, b, 8, 0) < 0);                        /* id table at 0 */
	assert_int_equal(open_patched(0, NULL, 0, 0), 0);                  /* the unpatched copy opens */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_every_entry),
		cmocka_unit_test(test_big_directory_has_index),
		cmocka_unit_test(test_reads_with_fragments),
		cmocka_unit_test(test_reads_without_fragments),
		cmocka_unit_test(test_stored_blocks),
		cmocka_unit_test(test_bad_superblocks),
	};

	return cmocka_run_group_tests(tests, make_tree, remove_tree);
}
