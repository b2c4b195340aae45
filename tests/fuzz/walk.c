/*
 * walk.c - visit everything in an image through the public API, as a
 * hostile image would be visited by the mount and the offline tools.
 *
 * The walk itself must end on any input, so that a hang means the library
 * hangs: directories are entered once each (by inode number), and every
 * call costs from a fixed budget of operations and bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "walk.h"

#define WALK_OPS_MAX        20000u           /* library calls per image */
#define WALK_BYTES_MAX      (4u << 20)       /* file bytes read per image: seeds hold less */
#define WALK_DEPTH_MAX      64u
#define WALK_DIRS_MAX       4096u            /* distinct directories entered */
#define WALK_INODES_MAX     4096u            /* qs_inode_by_number calls */
#define WALK_PREAD_CHUNK    (192u << 10)     /* odd size: reads straddle blocks */
#define WALK_LOOKUPS_ALL    32u              /* names looked up in every directory; then one in 32 */
#define WALK_END_BLOCKS     8u               /* blocks read one by one at each end of a file */
#define WALK_CACHE_BYTES    (8u << 20)

struct walk {
	struct qs_image *img;
	unsigned long ops;
	uint64_t bytes;
	uint32_t dirs[WALK_DIRS_MAX];       /* inode numbers of directories entered */
	unsigned dir_count;
	uint8_t *buf;                       /* WALK_PREAD_CHUNK bytes */
	char target[QS_SYMLINK_MAX + 1];
};

/* ---- a byte source over memory ---- */

struct memory {
	const uint8_t *data;
};

static int memory_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct memory *m = src->priv;

	if (off > src->size || len > src->size - off)
		return qs_set_error(-EIO, "read of %zu bytes at %llu is past the end", len,
				    (unsigned long long)off);
	memcpy(buf, m->data + off, len);
	return 0;
}

static void memory_close(struct qs_source *src)
{
	free(src->priv);
}

static const struct qs_source_ops memory_ops = {
	.pread = memory_pread,
	.close = memory_close,
};

struct qs_source *walk_memory_source(const uint8_t *data, size_t size, const char *name)
{
	struct memory *m = malloc(sizeof(*m));
	struct qs_source *src;

	if (!m)
		return NULL;
	m->data = data;
	src = qs_source_alloc(&memory_ops, name, name, size, m);
	if (!src)
		free(m);
	return src;
}

/* ---- the walk ---- */

static int spend(struct walk *w)
{
	return ++w->ops <= WALK_OPS_MAX;
}

static int enter_dir_once(struct walk *w, uint32_t ino)
{
	for (unsigned i = 0; i < w->dir_count; i++)
		if (w->dirs[i] == ino)
			return 0;
	if (w->dir_count == WALK_DIRS_MAX)
		return 0;
	w->dirs[w->dir_count++] = ino;
	return 1;
}

static void walk_xattrs(struct walk *w, const struct qs_inode *in)
{
	struct qs_xattr *xs;
	size_t count;

	if (!spend(w))
		return;
	if (qs_xattr_list(w->img, in, &xs, &count) == 0)
		qs_xattr_free(xs, count);
}

static void walk_file(struct walk *w, const struct qs_inode *in)
{
	struct qs_file *f;
	uint64_t off = 0, blocks;
	uint32_t bs = qs_image_info(w->img)->block_size;

	if (!spend(w) || qs_file_open(w->img, in, &f) != 0)
		return;
	/* Whole file through pread, until it ends, fails or the budget runs out. */
	while (off < in->size && w->bytes < WALK_BYTES_MAX && spend(w)) {
		ssize_t n = qs_file_pread(f, w->buf, WALK_PREAD_CHUNK, off);

		if (n <= 0)
			break;
		off += (uint64_t)n;
		w->bytes += (uint64_t)n;
	}
	/* Block by block, the way the mount reads: both ends of the file. */
	blocks = (in->size + bs - 1) / bs;
	for (uint64_t i = 0; i < blocks && i < 2 * WALK_END_BLOCKS && spend(w); i++) {
		bool tail = blocks > 2 * WALK_END_BLOCKS && i >= WALK_END_BLOCKS;
		uint64_t n = tail ? blocks - 2 * WALK_END_BLOCKS + i : i;
		struct qs_block *b;
		const void *data;
		size_t size;

		qs_file_block_is_sparse(f, n);
		if (qs_file_block(f, n, &b, &data, &size) == 0) {
			volatile uint8_t sink = size ? ((const uint8_t *)data)[size - 1] : 0;

			(void)sink;
			qs_block_release(w->img, b);
		}
	}
	/* Past the end must fail or return nothing, never read out of bounds. */
	qs_file_pread(f, w->buf, 16, in->size);
	qs_file_block(f, blocks + 1, &(struct qs_block *){ NULL }, &(const void *){ NULL }, &(size_t){ 0 });
	qs_file_close(f);
}

