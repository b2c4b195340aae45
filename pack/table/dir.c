/*
 * dir.c - the directory table.
 *
 * A listing is a run of headers, each followed by up to 256 entries whose
 * inodes sit in one inode-table block and whose numbers are within a
 * signed 16-bit offset of the header's.  A header is also started when
 * the listing crosses into a new metadata block, and for a listing that
 * spans several blocks each such header gets an index entry in the
 * extended directory inode, so that the kernel's lookup can skip straight
 * to the right block (as mksquashfs does).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "format/squashfs_fs.h"

#define DIR_INO_DELTA_MAX 32767

/* How many entries from 'first' one header can cover, starting at stream position 'pos'. */
static size_t run_length(const struct image_writer *iw, struct pack_inode *dir, size_t first, uint64_t pos)
{
	const pack_child *c = dir->u.dir.children;
	uint64_t block = sqfs_ref_block(image_ref(iw, tree_child_inode(c[first])));
	int64_t base = tree_child_inode(c[first])->ino;
	uint64_t meta_block_no = pos / SQFS_META_SIZE;
	size_t n = 1;

	pos += SQFS_DIR_HEADER_SIZE + SQFS_DIR_ENTRY_SIZE + tree_child_name_len(c[first]);
	for (size_t i = first + 1; i < dir->u.dir.count && n < SQFS_DIR_HEADER_MAX; i++, n++) {
		int64_t delta = (int64_t)tree_child_inode(c[i])->ino - base;

		if (sqfs_ref_block(image_ref(iw, tree_child_inode(c[i]))) != block || delta > DIR_INO_DELTA_MAX ||
		    delta < -DIR_INO_DELTA_MAX - 1 || pos / SQFS_META_SIZE != meta_block_no)
			break;
		pos += SQFS_DIR_ENTRY_SIZE + tree_child_name_len(c[i]);
	}
	return n;
}

static int add_index(struct pack_inode *dir, uint32_t index, uint32_t start_block,
		     pack_child d)
{
	struct pack_dir_index *x;
	size_t n = dir->u.dir.index_count;

	/*
	 * One entry per metadata block the listing crosses: a few.  The array
	 * doubles (8, then each power of two the count reaches); sized for
	 * every entry of the directory, as it was, a million files in
	 * directories of a thousand cost 24 MiB at the pack's peak.
	 */
	if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
		void *p = realloc(dir->u.dir.index, (n ? 2 * n : 8) * sizeof(*dir->u.dir.index));

		if (!p)
			return -ENOMEM;
		dir->u.dir.index = p;
	}
	x = &dir->u.dir.index[n];
	x->index = index;
	x->start_block = start_block;
	x->name = tree_child_name(d);
	x->name_len = tree_child_name_len(d);
	dir->u.dir.index_count++;
	return 0;
}

int dir_write_listing(struct image_writer *iw, struct pack_inode *dir)
{
	struct meta_writer *w = &iw->dirs;
	uint64_t start = w->raw_len;
	uint64_t last_block_no = start / SQFS_META_SIZE;
	uint8_t buf[SQFS_DIR_HEADER_SIZE];
	int err = 0;

	dir->u.dir.start_block = meta_block(w);
	dir->u.dir.offset = meta_offset(w);
	for (size_t i = 0; !err && i < dir->u.dir.count;) {
		const pack_child *c = dir->u.dir.children;
		uint64_t pos = w->raw_len;
		size_t n = run_length(iw, dir, i, pos);
		uint32_t base = tree_child_inode(c[i])->ino;

		if (pos / SQFS_META_SIZE != last_block_no) {
			err = add_index(dir, (uint32_t)(pos - start), meta_block(w), c[i]);
			last_block_no = pos / SQFS_META_SIZE;
		}
		/* Header: count - 1, where the inodes' block starts, base inode number. */
		sqfs_put32(buf, (uint32_t)(n - 1));
		sqfs_put32(buf + 4, base);
		if (!err)
			err = meta_write(w, buf, 4);
		if (!err)
			err = meta_write_start(w, &iw->inodes, (uint32_t)sqfs_ref_block(image_ref(iw, tree_child_inode(c[i]))));
		if (!err)
			err = meta_write(w, buf + 4, 4);
		for (size_t k = i; !err && k < i + n; k++) {
			const struct pack_inode *inode = tree_child_inode(c[k]);

			sqfs_put16(buf, sqfs_ref_offset(image_ref(iw, inode)));
			sqfs_put16(buf + 2, (uint16_t)(int16_t)((int64_t)inode->ino - base));
			sqfs_put16(buf + 4, (uint16_t)image_basic_type(inode));
			sqfs_put16(buf + 6, (uint16_t)(tree_child_name_len(c[k]) - 1));
			err = meta_write(w, buf, SQFS_DIR_ENTRY_SIZE);
			if (!err)
				err = meta_write(w, tree_child_name(c[k]), tree_child_name_len(c[k]));
		}
		i += n;
	}
	if (w->raw_len - start > UINT32_MAX - 3)
		return -EFBIG;
	dir->u.dir.listing_size = (uint32_t)(w->raw_len - start);
	return err;
}
