/*
 * inode.c - decoding the inode table.
 *
 * Every inode starts with the same 16-byte header (type, permissions, uid
 * and gid indexes, mtime, inode number); the rest depends on the type.
 * Extended types carry what the basic ones lack: an xattr id, 64-bit sizes,
 * a link count for files, a sparse byte count and a directory index.  The
 * on-disk mode holds permission bits only; the type bits come from the
 * inode type, as in the kernel.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define INODE_HEADER_SIZE 16

static const uint32_t type_mode[] = {
	[QS_DIR] = S_IFDIR, [QS_FILE] = S_IFREG, [QS_SYMLINK] = S_IFLNK, [QS_BLKDEV] = S_IFBLK,
	[QS_CHRDEV] = S_IFCHR, [QS_FIFO] = S_IFIFO, [QS_SOCKET] = S_IFSOCK,
};

static int read_dir(struct qs_meta_cursor *c, struct qs_inode *in)
{
	uint8_t b[24];
	int err;

	if (!in->extended) {
		err = qs_meta_read(c, b, 16);
		if (err)
			return err;
		in->u.dir.start_block = sqfs_le32(b + 0);
		in->nlink = sqfs_le32(b + 4);
		in->size = sqfs_le16(b + 8);
		in->u.dir.offset = sqfs_le16(b + 10);
		in->u.dir.parent_ino = sqfs_le32(b + 12);
		return 0;
	}
	err = qs_meta_read(c, b, 24);
	if (err)
		return err;
	in->nlink = sqfs_le32(b + 0);
	in->size = sqfs_le32(b + 4);
	in->u.dir.start_block = sqfs_le32(b + 8);
	in->u.dir.parent_ino = sqfs_le32(b + 12);
	in->u.dir.index_count = sqfs_le16(b + 16);
	in->u.dir.offset = sqfs_le16(b + 18);
	in->xattr = sqfs_le32(b + 20);
	in->u.dir.index = sqfs_make_ref(c->block - c->img->sb.inode_table_start, (uint16_t)c->offset);
	return 0;
}

static int read_file(struct qs_meta_cursor *c, struct qs_inode *in)
{
	struct qs_image *img = c->img;
	uint32_t block_size = img->sb.block_size;
	uint8_t b[40];
	uint64_t blocks;
	int err;

	if (!in->extended) {
		err = qs_meta_read(c, b, 16);
		if (err)
			return err;
		in->u.file.blocks_start = sqfs_le32(b + 0);
		in->u.file.fragment = sqfs_le32(b + 4);
		in->u.file.frag_offset = sqfs_le32(b + 8);
		in->size = sqfs_le32(b + 12);
		in->nlink = 1;
	} else {
		err = qs_meta_read(c, b, 40);
		if (err)
			return err;
		in->u.file.blocks_start = sqfs_le64(b + 0);
		in->size = sqfs_le64(b + 8);
		in->u.file.sparse = sqfs_le64(b + 16);
		in->nlink = sqfs_le32(b + 24);
		in->u.file.fragment = sqfs_le32(b + 28);
		in->u.file.frag_offset = sqfs_le32(b + 32);
		in->xattr = sqfs_le32(b + 36);
	}
	/*
	 * Whole blocks, plus the tail as a block of its own when no fragment
	 * holds it.  Never (size + block_size - 1) / block_size: a size near
	 * 2^64 wraps that to 0 blocks, and the file would read as empty.
	 */
	blocks = in->size / block_size;
	if (in->size % block_size && in->u.file.fragment == SQFS_INVALID_FRAG)
		blocks++;
	/* A block list cannot list more blocks than 32-bit entries fit in the image's metadata... */
	if (blocks > UINT32_MAX)
		return qs_set_error(-EIO, "inode %u: file size %llu is impossible", in->ino,
				    (unsigned long long)in->size);
	if (in->u.file.fragment != SQFS_INVALID_FRAG && in->size % block_size == 0)
		return qs_set_error(-EIO, "inode %u: fragment given for a file with no tail", in->ino);
	if (in->u.file.fragment != SQFS_INVALID_FRAG &&
	    (in->u.file.fragment >= img->sb.fragment_count || in->u.file.frag_offset >= block_size))
		return qs_set_error(-EIO, "inode %u: fragment %u (offset %u) is invalid", in->ino,
				    in->u.file.fragment, in->u.file.frag_offset);
	if (in->u.file.blocks_start > img->sb.bytes_used)
		return qs_set_error(-EIO, "inode %u: data starts outside the image", in->ino);
	in->u.file.block_count = (uint32_t)blocks;
	in->u.file.block_list = sqfs_make_ref(c->block - img->sb.inode_table_start, (uint16_t)c->offset);
	return 0;
}

