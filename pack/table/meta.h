/*
 * meta.h - metadata blocks: the 8 KiB compressed units that inodes,
 * directories and the lookup tables are stored in.
 *
 * A table is first written as its whole uncompressed byte stream; block n
 * is bytes [n * 8 KiB, (n + 1) * 8 KiB) of it.  The stream is kept one
 * block per allocation, and a block nothing but zeros was written to is
 * never allocated: the block list of a sparse file is mostly zero words
 * (4 per hole), and a tar of a few KiB may declare terabytes of holes.  Until meta_compress() has
 * run, references name a block by its number, not by where it will
 * start; a field that must hold where a block of another table starts is
 * written with meta_write_start(), which leaves a patch.  meta_compress()
 * then compresses the blocks of several tables on many threads, each block
 * as soon as the starts its patches need are known, and lays the blocks
 * out; meta_final_ref() turns a provisional reference into the real one.
 * The bytes never depend on the number of threads.
 *
 * Under a memory bound (--memory) the tables of one image share a
 * meta_spill: once their streams hold more than its budget in memory, the
 * complete blocks (which are never written again: patches are applied
 * while compressing) go to a temporary file, and are read back from it
 * when their turn to be compressed comes.  Once the file is in use, the
 * compressed blocks go there too, each as soon as the blocks before it are
 * done, and meta_emit() copies them to the image: a million files' inode
 * and directory tables are 8.5 MB compressed, and were held twice while
 * laid out, 15 MB the bound would otherwise hold at the end.
 */
#ifndef QUASH_PACK_META_H
#define QUASH_PACK_META_H

#include <stddef.h>
#include <stdint.h>

#include "codec/compressor.h"
#include "format/squashfs_fs.h"

struct pack_sink;
struct meta_writer;

#define META_SPILL_TABLES 4     /* tables sharing one spill file at most */

struct meta_spill {
	int fd;                     /* the temporary file, -1 until first needed */
	const char *dir;            /* created there */
	uint64_t end;               /* bytes written to it */
	uint64_t budget;            /* stream bytes the tables keep in memory at most */
	uint64_t held;              /* stream bytes in memory now */
	struct meta_writer *tables[META_SPILL_TABLES];
	unsigned count;
};

/* A 32-bit field at 'pos' of a stream that gets the start of block 'block' of the target table. */
struct meta_patch {
	uint64_t pos;
	uint32_t block;
};

struct meta_writer {
	const struct qs_compressor *comp;   /* NULL: every block stored uncompressed */
	const struct qs_compress_params *params;
	uint8_t **raw;              /* the uncompressed stream, SQFS_META_SIZE bytes each; NULL = zeros */
	uint64_t raw_len;
	size_t raw_cap;             /* entries in raw */
	struct meta_patch *patches; /* in stream order */
	size_t patch_count, patch_cap;
	const struct meta_writer *target;   /* the table the patches point into */
	struct meta_spill *spill;   /* or NULL: everything stays in memory */
	uint64_t *spilled;          /* per block: where in the spill file + 1, or 0 (raw_cap entries) */
	size_t spill_next;          /* blocks before it are spilled or never were in memory */
	/* Filled by meta_compress(): */
	uint8_t *out;               /* the blocks, headers included; NULL if they are in the spill file */
	size_t out_len;
	uint64_t out_at;            /* where they are in the spill file (out NULL) */
	uint64_t *starts;           /* where each block begins in out; one more at the end */
	size_t starts_count;        /* blocks */
};

void meta_init(struct meta_writer *w, const struct qs_compressor *comp, const struct qs_compress_params *p);
/* Let w spill to s (whose budget it shares with the other tables there); 0 or -EINVAL if s is full. */
int meta_spill_attach(struct meta_writer *w, struct meta_spill *s);
void meta_spill_init(struct meta_spill *s, const char *dir, uint64_t budget);
void meta_spill_close(struct meta_spill *s);
void meta_free(struct meta_writer *w);

/* Append bytes; they may span blocks.  0 or -errno. */
int meta_write(struct meta_writer *w, const void *data, size_t len);
/* Append len zero bytes; blocks that hold nothing else cost no memory.  0 or -errno. */
int meta_write_zeros(struct meta_writer *w, uint64_t len);
/* Append a 32-bit field that will hold where block 'block' of 'target' starts (one target per table). */
int meta_write_start(struct meta_writer *w, const struct meta_writer *target, uint32_t block);

/* Where the next byte goes: its block number and offset in it (provisional until compressed). */
static inline uint32_t meta_block(const struct meta_writer *w) { return (uint32_t)(w->raw_len / SQFS_META_SIZE); }
static inline uint16_t meta_offset(const struct meta_writer *w) { return (uint16_t)(w->raw_len % SQFS_META_SIZE); }
static inline uint64_t meta_ref(const struct meta_writer *w)
{
	return sqfs_make_ref(meta_block(w), meta_offset(w));
}

/*
 * Compress the n tables (patches may point only among them) on up to
 * 'jobs' threads.  0 or -errno.
 */
int meta_compress(struct meta_writer *const *ws, size_t n, unsigned jobs);

/* Append w's compressed blocks to the sink, from memory or from the spill file.  0 or -errno. */
int meta_emit(const struct meta_writer *w, struct pack_sink *sink);

/* A provisional reference into a compressed table, as the image stores it. */
static inline uint64_t meta_final_ref(const struct meta_writer *w, uint64_t ref)
{
	return sqfs_make_ref(w->starts[sqfs_ref_block(ref)], sqfs_ref_offset(ref));
}

/*
 * A lookup table (fragments, export, ids, xattr ids): 'len' bytes of
 * fixed-size entries in metadata blocks, then the list of those blocks'
 * image offsets, which is where the superblock points (*start).  With
 * comp NULL the blocks are stored uncompressed.
 */
int meta_write_table(struct pack_sink *sink, const struct qs_compressor *comp,
		     const struct qs_compress_params *p, unsigned jobs, const uint8_t *entries, size_t len,
		     uint64_t *start);
/* The same, its bytes [off, off + len) given by fill() as they are needed. */
typedef void (*meta_fill_fn)(void *arg, uint8_t *buf, size_t off, size_t len);
int meta_write_table_from(struct pack_sink *sink, const struct qs_compressor *comp,
			  const struct qs_compress_params *p, unsigned jobs, size_t len, meta_fill_fn fill,
			  void *arg, uint64_t *start);

#endif
