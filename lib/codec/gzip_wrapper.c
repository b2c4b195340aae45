/*
 * gzip_wrapper.c - squashfs "gzip": each block is one zlib stream (RFC 1950).
 *
 * Decompression uses libdeflate, which decodes a whole block in one call and
 * is much faster than zlib's inflate for this; compression uses libdeflate
 * too (its output is a standard zlib stream with a 32 KiB window, which is
 * what the kernel's inflate expects).
 *
 * Options block (8 bytes, little-endian), as squashfs-tools writes it:
 *	u32 compression level (1..9), u16 window size (8..15),
 *	u16 strategies (bit mask: default, filtered, huffman only, rle, fixed)
 * mksquashfs stores it only when it differs from level 9, window 15 and no
 * strategies; so do we.  Decoding does not depend on any of it.
 *
 * libdeflate has one window (32 KiB) and one strategy, so a smaller window
 * or a choice of strategies (mksquashfs -Xwindow-size, -Xstrategy) is
 * compressed with zlib, as mksquashfs does it: each block with every
 * strategy asked for, keeping the smallest.
 *
 * Blocks are decompressed with libdeflate, which does it several times
 * faster than zlib's inflate (docs/benchmarks.md).
 */
#include <errno.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "squashfs_fs.h"
#include "wrapper.h"

#define GZIP_OPTIONS_SIZE	8
#define GZIP_LEVEL_MIN		1
#define GZIP_LEVEL_MAX		9
#define GZIP_LEVEL_DEFAULT	9
#define GZIP_WINDOW_MIN		8
#define GZIP_WINDOW_MAX		15
#define GZIP_WINDOW_DEFAULT	15
#define GZIP_STRATEGY_MASK	0x1fu	/* the five strategies mksquashfs knows */
#define GZIP_MEM_LEVEL		8	/* zlib's default, which mksquashfs passes */

/* The options' strategy bits, in order, as mksquashfs names them and zlib numbers them. */
static const struct {
	const char *name;
	int zlib;
} strategies[] = {
	{ "default", Z_DEFAULT_STRATEGY },
	{ "filtered", Z_FILTERED },
	{ "huffman_only", Z_HUFFMAN_ONLY },
	{ "run_length_encoded", Z_RLE },
	{ "fixed", Z_FIXED },
};

int qs_gzip_strategy_bit(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(strategies); i++)
		if (strcmp(name, strategies[i].name) == 0)
			return (int)i;
	return -1;
}

static int gzip_parse_options(const uint8_t *buf, size_t len, struct qs_comp_options *out)
{
	*out = (struct qs_comp_options){ .level = GZIP_LEVEL_DEFAULT, .window_size = GZIP_WINDOW_DEFAULT };
	if (len == 0)
		return 0;
	if (len < GZIP_OPTIONS_SIZE)
		return qs_set_error(-EINVAL, "gzip options: block of %zu bytes, want %d", len,
				    GZIP_OPTIONS_SIZE);

	out->present = true;
	out->level = sqfs_le32(buf);
	out->window_size = sqfs_le16(buf + 4);
	out->strategies = sqfs_le16(buf + 6);
	if (out->level < GZIP_LEVEL_MIN || out->level > GZIP_LEVEL_MAX)
		return qs_set_error(-EINVAL, "gzip options: compression level %u not in %d..%d",
				    out->level, GZIP_LEVEL_MIN, GZIP_LEVEL_MAX);
	if (out->window_size < GZIP_WINDOW_MIN || out->window_size > GZIP_WINDOW_MAX)
		return qs_set_error(-EINVAL, "gzip options: window size %u not in %d..%d",
				    out->window_size, GZIP_WINDOW_MIN, GZIP_WINDOW_MAX);
	if (out->strategies & ~GZIP_STRATEGY_MASK)
		return qs_set_error(-EINVAL, "gzip options: unknown strategies 0x%x", out->strategies);
	return 0;
}

static void free_decompressor(void *ctx)
{
	libdeflate_free_decompressor(ctx);
}