static int read_symlink(struct qs_meta_cursor *c, struct qs_inode *in)
{
	uint8_t b[8];
	int err = qs_meta_read(c, b, 8);

	if (err)
		return err;
	in->nlink = sqfs_le32(b + 0);
	in->size = sqfs_le32(b + 4);
	if (in->size > QS_SYMLINK_MAX)
		return qs_set_error(-EIO, "inode %u: symlink target of %llu bytes is too long", in->ino,
				    (unsigned long long)in->size);
	in->u.symlink.target = sqfs_make_ref(c->block - c->img->sb.inode_table_start, (uint16_t)c->offset);
	if (in->extended) {
		err = qs_meta_skip(c, (size_t)in->size);
		if (!err)
			err = qs_meta_read(c, b, 4);
		if (err)
			return err;
		in->xattr = sqfs_le32(b);
	}
	return 0;
}

static int read_device(struct qs_meta_cursor *c, struct qs_inode *in)
{
	uint8_t b[12];
	int err = qs_meta_read(c, b, in->extended ? 12 : 8);

	if (err)
		return err;
	in->nlink = sqfs_le32(b + 0);
	in->rdev = sqfs_le32(b + 4);
	if (in->extended)
		in->xattr = sqfs_le32(b + 8);
	return 0;
}

static int read_ipc(struct qs_meta_cursor *c, struct qs_inode *in)
{
	uint8_t b[8];
	int err = qs_meta_read(c, b, in->extended ? 8 : 4);

	if (err)
		return err;
	in->nlink = sqfs_le32(b + 0);
	if (in->extended)
		in->xattr = sqfs_le32(b + 4);
	return 0;
}

int qs_inode_read(struct qs_image *img, qs_ref ref, struct qs_inode *out)
{
	uint64_t block = sqfs_ref_block(ref);
	uint16_t offset = sqfs_ref_offset(ref);
	uint8_t h[INODE_HEADER_SIZE];
	struct qs_meta_cursor c;
	struct qs_inode in;
	uint16_t type;
	int err;

	if (block >= img->sb.directory_table_start - img->sb.inode_table_start || offset >= SQFS_META_SIZE)
		return qs_set_error(-EIO, "inode reference 0x%llx lies outside the inode table",
				    (unsigned long long)ref);
	qs_meta_cursor_init(&c, img, img->sb.inode_table_start + block, offset);
	err = qs_meta_read(&c, h, sizeof(h));
	if (err)
		return err;

	memset(&in, 0, sizeof(in));
	in.ref = ref;
	type = sqfs_le16(h + 0);
	in.mtime = sqfs_le32(h + 8);
	in.ino = sqfs_le32(h + 12);
	in.xattr = QS_NO_XATTR;
	in.u.file.fragment = QS_NO_FRAGMENT;
	if (type < SQFS_INODE_DIR || type > SQFS_INODE_EXT_SOCKET)
		return qs_set_error(-EIO, "inode at 0x%llx has an unknown type %u", (unsigned long long)ref, type);
	in.extended = type > SQFS_INODE_SOCKET;
	in.type = (enum qs_type)(in.extended ? type - SQFS_INODE_EXT_DELTA : type);
	in.mode = (sqfs_le16(h + 2) & 07777) | type_mode[in.type];
	if (in.ino == 0 || in.ino > img->sb.inode_count)
		return qs_set_error(-EIO, "inode at 0x%llx has an impossible number %u", (unsigned long long)ref,
				    in.ino);
	err = qs_id_lookup(img, sqfs_le16(h + 4), &in.uid);
	if (!err)
		err = qs_id_lookup(img, sqfs_le16(h + 6), &in.gid);
	if (err)
		return err;

	switch (in.type) {
	case QS_DIR:
		err = read_dir(&c, &in);
		break;
	case QS_FILE:
		err = read_file(&c, &in);
		break;
	case QS_SYMLINK:
		err = read_symlink(&c, &in);
		break;
	case QS_BLKDEV:
	case QS_CHRDEV:
		err = read_device(&c, &in);
		break;
	case QS_FIFO:
	case QS_SOCKET:
		err = read_ipc(&c, &in);
		break;
	}
	if (err)
		return err;
	if (in.xattr != QS_NO_XATTR) {
		struct sqfs_xattr_id id;

		/* st_blocks counts the xattrs too, as the kernel does; their size is in the id table. */
		err = qs_xattr_id_lookup(img, in.xattr, &id);
		if (err)
			return err;
		in.xattr_size = id.size;
	}
	*out = in;
	return 0;
}

int qs_inode_root(struct qs_image *img, struct qs_inode *out)
{
	return qs_inode_read(img, img->sb.root_inode_ref, out);
}

uint64_t qs_inode_blocks512(const struct qs_inode *inode)
{
	uint64_t blocks = 0;

	/*
	 * As fs/squashfs/inode.c: a regular file's data less what sparse
	 * blocks saved, plus for any inode with xattrs the size of their
	 * key/value pairs, each rounded up to 512-byte units.
	 */
	if (inode->type == QS_FILE && inode->size > inode->u.file.sparse)
		blocks = ((inode->size - inode->u.file.sparse - 1) >> 9) + 1;
	if (inode->xattr != QS_NO_XATTR)
		blocks += ((uint64_t)inode->xattr_size + 511) >> 9;
	return blocks;
}
