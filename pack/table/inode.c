/*
 * inode.c - the inode table.
 *
 * Inodes are numbered and written in one fixed order: for each directory,
 * its subdirectories first (recursively), then its other entries in name
 * order, then the directory itself, whose listing needs every child's
 * inode reference and whose inode needs the listing's position.  The root
 * comes last.  Extended inodes are used only where a basic one cannot say
 * it: xattrs, hard-linked files, holes, 32-bit overflows, large
 * directories - as mksquashfs does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "tree/spill.h"
#include "sink/sink.h"
#include "format/squashfs_fs.h"
#include "base/util.h"

#define INODE_MAX_FIXED 64      /* largest fixed part of any inode, bytes */

void image_init(struct image_writer *iw, const struct qs_compressor *comp, const struct qs_compress_params *p,
		uint16_t uncompressed, unsigned jobs, uint64_t budget, const char *spill_dir)
{
	memset(iw, 0, sizeof(*iw));
	iw->comp = comp;
	iw->params = p;
	iw->uncompressed = uncompressed;
	iw->jobs = jobs;
	/* As mksquashfs: -noI covers the directory table too, -noX the pairs and their ids. */
	meta_init(&iw->inodes, image_comp(iw, SQFS_FLAG_UNCOMPRESSED_INODES), p);
	meta_init(&iw->dirs, image_comp(iw, SQFS_FLAG_UNCOMPRESSED_INODES), p);
	meta_init(&iw->xattrs.kv, image_comp(iw, SQFS_FLAG_UNCOMPRESSED_XATTRS), p);
	meta_spill_init(&iw->spill, spill_dir, budget);
	if (budget) {
		/* Three tables, on a spill of four: nothing to fail. */
		(void)meta_spill_attach(&iw->inodes, &iw->spill);
		(void)meta_spill_attach(&iw->dirs, &iw->spill);
		(void)meta_spill_attach(&iw->xattrs.kv, &iw->spill);
	}
}

void image_free(struct image_writer *iw)
{
	meta_free(&iw->inodes);
	meta_free(&iw->dirs);
	meta_free(&iw->xattrs.kv);
	meta_spill_close(&iw->spill);
	free(iw->xattrs.ids);
	free(iw->xattrs.hashes);
	free(iw->xattrs.owners);
	free(iw->xattrs.next);
	free(iw->xattrs.buckets);
	free(iw->ids.ids);
	spill_free(iw->tree ? iw->tree->spill : NULL, iw->export);
}

static void number(struct image_writer *iw, struct pack_inode *inode)
{
	if (inode->ino == 0)
		inode->ino = ++iw->inode_count;
	spill_tick(iw->tree->spill, inode);
}

static void number_dir(struct image_writer *iw, struct pack_inode *dir)
{
	for (size_t i = 0; i < dir->u.dir.count; i++) {
		struct pack_inode *child = tree_child_inode(dir->u.dir.children[i]);

		if (tree_is_dir(child))
			number_dir(iw, child);
	}
	for (size_t i = 0; i < dir->u.dir.count; i++)
		if (!tree_is_dir(tree_child_inode(dir->u.dir.children[i])))
			number(iw, tree_child_inode(dir->u.dir.children[i]));
	number(iw, dir);
	for (size_t i = 0; i < dir->u.dir.count; i++)
		if (tree_is_dir(tree_child_inode(dir->u.dir.children[i])))
			tree_child_inode(dir->u.dir.children[i])->u.dir.parent_ino = dir->ino;
}

int inode_number_tree(struct image_writer *iw, struct pack_tree *t)
{
	iw->inode_count = 0;
	number_dir(iw, t->root);
	t->root->u.dir.parent_ino = iw->inode_count + 1;   /* the kernel's convention for "above the root" */
	iw->export = spill_alloc(t->spill, (size_t)iw->inode_count * sizeof(*iw->export));
	return iw->export ? 0 : -ENOMEM;
}

/* The 16 bytes every inode starts with. */
static int put_header(struct image_writer *iw, struct pack_inode *inode, int type, uint8_t *p)
{
	uint16_t uid, gid;
	int err = id_index(&iw->ids, tree_uid(iw->tree, inode), &uid);

	if (!err)
		err = id_index(&iw->ids, tree_gid(iw->tree, inode), &gid);
	if (err)
		return err;
	sqfs_put16(p, (uint16_t)type);
	sqfs_put16(p + 2, (uint16_t)(inode->mode & 07777));
	sqfs_put16(p + 4, uid);
	sqfs_put16(p + 6, gid);
	sqfs_put32(p + 8, inode->mtime);
	sqfs_put32(p + 12, inode->ino);
	return 0;
}