static ssize_t gzip_decompress(const struct qs_comp_options *opt, const void *src, size_t len,
			       void *dst, size_t cap)
{
	struct libdeflate_decompressor *d = qs_thread_ctx(QS_SLOT_GZIP_DEC);
	enum libdeflate_result res;
	size_t out;
	int err;

	(void)opt;
	if (!d) {
		d = libdeflate_alloc_decompressor();
		if (!d)
			return qs_set_error(-ENOMEM, "gzip: out of memory for a decompressor");
		err = qs_thread_ctx_set(QS_SLOT_GZIP_DEC, d, free_decompressor);
		if (err)
			return err;
	}

	res = libdeflate_zlib_decompress(d, src, len, dst, cap, &out);
	switch (res) {
	case LIBDEFLATE_SUCCESS:
		return (ssize_t)out;
	case LIBDEFLATE_INSUFFICIENT_SPACE:
		return qs_set_error(-EIO, "gzip: block decompresses to more than %zu bytes", cap);
	default:
		return qs_set_error(-EIO, "gzip: corrupt or truncated zlib stream (%zu bytes)", len);
	}
}

/* A libdeflate compressor is built for one level; a thread keeps the last it used. */
struct gzip_encoder {
	struct libdeflate_compressor *c;
	int level;
};

static void free_encoder(void *ctx)
{
	struct gzip_encoder *enc = ctx;

	libdeflate_free_compressor(enc->c);
	free(enc);
}

static struct gzip_encoder *gzip_encoder_get(int level)
{
	struct gzip_encoder *enc = qs_thread_ctx(QS_SLOT_GZIP_ENC);

	if (enc && enc->level == level)
		return enc;
	enc = malloc(sizeof(*enc));
	if (!enc)
		return NULL;
	enc->level = level;
	enc->c = libdeflate_alloc_compressor(level);
	if (!enc->c) {
		free(enc);
		return NULL;
	}
	if (qs_thread_ctx_set(QS_SLOT_GZIP_ENC, enc, free_encoder))
		return NULL;
	return enc;
}

static int gzip_level(const struct qs_compress_params *p)
{
	return p->level ? p->level : GZIP_LEVEL_DEFAULT;
}

static int gzip_window(const struct qs_compress_params *p)
{
	return p->gzip_window ? p->gzip_window : GZIP_WINDOW_DEFAULT;
}

/* zlib's deflate for one (level, window), and room for the tries beside dst. */
struct zlib_encoder {
	z_stream z;
	int level, window;
	uint8_t *scratch;
	size_t scratch_size;
};

static void free_zlib_encoder(void *ctx)
{
	struct zlib_encoder *enc = ctx;

	deflateEnd(&enc->z);
	free(enc->scratch);
	free(enc);
}

static struct zlib_encoder *zlib_encoder_get(int level, int window, size_t room)
{
	struct zlib_encoder *enc = qs_thread_ctx(QS_SLOT_ZLIB_ENC);

