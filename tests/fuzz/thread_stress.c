/*
 * thread_stress.c - many threads on one open image, for ThreadSanitizer:
 * random ranges of random files (through qs_file_pread and qs_file_block,
 * on qs_file handles the threads share, every other block given back as
 * passed on whole, so that the cache drops it while others may hold or
 * load it), directory walks, lookups, xattrs
 * and inodes by number, all at once, with a block cache small enough that
 * blocks are evicted and reloaded all the time.  Every byte read is checked
 * against the tree the image was made from.
 *
 *   thread_stress IMAGE TREE [THREADS [OPS]]
 *
 * Exit 0 if everything matched, 1 on a library error, 2 on a mismatch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quash.h"

#define STRESS_FILES_MAX   4096
#define STRESS_DIRS_MAX    1024
#define STRESS_PATH_MAX    4096
#define STRESS_READ_MAX    (300u << 10)
#define STRESS_CACHE_BYTES (256u << 10)    /* a few blocks per shard: constant eviction */

struct file {
	struct qs_file *qf;
	int fd;                             /* the same file in the tree */
	char path[STRESS_PATH_MAX];
};

struct shared {
	struct qs_image *img;
	struct file files[STRESS_FILES_MAX];
	unsigned file_count;
	struct qs_inode dirs[STRESS_DIRS_MAX];
	unsigned dir_count;
	unsigned ops;
};

struct worker {
	pthread_t thread;
	struct shared *sh;
	unsigned seed;
	int result;
	uint8_t got[STRESS_READ_MAX], want[STRESS_READ_MAX];
};

static int fail(int code, const char *what, const char *path)
{
	fprintf(stderr, "thread_stress: %s: %s: %s\n", path, what, qs_last_error());
	return code;
}

/* Collect every regular file and directory, single-threaded, before the storm. */
static int collect(struct shared *sh, const struct qs_inode *dir, const char *tree, const char *rel)
{
	struct qs_dir_iter it;
	struct qs_dirent ent;
	int r;

	if (sh->dir_count < STRESS_DIRS_MAX)
		sh->dirs[sh->dir_count++] = *dir;
	if (qs_dir_open(sh->img, dir, &it))
		return fail(1, "open directory", rel);
	while ((r = qs_dir_next(&it, &ent)) > 0) {
		char path[STRESS_PATH_MAX];
		struct qs_inode in;

		snprintf(path, sizeof(path), "%s/%s", rel, ent.name);
		if (qs_inode_read(sh->img, ent.ref, &in))
			return fail(1, "read inode", path);
		if (in.type == QS_DIR && collect(sh, &in, tree, path))
			return 1;
		/* Empty files exercise nothing; the fixtures hold plenty of them. */
		if (in.type == QS_FILE && in.size > 0 && sh->file_count < STRESS_FILES_MAX) {
			struct file *f = &sh->files[sh->file_count];

			snprintf(f->path, sizeof(f->path), "%s%s", tree, path);
			f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
			if (f->fd < 0 || qs_file_open(sh->img, &in, &f->qf)) {
				fprintf(stderr, "thread_stress: %s: cannot open\n", f->path);
				return 1;
			}
			sh->file_count++;
		}
	}
	return r < 0 ? fail(1, "list directory", rel) : 0;
}

static int check_range(struct worker *w, struct file *f, uint64_t off, size_t len)
{
	const struct qs_inode *in = qs_file_inode(f->qf);
	ssize_t n = qs_file_pread(f->qf, w->got, len, off);
	ssize_t m = pread(f->fd, w->want, len, (off_t)off);

	if (n < 0)
		return fail(1, "pread", f->path);
	if (n != m || memcmp(w->got, w->want, (size_t)n)) {
		fprintf(stderr, "thread_stress: %s: MISMATCH at %llu+%zu (size %llu)\n", f->path,
			(unsigned long long)off, len, (unsigned long long)in->size);
		return 2;
	}
	return 0;
}

