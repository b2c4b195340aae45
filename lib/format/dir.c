/*
 * dir.c - walking a directory listing in the directory table.
 *
 * A listing is a run of headers, each followed by up to 256 entries whose
 * inodes share one inode-table block; an entry stores the inode's offset in
 * that block, its number relative to the header's and its name.  The
 * inode's size field counts three bytes more than the listing holds (for
 * "." and ".." that are not stored).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* Size of the listing itself: what the inode's size counts beyond the phantom "." and "..". */
static uint64_t listing_size(const struct qs_inode *dir)
{
	return dir->size > 3 ? dir->size - 3 : 0;
}

int qs_dir_open(struct qs_image *img, const struct qs_inode *dir, struct qs_dir_iter *it)
{
	uint64_t table_len = img->sb.bytes_used - img->sb.directory_table_start;

	if (dir->type != QS_DIR)
		return qs_set_error(-ENOTDIR, "not a directory");
	if (dir->u.dir.start_block >= table_len || dir->u.dir.offset >= SQFS_META_SIZE)
		return qs_set_error(-EIO, "inode %u: listing lies outside the directory table", dir->ino);
	memset(it, 0, sizeof(*it));
	it->img = img;
	it->block = img->sb.directory_table_start + dir->u.dir.start_block;
	it->offset = dir->u.dir.offset;
	it->remaining = listing_size(dir);
	return 0;
}

static int read_header(struct qs_dir_iter *it, struct qs_meta_cursor *c, const struct qs_block *held)
{
	uint8_t raw[SQFS_DIR_HEADER_SIZE];
	struct sqfs_dir_header h;
	int err;

	if (it->remaining < SQFS_DIR_HEADER_SIZE)
		return qs_set_error(-EIO, "directory listing ends inside a header");
	err = qs_meta_read_held(c, held, raw, sizeof(raw));
	if (err)
		return err;
	sqfs_dir_header_decode(&h, raw);
	it->remaining -= SQFS_DIR_HEADER_SIZE;
	if (h.count >= SQFS_DIR_HEADER_MAX)
		return qs_set_error(-EIO, "directory header claims %u entries", h.count + 1);
	if (h.start_block >= it->img->sb.directory_table_start - it->img->sb.inode_table_start)
		return qs_set_error(-EIO, "directory header points outside the inode table");
	it->header_left = h.count + 1;
	it->header_start = h.start_block;
	it->header_ino = h.inode_number;
	return 0;
}

static int valid_name(const char *name, size_t len)
{
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return 0;
	return !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

static int dir_next(struct qs_dir_iter *it, struct qs_dirent *ent, const struct qs_block *held)
{
	struct qs_meta_cursor c;
	uint8_t raw[SQFS_DIR_ENTRY_SIZE];
	struct sqfs_dir_entry e;
	size_t len;
	int64_t ino;
	int err;

	qs_meta_cursor_init(&c, it->img, it->block, it->offset);
	if (it->header_left == 0) {
		err = read_header(it, &c, held);
		if (err)
			return err;
	}
	if (it->remaining < SQFS_DIR_ENTRY_SIZE)
		return qs_set_error(-EIO, "directory listing ends inside an entry");
	err = qs_meta_read_held(&c, held, raw, sizeof(raw));
	if (err)
		return err;
	sqfs_dir_entry_decode(&e, raw);
	len = (size_t)e.size + 1;
	if (len > SQFS_NAME_MAX || it->remaining - SQFS_DIR_ENTRY_SIZE < len)
		return qs_set_error(-EIO, "directory entry has a bad name length %zu", len);
	err = qs_meta_read_held(&c, held, ent->name, len);
	if (err)
		return err;
	ent->name[len] = '\0';
	ent->name_len = len;
	if (!valid_name(ent->name, len))
		return qs_set_error(-EIO, "directory entry has an invalid name");
	if (e.type < SQFS_INODE_DIR || e.type > SQFS_INODE_SOCKET)
		return qs_set_error(-EIO, "directory entry \"%s\" has a bad type %u", ent->name, e.type);
	if (e.offset >= SQFS_META_SIZE)
		return qs_set_error(-EIO, "directory entry \"%s\" has a bad inode offset", ent->name);
	ino = (int64_t)it->header_ino + e.inode_offset;
	if (ino <= 0 || ino > it->img->sb.inode_count)
		return qs_set_error(-EIO, "directory entry \"%s\" has a bad inode number", ent->name);
	ent->ino = (uint32_t)ino;
	ent->type = (enum qs_type)e.type;
	ent->ref = sqfs_make_ref(it->header_start, e.offset);

	it->remaining -= SQFS_DIR_ENTRY_SIZE + len;
	it->header_left--;
	it->block = c.block;
	it->offset = c.offset;
	it->position++;
	return 1;
}

int qs_dir_next(struct qs_dir_iter *it, struct qs_dirent *ent)
{
	struct qs_block *held;
	int r;

	/* Writers pad nothing, but the kernel tolerates a short tail; so do we. */
	if (it->header_left == 0 && it->remaining < SQFS_DIR_HEADER_SIZE)
		return 0;
	/* Hold the current block for the header, entry and name (qs_meta_read_held). */
	if (qs_metadata_block(it->img, it->block, &held))
		held = NULL;    /* dir_next's own reads report the error, if it matters */
	r = dir_next(it, ent, held);
	qs_block_release(it->img, held);
	return r;
}
