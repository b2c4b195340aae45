/*
 * internal.h - the open image and the helpers its parts share.  Not part of
 * the public contract (that is quash.h).
 */
#ifndef QUASH_INTERNAL_H
#define QUASH_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "compressor.h"
#include "quash.h"
#include "squashfs_fs.h"

/* Bounds on tables, so that a hostile superblock cannot make us allocate much. */
#define QS_ID_COUNT_MAX        65536u        /* the on-disk count is 16 bits */
#define QS_TABLE_INDEX_MAX     (1u << 20)    /* metadata blocks listed by one table index */

struct qs_image {
	struct qs_source *src;
	struct sqfs_super sb;
	struct qs_info info;
	const struct qs_compressor *comp;
	struct qs_comp_options comp_opts;
	struct qs_cache *cache;
	bool own_cache;                 /* false: shared, not destroyed with the image */
	uint64_t cache_tag;             /* in every cache key's high bits: unique per open image */

	uint32_t *ids;                  /* id table, id_count entries */

	uint64_t *fragment_index;       /* metadata block of each 512 fragment entries */
	uint32_t fragment_index_count;

	uint64_t *export_index;         /* metadata block of each 1024 inode references */
	uint32_t export_index_count;

	struct sqfs_xattr_id_table xattr_table;
	uint64_t *xattr_index;          /* metadata block of each 512 xattr ids */
	uint32_t xattr_index_count;

	pthread_t warmer;               /* warm.c: a profile's blocks decompressed ahead */
	bool warming;
	bool warm_stop;                 /* atomic: the warm thread ends */
	uint64_t warmed;                /* atomic: blocks it loaded before any read asked */

};

/* The process's one block of zeros (SQFS_BLOCK_SIZE_MAX bytes), for sparse blocks; not in any cache. */
struct qs_block *qs_zero_block(void);

/* ---- warm.c: a profile's blocks decompressed before they are read ---- */

/* Start the warm thread if the source replays a profile and the codec's blocks say where they end. */
void qs_warm_start(struct qs_image *img);
/* Stop and join it (before the source closes). */
void qs_warm_stop(struct qs_image *img);

/* ---- block.c: one block, read and decompressed through the cache ---- */

/* The metadata block at image position pos; its ->aux is the next block's position. */
int qs_metadata_block(struct qs_image *img, uint64_t pos, struct qs_block **out);

/* The data or fragment block at pos with stored size word 'word' (never 0). */
int qs_data_block(struct qs_image *img, uint64_t pos, uint32_t word, struct qs_block **out);

/*
 * The same, loaded ahead of their reads and let go at once (warm.c): 1 if
 * loaded now, 0 if cached already, or -errno.  'stored': the data block's
 * bytes as stored, read already (or NULL); *next: the following metadata
 * block's position.
 */
int qs_data_block_ahead(struct qs_image *img, uint64_t pos, uint32_t word, const void *stored);
int qs_metadata_block_ahead(struct qs_image *img, uint64_t pos, uint64_t *next);

/* Read len raw bytes at image position pos (relative to the superblock). */
int qs_image_pread(struct qs_image *img, void *buf, size_t len, uint64_t pos);

/* ---- metadata.c: a position in a chain of metadata blocks ---- */

struct qs_meta_cursor {
	struct qs_image *img;
	uint64_t block;                 /* image position of the current block */
	uint32_t offset;                /* within its decompressed bytes */
};

static inline void qs_meta_cursor_init(struct qs_meta_cursor *c, struct qs_image *img, uint64_t block,
				       uint32_t offset)
{
	c->img = img;
	c->block = block;
	c->offset = offset;
}

/* Copy len bytes and advance, following the chain across block boundaries. */
int qs_meta_read(struct qs_meta_cursor *c, void *buf, size_t len);
int qs_meta_skip(struct qs_meta_cursor *c, size_t len);

/*
 * qs_meta_read, served from 'held' (a metadata block the caller holds, or
 * NULL) when the bytes lie inside it: loops that decode many small records
 * from one block take the cache's lock once per block, not once per field.
 */
int qs_meta_read_held(struct qs_meta_cursor *c, const struct qs_block *held, void *buf, size_t len);

/*
 * Read a table stored as metadata blocks listed by an index of 64-bit block
 * positions at 'index_pos' (id, fragment, export and xattr id tables):
 * 'count' entries of 'entry_size' bytes into a freshly allocated index.
 * The blocks lie in order before 'blocks_end': the index itself, except for
 * the xattr id table, whose 16-byte header comes between blocks and index.
 */
int qs_table_index_load(struct qs_image *img, const char *what, uint64_t index_pos, uint64_t blocks_end,
			uint64_t count, size_t entry_size, uint64_t **index, uint32_t *index_count);

/* Entry 'n' of such a table. */
int qs_table_entry(struct qs_image *img, const char *what, const uint64_t *index, uint32_t index_count,
		   uint64_t n, void *buf, size_t entry_size);

/* ---- the tables ---- */

int qs_id_table_load(struct qs_image *img);
int qs_id_lookup(struct qs_image *img, uint16_t index, uint32_t *id);

int qs_fragment_table_load(struct qs_image *img);
int qs_fragment_lookup(struct qs_image *img, uint32_t index, struct sqfs_fragment_entry *out);

int qs_export_table_load(struct qs_image *img);
int qs_xattr_table_load(struct qs_image *img);
int qs_xattr_id_lookup(struct qs_image *img, uint32_t index, struct sqfs_xattr_id *out);

#endif
