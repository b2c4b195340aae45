/*
 * append.h - adding new sources to an existing image (mksquashfs without
 * -noappend, quash pack --append).
 */
#ifndef QUASH_PACK_APPEND_H
#define QUASH_PACK_APPEND_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/compressor.h"
#include "quash.h"
#include "format/squashfs_fs.h"
#include "tree/tree.h"

struct pack_sink;

struct append_base {
	struct qs_image *img;
	const char *name;           /* the image's path, for messages */
	uint64_t data_end;          /* the old inode table's start: [SQFS_SUPER_SIZE, data_end) is copied */
	uint16_t flags;             /* the old superblock's */
	uint32_t block_size;
	const struct qs_compressor *comp;
	struct qs_compress_params params;       /* what the old options block says */
	uint32_t fragment_count;
	struct sqfs_fragment_entry *fragments;  /* the old fragment table */
	uint64_t files, bytes;      /* the old regular files and their sizes, for the progress bar */
	bool notices;               /* say each renamed top-level name on stderr, as mksquashfs does */
};

/*
 * Open 'path' as the image to append to and check what can be checked
 * before anything is read from the sources.  0, or -errno after printing
 * one line naming the image (nothing is written).
 */
int append_open(const char *path, struct append_base *b);
void append_close(struct append_base *b);

/*
 * Put the old image's tree into 't', which holds the new sources: their
 * top-level names that the old root has are renamed NAME_1, NAME_2, ... as
 * mksquashfs renames them, and the old entries go in as stored inodes.
 * With 'root_becomes' (mksquashfs -root-becomes) the old root goes in
 * whole as that directory of the new root instead.
 * 0, or -errno after printing one line.
 */
int append_merge(struct append_base *b, struct pack_tree *t, const char *root_becomes);

/* Copy the old image's compressor options and data area, byte for byte, after the superblock. */
int append_copy_data(struct append_base *b, struct pack_sink *sink);

#endif