static int write_file(struct image_writer *iw, struct pack_inode *inode, uint8_t *p)
{
	const struct pack_extra *blocks = inode->is_dup ? inode->u.file.dup_blocks : tree_blocks(inode);
	uint64_t start = blocks ? blocks->start : 0, sparse = blocks ? blocks->sparse : 0;
	uint64_t size = inode->u.file.size;
	bool has_xattr = tree_xattr_id(inode) != SQFS_INVALID_XATTR;
	uint32_t frag = size ? inode->u.file.fragment : SQFS_INVALID_FRAG;
	uint32_t frag_off = frag == SQFS_INVALID_FRAG ? 0 : inode->u.file.frag_offset;
	uint32_t count = size && blocks ? blocks->count : 0;
	size_t fixed;
	uint8_t list[4 * BLOCK_LIST_PAGE];
	int err;

	if (tree_nlink(inode) == 1 && start <= UINT32_MAX && size <= UINT32_MAX && !has_xattr &&
	    !sparse) {
		err = put_header(iw, inode, SQFS_INODE_FILE, p);
		sqfs_put32(p + 16, (uint32_t)start);
		sqfs_put32(p + 20, frag);
		sqfs_put32(p + 24, frag_off);
		sqfs_put32(p + 28, (uint32_t)size);
		fixed = 32;
	} else {
		err = put_header(iw, inode, SQFS_INODE_EXT_FILE, p);
		sqfs_put64(p + 16, start);
		sqfs_put64(p + 24, size);
		sqfs_put64(p + 32, sparse);
		sqfs_put32(p + 40, tree_nlink(inode));
		sqfs_put32(p + 44, frag);
		sqfs_put32(p + 48, frag_off);
		sqfs_put32(p + 52, tree_xattr_id(inode));
		fixed = 56;
	}
	if (err)
		return err;
	err = meta_write(&iw->inodes, p, fixed);
	if (err || count == 0)
		return err;
	/* Page by page: a page of holes is a run of zero words, written without memory. */
	for (uint32_t pg = 0; !err && pg <= (count - 1) / BLOCK_LIST_PAGE; pg++) {
		const uint32_t *page = blocks_page(blocks, pg);
		uint32_t first = pg * BLOCK_LIST_PAGE;
		uint32_t n = count - first < BLOCK_LIST_PAGE ? count - first : BLOCK_LIST_PAGE;

		if (!page) {
			err = meta_write_zeros(&iw->inodes, (uint64_t)n * 4);
			continue;
		}
		for (uint32_t i = 0; i < n; i++)
			sqfs_put32(list + 4 * i, page[i]);
		err = meta_write(&iw->inodes, list, (size_t)n * 4);
	}
	return err;
}

static int write_symlink(struct image_writer *iw, struct pack_inode *inode, uint8_t *p)
{
	const char *target = inode->u.symlink.target;
	uint32_t len = (uint32_t)strlen(target);
	bool ext = tree_xattr_id(inode) != SQFS_INVALID_XATTR;
	int err = put_header(iw, inode, ext ? SQFS_INODE_EXT_SYMLINK : SQFS_INODE_SYMLINK, p);

	sqfs_put32(p + 16, tree_nlink(inode));
	sqfs_put32(p + 20, len);
	if (!err)
		err = meta_write(&iw->inodes, p, 24);
	if (!err)
		err = meta_write(&iw->inodes, target, len);
	if (!err && ext) {
		sqfs_put32(p, tree_xattr_id(inode));
		err = meta_write(&iw->inodes, p, 4);
	}
	return err;
}

/* Devices, fifos and sockets: a link count, a device number for devices, an xattr id if extended. */
static int write_special(struct image_writer *iw, struct pack_inode *inode, uint8_t *p)
{
	int type = image_basic_type(inode);
	bool ext = tree_xattr_id(inode) != SQFS_INVALID_XATTR;
	bool dev = type == SQFS_INODE_BLKDEV || type == SQFS_INODE_CHRDEV;
	size_t len = 20;
	int err = put_header(iw, inode, ext ? type + SQFS_INODE_EXT_DELTA : type, p);

	sqfs_put32(p + 16, tree_nlink(inode));
	if (dev) {
		sqfs_put32(p + 20, inode->u.dev.rdev);
		len += 4;
	}
	if (ext) {
		sqfs_put32(p + len, tree_xattr_id(inode));
		len += 4;
	}
	return err ? err : meta_write(&iw->inodes, p, len);
}

