/*
 * codec.h - what one squashfs compressor implements: the operations a
 * *_wrapper.c fills in, the writer's parameters, and the six compressors
 * and their mksquashfs option names.  compressor.h finds them by id or name.
 *
 * Contexts that are costly to make (zstd, xz) are kept per thread inside the
 * wrapper (thread_ctx.h) and freed at thread exit, so every operation is safe
 * to call from many threads at once.
 */
#ifndef QUASH_CODEC_H
#define QUASH_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "quash.h"

/* Largest compressor options block written by any squashfs tool. */
#define QS_COMP_OPTIONS_MAX 64

/* What the writer asks of a compressor. */
struct qs_compress_params {
	int level;                  /* compressor's own scale; 0 = its default */
	uint32_t block_size;        /* for window and dictionary sizes */
	uint32_t xz_filters;        /* xz: BCJ filters to try (bit mask, as in the options) */
	uint32_t xz_dict_size;      /* xz: dictionary bytes; 0 = the block size */
	int lz4_hc;                 /* lz4: high compression */
	int gzip_window;            /* gzip: window bits, 8..15; 0 = 15 */
	uint32_t gzip_strategies;   /* gzip: strategies tried on each block, keeping the smallest
				     * (the options' bit mask); 0 = the default strategy alone */
	int lzo_algorithm;          /* lzo: 1 + the options' algorithm (lzo1x_1 .. lzo1x_999); 0 = lzo1x_999 */
};

struct qs_compressor {
	const char *name;           /* as mksquashfs spells it: "gzip", "xz", ... */
	uint16_t id;                /* enum sqfs_compressor_id */

	/*
	 * Decode the options block stored after the superblock (len bytes) into
	 * *out; -EINVAL (with a message) if the options are malformed or ask for
	 * something this build cannot decompress.
	 */
	int (*parse_options)(const uint8_t *buf, size_t len, struct qs_comp_options *out);

	/*
	 * Decompress src into dst (capacity cap).  Returns the decompressed size,
	 * or -EIO with a message if the data is corrupt or would exceed cap.
	 */
	ssize_t (*decompress)(const struct qs_comp_options *opt, const void *src, size_t len,
			      void *dst, size_t cap);

	/*
	 * Compress src into dst (capacity cap, at least len).  Returns the
	 * compressed size, or 0 if the result would not be smaller than len
	 * (the caller then stores the block uncompressed), or -errno.
	 */
	ssize_t (*compress)(const struct qs_compress_params *p, const void *src, size_t len,
			    void *dst, size_t cap);

	/*
	 * Write the options block for these parameters into buf (capacity
	 * QS_COMP_OPTIONS_MAX).  Returns its length, 0 if none is needed.
	 */
	size_t (*write_options)(const struct qs_compress_params *p, uint8_t *buf);

	/*
	 * Optional: the length of the one compressed block that starts src
	 * (len bytes at hand), where the format itself says where it ends, or
	 * -1.  Lets an image find a profile's blocks without reading their
	 * inodes (lib/format/warm.c).  zstd frames say; gzip, xz, lz4 and lzo
	 * streams do not without decoding them, and have none.
	 */
	ssize_t (*frame_size)(const void *src, size_t len);

	/*
	 * An image must carry an options block (lz4: "LZ4 compressed
	 * filesystems always have compression options", and the kernel and
	 * unsquashfs refuse one without).
	 */
	bool options_required;
};

/* xz: the bit of the BCJ filter mksquashfs names 'name' ("x86", "arm64", ...), or -1. */
int qs_xz_filter_bit(const char *name);
/* gzip: the strategy bit of mksquashfs's name for it ("default", "filtered", ...), or -1. */
int qs_gzip_strategy_bit(const char *name);
/* lzo: 1 + the algorithm number of mksquashfs's name for it ("lzo1x_1", ... "lzo1x_999"), or 0. */
int qs_lzo_algorithm(const char *name);

/* xz: may 'size' be a dictionary size (2^n or 2^n + 2^(n-1), 8 KiB .. 1 MiB)? */
bool qs_xz_dict_size_ok(uint32_t size);

extern const struct qs_compressor qs_gzip_compressor;
extern const struct qs_compressor qs_lzma_compressor;
extern const struct qs_compressor qs_lzo_compressor;
extern const struct qs_compressor qs_xz_compressor;
extern const struct qs_compressor qs_lz4_compressor;
extern const struct qs_compressor qs_zstd_compressor;

#endif
