/*
 * meta.h - metadata blocks: the 8 KiB compressed units that inodes,
 * directories and the lookup tables are stored in.
 */
#ifndef QUASH_PACK_META_H
#define QUASH_PACK_META_H

#include <stddef.h>
#include <stdint.h>

#include "compressor.h"
#include "squashfs_fs.h"

struct pack_sink;

struct meta_writer {
	const struct qs_compressor *comp;
	const struct qs_compress_params *params;
	uint8_t block[SQFS_META_SIZE];
	size_t fill;                /* bytes in the open block */
	uint8_t *out;               /* the finished blocks, headers included */
	size_t out_len, out_cap;
	uint64_t *starts;           /* where each finished block begins in out */
	size_t starts_count, starts_cap;
	uint64_t uncompressed;      /* bytes written, for reporting */
};

void meta_init(struct meta_writer *w, const struct qs_compressor *comp, const struct qs_compress_params *p);
void meta_free(struct meta_writer *w);

/* Append bytes; they may span blocks.  0 or -errno. */
int meta_write(struct meta_writer *w, const void *data, size_t len);
/* Close the open block (if any bytes are in it). */
int meta_flush(struct meta_writer *w);

/* Where the next byte goes: its block (relative to the table) and offset in it. */
static inline uint32_t meta_block(const struct meta_writer *w) { return (uint32_t)w->out_len; }
static inline uint16_t meta_offset(const struct meta_writer *w) { return (uint16_t)w->fill; }
static inline uint64_t meta_ref(const struct meta_writer *w)
{
	return sqfs_make_ref(w->out_len, (uint16_t)w->fill);
}

/*
 * A lookup table (fragments, export, ids, xattr ids): 'len' bytes of
 * fixed-size entries in metadata blocks, then the list of those blocks'
 * image offsets, which is where the superblock points (*start).
 */
int meta_write_table(struct pack_sink *sink, const struct qs_compressor *comp,
		     const struct qs_compress_params *p, const uint8_t *entries, size_t len, uint64_t *start);

#endif
