/*
 * lib-read.c - the reader's hot paths as the FUSE mount drives them:
 * random 4 KiB reads of one large file (through qs_file_pread, and through
 * qs_file_block as the mount's read handler does), and lookups of random
 * names in a large directory.  For profiling (callgrind, perf); not a test.
 *
 *   lib-read IMAGE FILE DIR [READS [LOOKUPS]]
 *
 * FILE and DIR are paths inside the image.  Prints the time per operation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quash.h"

#define READ_SIZE 4096
#define NAMES_MAX 100000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what)
{
	fprintf(stderr, "lib-read: %s: %s\n", what, qs_last_error());
	return 1;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int main(int argc, char **argv)
{
	static char names[NAMES_MAX][257];
	static uint8_t buf[READ_SIZE];
	unsigned reads = argc > 4 ? (unsigned)atoi(argv[4]) : 100000;
	unsigned lookups = argc > 5 ? (unsigned)atoi(argv[5]) : 100000;
	struct qs_inode file, dir, in;
	struct qs_image *img;
	struct qs_source *src;
	struct qs_file *f;
	struct qs_dir_iter it;
	struct qs_dirent ent;
	unsigned count = 0;
	uint64_t seed = 88172645463325252ull, sum = 0;
	double t;

	if (argc < 4) {
		fprintf(stderr, "usage: lib-read IMAGE FILE DIR [READS [LOOKUPS]]\n");
		return 2;
	}
	if (qs_source_open_file(argv[1], &src) || qs_image_open(src, NULL, &img))
		return die(argv[1]);
	if (qs_lookup_path(img, argv[2], &file) || qs_file_open(img, &file, &f))
		return die(argv[2]);
	if (qs_lookup_path(img, argv[3], &dir) || qs_dir_open(img, &dir, &it))
		return die(argv[3]);
	while (count < NAMES_MAX && qs_dir_next(&it, &ent) > 0)
		memcpy(names[count++], ent.name, ent.name_len + 1);

	t = now();
	for (unsigned i = 0; i < reads; i++) {
		uint64_t off = rnd(&seed) % (file.size / READ_SIZE) * READ_SIZE;

		if (qs_file_pread(f, buf, READ_SIZE, off) != READ_SIZE)
			return die("pread");
		sum += buf[0];
	}
	printf("pread:  %u random 4 KiB reads, %.2f us each\n", reads, (now() - t) / reads * 1e6);

	t = now();
	for (unsigned i = 0; i < reads; i++) {
		uint64_t off = rnd(&seed) % (file.size / READ_SIZE) * READ_SIZE;
		uint32_t bs = qs_image_info(img)->block_size;
		struct qs_block *b;
		const void *data;
		size_t size;

		if (qs_file_block(f, off / bs, &b, &data, &size))
			return die("block");
		sum += ((const uint8_t *)data)[off % bs];
		qs_block_release(img, b);
	}
	printf("block:  %u random 4 KiB reads, %.2f us each\n", reads, (now() - t) / reads * 1e6);

	t = now();
	for (unsigned i = 0; i < lookups && count; i++) {
		const char *name = names[rnd(&seed) % count];

		if (qs_lookup(img, &dir, name, strlen(name), &in))
			return die(name);
		sum += in.ino;
	}
	printf("lookup: %u random names of %u, %.2f us each\n", lookups, count, (now() - t) / lookups * 1e6);

	qs_file_close(f);
	qs_image_close(img);
	return sum == 42;   /* keeps the reads from being optimised away */
}