static void walk_inode(struct walk *w, const struct qs_inode *in, unsigned depth);

static void walk_dir(struct walk *w, const struct qs_inode *dir, unsigned depth)
{
	struct qs_dir_iter it;
	struct qs_dirent ent;

	if (depth > WALK_DEPTH_MAX || !enter_dir_once(w, dir->ino) || !spend(w))
		return;
	if (qs_dir_open(w->img, dir, &it) != 0)
		return;
	while (spend(w) && qs_dir_next(&it, &ent) > 0) {
		struct qs_inode child, found;

		if (ent.name_len != strlen(ent.name))
			abort();        /* the contract: no NUL inside a name */
		/* Each lookup scans up to a metadata block of entries: sample large directories. */
		if ((it.position <= WALK_LOOKUPS_ALL || it.position % WALK_LOOKUPS_ALL == 0) && spend(w))
			qs_lookup(w->img, dir, ent.name, ent.name_len, &found);
		if (spend(w) && qs_inode_read(w->img, ent.ref, &child) == 0)
			walk_inode(w, &child, depth + 1);
	}
}

static void walk_inode(struct walk *w, const struct qs_inode *in, unsigned depth)
{
	qs_inode_blocks512(in);
	walk_xattrs(w, in);
	switch (in->type) {
	case QS_DIR:
		walk_dir(w, in, depth);
		break;
	case QS_FILE:
		walk_file(w, in);
		break;
	case QS_SYMLINK:
		if (spend(w) && qs_readlink(w->img, in, w->target, sizeof(w->target)) >= 0 &&
		    strlen(w->target) != in->size)
			abort();
		break;
	default:
		break;
	}
}

unsigned long walk_open_image(struct qs_image *img)
{
	struct walk *w = calloc(1, sizeof(*w));
	const struct qs_info *info = qs_image_info(img);
	struct qs_inode in;
	unsigned long ops;

	if (!w)
		return 0;
	w->img = img;
	w->buf = malloc(WALK_PREAD_CHUNK);
	if (w->buf && qs_inode_root(img, &in) == 0) {
		walk_inode(w, &in, 0);
		qs_lookup_path(img, "/a/b/../c", &in);
	}
	/* Every inode by number, and a few that cannot exist. */
	for (uint32_t ino = 0; w->buf && ino <= info->inode_count && ino < WALK_INODES_MAX && spend(w); ino++)
		if (qs_inode_by_number(img, ino, &in) == 0 && in.type != QS_DIR)
			walk_xattrs(w, &in);
	qs_inode_by_number(img, info->inode_count + 1, &in);
	qs_inode_by_number(img, UINT32_MAX, &in);
	ops = w->ops;
	free(w->buf);
	free(w);
	return ops;
}

unsigned long walk_image(const uint8_t *data, size_t size)
{
	struct qs_image_options opt = { .cache_bytes = WALK_CACHE_BYTES };
	struct qs_source *src = walk_memory_source(data, size, "fuzz");
	struct qs_image *img;
	unsigned long ops;

	if (!src || qs_image_open(src, &opt, &img) != 0)
		return 0;
	ops = walk_open_image(img);
	qs_image_close(img);
	return ops;
}