	if (!enc || enc->level != level || enc->window != window) {
		enc = calloc(1, sizeof(*enc));
		if (!enc)
			return NULL;
		if (deflateInit2(&enc->z, level, Z_DEFLATED, window, GZIP_MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK) {
			free(enc);
			return NULL;
		}
		enc->level = level;
		enc->window = window;
		if (qs_thread_ctx_set(QS_SLOT_ZLIB_ENC, enc, free_zlib_encoder))
			return NULL;
	}
	if (enc->scratch_size < room) {
		uint8_t *p = realloc(enc->scratch, room);

		if (!p)
			return NULL;
		enc->scratch = p;
		enc->scratch_size = room;
	}
	return enc;
}

/* One zlib stream of src into out (at most room bytes) with one strategy: its size, 0 if it does not fit. */
static ssize_t zlib_try(struct zlib_encoder *enc, int strategy, const void *src, size_t len, uint8_t *out,
			size_t room)
{
	int res = deflateReset(&enc->z);

	if (res == Z_OK)
		res = deflateParams(&enc->z, enc->level, strategy);
	if (res != Z_OK)
		return qs_set_error(-EIO, "gzip: zlib refused its parameters (%d)", res);
	enc->z.next_in = (Bytef *)src;
	enc->z.avail_in = (uInt)len;
	enc->z.next_out = out;
	enc->z.avail_out = (uInt)room;
	res = deflate(&enc->z, Z_FINISH);
	if (res == Z_STREAM_END)
		return (ssize_t)enc->z.total_out;
	if (res == Z_OK || res == Z_BUF_ERROR)
		return 0;   /* out of room: not smaller */
	return qs_set_error(-EIO, "gzip: zlib failed (%d)", res);
}

/* mksquashfs's way: every strategy asked for, the smallest result kept. */
static ssize_t zlib_compress(const struct qs_compress_params *p, const void *src, size_t len, void *dst,
			     size_t cap)
{
	size_t room = qs_comp_room(len, cap);
	uint32_t mask = p->gzip_strategies ? p->gzip_strategies : 1u;
	struct zlib_encoder *enc = zlib_encoder_get(gzip_level(p), gzip_window(p), room);
	ssize_t best = 0;

	if (!enc)
		return qs_set_error(-ENOMEM, "gzip: out of memory for a zlib compressor");
	if (room == 0)
		return 0;
	for (size_t i = 0; i < ARRAY_LEN(strategies); i++) {
		ssize_t n;

		if (!(mask & (1u << i)))
			continue;
		/* The first into dst; later ones into scratch, copied over when smaller. */
		n = zlib_try(enc, strategies[i].zlib, src, len, best ? enc->scratch : dst, room);
		if (n < 0)
			return n;
		if (n > 0 && best && n < best)
			memcpy(dst, enc->scratch, (size_t)n);
		if (n > 0 && (!best || n < best))
			best = n;
	}
	return best;
}

static ssize_t gzip_compress(const struct qs_compress_params *p, const void *src, size_t len,
			     void *dst, size_t cap)
{
	int level = gzip_level(p);
	struct gzip_encoder *enc;

	if (level < GZIP_LEVEL_MIN || level > GZIP_LEVEL_MAX)
		return qs_set_error(-EINVAL, "gzip: compression level %d not in %d..%d", level,
				    GZIP_LEVEL_MIN, GZIP_LEVEL_MAX);
	if (gzip_window(p) < GZIP_WINDOW_MIN || gzip_window(p) > GZIP_WINDOW_MAX)
		return qs_set_error(-EINVAL, "gzip: window size %d not in %d..%d", gzip_window(p),
				    GZIP_WINDOW_MIN, GZIP_WINDOW_MAX);
	if (p->gzip_strategies & ~GZIP_STRATEGY_MASK)
		return qs_set_error(-EINVAL, "gzip: unknown strategies 0x%x", p->gzip_strategies);
	if (gzip_window(p) != GZIP_WINDOW_DEFAULT || p->gzip_strategies)
		return zlib_compress(p, src, len, dst, cap);
	enc = gzip_encoder_get(level);
	if (!enc)
		return qs_set_error(-ENOMEM, "gzip: out of memory for a compressor");
	/* libdeflate returns 0 when the result does not fit: exactly our "not smaller". */
	return (ssize_t)libdeflate_zlib_compress(enc->c, src, len, dst, qs_comp_room(len, cap));
}

static size_t gzip_write_options(const struct qs_compress_params *p, uint8_t *buf)
{
	int level = gzip_level(p);

	if (level == GZIP_LEVEL_DEFAULT && gzip_window(p) == GZIP_WINDOW_DEFAULT && !p->gzip_strategies)
		return 0;
	sqfs_put32(buf, (uint32_t)level);
	sqfs_put16(buf + 4, (uint16_t)gzip_window(p));
	sqfs_put16(buf + 6, (uint16_t)p->gzip_strategies);
	return GZIP_OPTIONS_SIZE;
}

const struct qs_compressor qs_gzip_compressor = {
	.name = "gzip",
	.id = SQFS_COMP_GZIP,
	.parse_options = gzip_parse_options,
	.decompress = gzip_decompress,
	.compress = gzip_compress,
	.write_options = gzip_write_options,
};