static int write_dir_inode(struct image_writer *iw, struct pack_inode *dir, uint8_t *p)
{
	uint32_t size = dir->u.dir.listing_size + 3;
	bool has_xattr = tree_xattr_id(dir) != SQFS_INVALID_XATTR;
	int err;

	/* The listing's block start (offset 16 basic, 24 extended) is patched in once compressed. */
	if (size <= 0xffff && dir->u.dir.index_count == 0 && !has_xattr) {
		err = put_header(iw, dir, SQFS_INODE_DIR, p);
		sqfs_put32(p + 20, dir->u.dir.nlink);
		sqfs_put16(p + 24, (uint16_t)size);
		sqfs_put16(p + 26, dir->u.dir.offset);
		sqfs_put32(p + 28, dir->u.dir.parent_ino);
		if (!err)
			err = meta_write(&iw->inodes, p, 16);
		if (!err)
			err = meta_write_start(&iw->inodes, &iw->dirs, dir->u.dir.start_block);
		return err ? err : meta_write(&iw->inodes, p + 20, 12);
	}
	err = put_header(iw, dir, SQFS_INODE_EXT_DIR, p);
	sqfs_put32(p + 16, dir->u.dir.nlink);
	sqfs_put32(p + 20, size);
	sqfs_put32(p + 28, dir->u.dir.parent_ino);
	sqfs_put16(p + 32, (uint16_t)dir->u.dir.index_count);
	sqfs_put16(p + 34, dir->u.dir.offset);
	sqfs_put32(p + 36, tree_xattr_id(dir));
	if (!err)
		err = meta_write(&iw->inodes, p, 24);
	if (!err)
		err = meta_write_start(&iw->inodes, &iw->dirs, dir->u.dir.start_block);
	if (!err)
		err = meta_write(&iw->inodes, p + 28, 12);
	for (uint32_t i = 0; !err && i < dir->u.dir.index_count; i++) {
		const struct pack_dir_index *x = &dir->u.dir.index[i];

		/* Index entry: offset in the listing, that block's start, name length - 1, name. */
		sqfs_put32(p, x->index);
		sqfs_put32(p + 4, (uint32_t)(x->name_len - 1));
		err = meta_write(&iw->inodes, p, 4);
		if (!err)
			err = meta_write_start(&iw->inodes, &iw->dirs, x->start_block);
		if (!err)
			err = meta_write(&iw->inodes, p + 4, 4);
		if (!err)
			err = meta_write(&iw->inodes, x->name, x->name_len);
	}
	return err;
}

static int write_inode(struct image_writer *iw, struct pack_inode *inode)
{
	uint8_t p[INODE_MAX_FIXED];
	int err;

	if (inode->written)
		return 0;
	spill_tick(iw->tree->spill, inode);
	err = xattr_assign(iw, inode);
	if (err)
		return err;
	inode->written = true;
	iw->export[inode->ino - 1] = meta_ref(&iw->inodes);
	switch (image_basic_type(inode)) {
	case SQFS_INODE_DIR:
		return write_dir_inode(iw, inode, p);
	case SQFS_INODE_FILE:
		return write_file(iw, inode, p);
	case SQFS_INODE_SYMLINK:
		return write_symlink(iw, inode, p);
	default:
		return write_special(iw, inode, p);
	}
}

static int write_dir(struct image_writer *iw, struct pack_inode *dir)
{
	int err = 0;

	for (size_t i = 0; !err && i < dir->u.dir.count; i++)
		if (tree_is_dir(tree_child_inode(dir->u.dir.children[i])))
			err = write_dir(iw, tree_child_inode(dir->u.dir.children[i]));
	for (size_t i = 0; !err && i < dir->u.dir.count; i++)
		if (!tree_is_dir(tree_child_inode(dir->u.dir.children[i])))
			err = write_inode(iw, tree_child_inode(dir->u.dir.children[i]));
	if (!err)
		err = dir_write_listing(iw, dir);
	if (!err)
		err = write_inode(iw, dir);
	return err;
}

int inode_write_tree(struct image_writer *iw, struct pack_tree *t)
{
	iw->root_ino = t->root->ino;
	return write_dir(iw, t->root);
}

int inode_compress_tables(struct image_writer *iw)
{
	struct meta_writer *tables[] = { &iw->inodes, &iw->dirs, &iw->xattrs.kv };
	/* The xattr pairs point nowhere else; they share the threads. */
	int err = meta_compress(tables, sizeof(tables) / sizeof(tables[0]), iw->jobs);

	if (err)
		return err;
	for (uint32_t i = 0; i < iw->inode_count; i++) {
		iw->export[i] = meta_final_ref(&iw->inodes, iw->export[i]);
		spill_tick(iw->tree->spill, &iw->export[i]);
	}
	iw->root_ref = iw->export[iw->root_ino - 1];
	xattr_resolve_refs(iw);
	return 0;
}