static int check_block(struct worker *w, struct file *f, uint64_t index)
{
	uint32_t bs = qs_image_info(w->sh->img)->block_size;
	struct qs_block *b;
	const void *data;
	size_t size;
	int err = qs_file_block(f->qf, index, &b, &data, &size);

	if (err)
		return fail(1, "block", f->path);
	if (pread(f->fd, w->want, size, (off_t)(index * bs)) != (ssize_t)size ||
	    memcmp(data, w->want, size)) {
		fprintf(stderr, "thread_stress: %s: MISMATCH in block %llu\n", f->path,
			(unsigned long long)index);
		err = 2;
	}
	if (index & 1)
		qs_block_release_passed(w->sh->img, b, data, size);
	else
		qs_block_release(w->sh->img, b);
	return err;
}

static int walk_dir(struct worker *w, const struct qs_inode *dir)
{
	struct qs_dir_iter it;
	struct qs_dirent ent;
	struct qs_inode in;
	int r;

	if (qs_dir_open(w->sh->img, dir, &it))
		return fail(1, "open directory", "(dir)");
	while ((r = qs_dir_next(&it, &ent)) > 0) {
		struct qs_xattr *xs;
		size_t count;

		/* Every tenth name: a lookup, which must find the inode the listing names. */
		if (rand_r(&w->seed) % 10 == 0) {
			if (qs_lookup(w->sh->img, dir, ent.name, ent.name_len, &in))
				return fail(1, "lookup", ent.name);
			if (in.ref != ent.ref)
				return fail(2, "lookup found another inode", ent.name);
			if (qs_xattr_list(w->sh->img, &in, &xs, &count))
				return fail(1, "xattrs", ent.name);
			qs_xattr_free(xs, count);
		}
	}
	return r < 0 ? fail(1, "list directory", "(dir)") : 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	uint32_t bs = qs_image_info(sh->img)->block_size;
	uint32_t inodes = qs_image_info(sh->img)->inode_count;

	for (unsigned i = 0; i < sh->ops && !w->result; i++) {
		struct file *f = &sh->files[rand_r(&w->seed) % sh->file_count];
		uint64_t size = qs_file_inode(f->qf)->size;
		unsigned what = rand_r(&w->seed) % 8;
		struct qs_inode in;

		if (what < 4) {
			uint64_t r = (uint64_t)rand_r(&w->seed) << 20 ^ (uint64_t)rand_r(&w->seed);
			uint64_t off = size ? r % size : 0;

			w->result = check_range(w, f, off, rand_r(&w->seed) % STRESS_READ_MAX);
		} else if (what < 6 && size) {
			w->result = check_block(w, f, (uint64_t)rand_r(&w->seed) % ((size + bs - 1) / bs));
		} else if (what == 6) {
			w->result = walk_dir(w, &sh->dirs[rand_r(&w->seed) % sh->dir_count]);
		} else {
			int err = qs_inode_by_number(sh->img, 1 + rand_r(&w->seed) % inodes, &in);

			if (err && err != -ENOTSUP)
				w->result = fail(1, "inode by number", "(export table)");
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct shared sh;
	struct qs_image_options opt = { .cache_bytes = STRESS_CACHE_BYTES };
	unsigned threads = argc > 3 ? (unsigned)atoi(argv[3]) : 8;
	struct worker *w;
	struct qs_source *src;
	struct qs_inode root;
	int result = 0;

	if (argc < 3 || threads == 0) {
		fprintf(stderr, "usage: thread_stress IMAGE TREE [THREADS [OPS]]\n");
		return 3;
	}
	sh.ops = argc > 4 ? (unsigned)atoi(argv[4]) : 2000;
	if (qs_source_open_file(argv[1], &src) || qs_image_open(src, &opt, &sh.img) ||
	    qs_inode_root(sh.img, &root))
		return fail(1, "open", argv[1]);
	if (collect(&sh, &root, argv[2], "") || sh.file_count == 0)
		return 1;
	w = calloc(threads, sizeof(*w));
	if (!w)
		return 3;
	for (unsigned i = 0; i < threads; i++) {
		w[i].sh = &sh;
		w[i].seed = 1000 + i;
		if (pthread_create(&w[i].thread, NULL, work, &w[i]))
			return 3;
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].result > result)
			result = w[i].result;
	}
	for (unsigned i = 0; i < sh.file_count; i++) {
		qs_file_close(sh.files[i].qf);
		close(sh.files[i].fd);
	}
	qs_image_close(sh.img);
	free(w);
	if (!result)
		printf("thread_stress: %u threads x %u operations on %u files: all bytes matched\n", threads,
		       sh.ops, sh.file_count);
	return result;
}
