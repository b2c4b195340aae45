/*
 * image.h - the metadata half of the image: inode and directory tables
 * and the lookup tables (ids, xattrs, export), built after all data is
 * written, then the superblock.
 */
#ifndef QUASH_PACK_IMAGE_H
#define QUASH_PACK_IMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/compressor.h"
#include "meta.h"
#include "format/squashfs_fs.h"
#include "tree/tree.h"
#include "tree/spill.h"

struct pack_sink;

struct id_table {
	uint32_t *ids;
	uint32_t count, cap;
};

struct xattr_table {
	struct meta_writer kv;      /* key/value pairs */
	uint8_t *ids;               /* 16-byte id entries */
	uint32_t count, cap;
	uint64_t *hashes;           /* per id: of its set, to share identical sets */
	struct pack_inode **owners; /* per id: an inode carrying that set */
	uint32_t *next;             /* per id: the next id in its hash chain, + 1 */
	uint32_t *buckets;          /* first id + 1 per hash bucket; 0 = empty */
	uint32_t bucket_count;      /* a power of two, at least twice count */
};

struct image_writer {
	const struct pack_tree *tree;   /* what is written (its owners' ids) */
	const struct qs_compressor *comp;
	const struct qs_compress_params *params;
	uint16_t uncompressed;      /* SQFS_FLAG_UNCOMPRESSED_* bits: the tables stored as they are */
	struct meta_writer inodes, dirs;
	struct meta_spill spill;    /* where the tables go past their memory budget */
	struct id_table ids;
	struct xattr_table xattrs;
	uint64_t *export;           /* inode number - 1 -> inode reference */
	uint32_t inode_count;
	uint64_t root_ref;
	uint32_t root_ino;
	unsigned jobs;              /* threads for compressing the tables */
};

/*
 * The compressor for the tables that superblock flag 'flag' covers, or
 * NULL where they are stored uncompressed (mksquashfs -noI, -noX, -noId).
 */
static inline const struct qs_compressor *image_comp(const struct image_writer *iw, uint16_t flag)
{
	return iw->uncompressed & flag ? NULL : iw->comp;
}

/*
 * A written inode's reference (provisional until the tables are compressed).
 * Under --memory a directory's is read with spill_peek(): a listing meets
 * its subdirectories' numbers a subtree apart, and a read fault through
 * the mapping maps 16 pages around the one it needs (the root's 5,000
 * mapped all 40 MB of a 5,000,000-inode export table at once).
 */
static inline uint64_t image_ref(const struct image_writer *iw, const struct pack_inode *inode)
{
	uint64_t ref;

	if (tree_is_dir(inode) && iw->tree && iw->tree->spill && iw->tree->spill->region_count) {
		spill_peek(iw->tree->spill, &iw->export[inode->ino - 1], &ref, sizeof(ref));
		return ref;
	}
	return iw->export[inode->ino - 1];
}

/* The basic squashfs inode type for an inode's file type (what directory entries store). */
static inline int image_basic_type(const struct pack_inode *inode)
{
	switch (inode->mode & 0170000) {
	case 0040000: return SQFS_INODE_DIR;
	case 0100000: return SQFS_INODE_FILE;
	case 0120000: return SQFS_INODE_SYMLINK;
	case 0060000: return SQFS_INODE_BLKDEV;
	case 0020000: return SQFS_INODE_CHRDEV;
	case 0010000: return SQFS_INODE_FIFO;
	default: return SQFS_INODE_SOCKET;
	}
}

/*
 * budget: bytes of the tables' streams kept in memory (0: all), the rest
 * spilled to a file in spill_dir; uncompressed: SQFS_FLAG_UNCOMPRESSED_*
 * bits, the tables they cover stored uncompressed.
 */
void image_init(struct image_writer *iw, const struct qs_compressor *comp, const struct qs_compress_params *p,
		uint16_t uncompressed, unsigned jobs, uint64_t budget, const char *spill_dir);
void image_free(struct image_writer *iw);

/*
 * inode.c: number every inode, then write inodes and directories bottom-up
 * into the tables' streams (after which the tree is no longer needed), then
 * compress them with the xattr pairs; then iw->export, root_ref and the
 * xattr ids hold final references.
 */
int inode_number_tree(struct image_writer *iw, struct pack_tree *t);
int inode_write_tree(struct image_writer *iw, struct pack_tree *t);
int inode_compress_tables(struct image_writer *iw);

/* dir.c: a directory's listing into the directory table; its children are written. */
int dir_write_listing(struct image_writer *iw, struct pack_inode *dir);

/* id.c */
int id_index(struct id_table *t, uint32_t id, uint16_t *index);
int id_table_write(struct image_writer *iw, struct pack_sink *sink, uint64_t *start);

/* xattr.c: an xattr id for the inode's set (identical sets share one). */
int xattr_assign(struct image_writer *iw, struct pack_inode *inode);
/* After the pairs are compressed: the ids' provisional references made final. */
void xattr_resolve_refs(struct image_writer *iw);
int xattr_table_write(struct image_writer *iw, struct pack_sink *sink, uint64_t *start);

/* export.c */
int export_table_write(struct image_writer *iw, struct pack_sink *sink, uint64_t *start);

#endif
