/*
 * namei.c - looking names up in directories.
 *
 * Listings are sorted bytewise, so a scan can stop at the first name that
 * sorts after the one sought.  Large directories (extended inodes) carry an
 * index: one entry per metadata block of the listing, with the first name
 * in it, so a lookup can skip straight to the right block, as the kernel's
 * squashfs_lookup does.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	if (r)
		return r;
	return alen < blen ? -1 : alen > blen;
}

/* Move 'it' to the last index entry whose name is <= the one sought. */
static int skip_with_index(struct qs_image *img, const struct qs_inode *dir, const char *name, size_t len,
			   struct qs_dir_iter *it)
{
	struct qs_meta_cursor c;
	struct qs_block *held = NULL;
	uint64_t listing = it->remaining;
	int err = 0;

	qs_meta_cursor_init(&c, img, img->sb.inode_table_start + sqfs_ref_block(dir->u.dir.index),
			    sqfs_ref_offset(dir->u.dir.index));
	for (uint32_t i = 0; i < dir->u.dir.index_count; i++) {
		uint8_t raw[SQFS_DIR_INDEX_SIZE];
		char iname[SQFS_NAME_MAX + 1];
		struct sqfs_dir_index idx;
		size_t ilen;

		/* Hold the block the cursor is in (qs_meta_read_held); index entries are small. */
		if (!held || held->key_a != c.block) {
			qs_block_release(img, held);
			if (qs_metadata_block(img, c.block, &held))
				held = NULL;
		}
		err = qs_meta_read_held(&c, held, raw, sizeof(raw));
		if (err)
			break;
		sqfs_dir_index_decode(&idx, raw);
		ilen = (size_t)idx.size + 1;
		if (ilen > SQFS_NAME_MAX) {
			err = qs_set_error(-EIO, "directory index entry has a bad name length");
			break;
		}
		err = qs_meta_read_held(&c, held, iname, ilen);
		if (err || name_cmp(iname, ilen, name, len) > 0)
			break;
		if (idx.index > listing ||
		    idx.start_block >= img->sb.bytes_used - img->sb.directory_table_start) {
			err = qs_set_error(-EIO, "directory index entry points outside the listing");
			break;
		}
		it->block = img->sb.directory_table_start + idx.start_block;
		it->offset = (uint32_t)((idx.index + dir->u.dir.offset) % SQFS_META_SIZE);
		it->remaining = listing - idx.index;
		it->header_left = 0;
	}
	qs_block_release(img, held);
	return err;
}

int qs_lookup(struct qs_image *img, const struct qs_inode *dir, const char *name, size_t len,
	      struct qs_inode *out)
{
	struct qs_dir_iter it;
	struct qs_dirent ent;
	int err, r;

	err = qs_dir_open(img, dir, &it);
	if (err)
		return err;
	if (len == 0 || len > SQFS_NAME_MAX)
		return qs_set_error(len ? -ENAMETOOLONG : -ENOENT, "no such file or directory");
	if (dir->extended && dir->u.dir.index_count > 0) {
		err = skip_with_index(img, dir, name, len, &it);
		if (err)
			return err;
	}
	while ((r = qs_dir_next(&it, &ent)) > 0) {
		int cmp = name_cmp(ent.name, ent.name_len, name, len);

		if (cmp == 0) {
			err = qs_inode_read(img, ent.ref, out);
			if (err)
				return err;
			if (out->type != ent.type)
				return qs_set_error(-EIO, "directory entry \"%s\" disagrees with its inode's type",
						    ent.name);
			return 0;
		}
		if (cmp > 0)
			break;
	}
	if (r < 0)
		return r;
	return qs_set_error(-ENOENT, "no such file or directory");
}

int qs_lookup_path(struct qs_image *img, const char *path, struct qs_inode *out)
{
	size_t plen = strlen(path);
	bool slash_end = plen > 0 && path[plen - 1] == '/';
	struct qs_inode cur;
	int err = qs_inode_root(img, &cur);

	while (!err && *path) {
		const char *end;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		end = strchrnul(path, '/');
		if (end - path == 1 && path[0] == '.') {
			path = end;
			continue;
		}
		if (cur.type != QS_DIR)
			return qs_set_error(-ENOTDIR, "not a directory");
		err = qs_lookup(img, &cur, path, (size_t)(end - path), &cur);
		path = end;
	}
	/* "file/" names a directory, as in POSIX path resolution. */
	if (!err && slash_end && cur.type != QS_DIR)
		err = qs_set_error(-ENOTDIR, "not a directory");
	if (!err)
		*out = cur;
	return err;
}
