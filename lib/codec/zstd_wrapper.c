/*
 * zstd_wrapper.c - squashfs "zstd": each block is one zstd frame.
 *
 * Options block (4 bytes, little-endian): u32 compression level (1..22),
 * written only when the level is not mksquashfs's default of 15.  The level
 * does not matter for decoding.  The frame's window never exceeds the block
 * because the encoder knows the block's size in advance; the kernel relies
 * on that (it sizes its window to the block size).
 */
#include <errno.h>
#include <limits.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "squashfs_fs.h"
#include "wrapper.h"

#define ZSTD_OPTIONS_SIZE	4
#define ZSTD_LEVEL_MIN		1
#define ZSTD_LEVEL_DEFAULT	15

static int zstd_parse_options(const uint8_t *buf, size_t len, struct qs_comp_options *out)
{
	*out = (struct qs_comp_options){ .level = ZSTD_LEVEL_DEFAULT };
	if (len == 0)
		return 0;
	if (len < ZSTD_OPTIONS_SIZE)
		return qs_set_error(-EINVAL, "zstd options: block of %zu bytes, want %d", len,
				    ZSTD_OPTIONS_SIZE);
	out->present = true;
	out->level = sqfs_le32(buf);
	if (out->level < ZSTD_LEVEL_MIN || out->level > (uint32_t)ZSTD_maxCLevel())
		return qs_set_error(-EINVAL, "zstd options: compression level %u not in %d..%d",
				    out->level, ZSTD_LEVEL_MIN, ZSTD_maxCLevel());
	return 0;
}

static void free_dctx(void *ctx)
{
	ZSTD_freeDCtx(ctx);
}

static void free_cctx(void *ctx)
{
	ZSTD_freeCCtx(ctx);
}

static ssize_t zstd_decompress(const struct qs_comp_options *opt, const void *src, size_t len,
			       void *dst, size_t cap)
{
	ZSTD_DCtx *dctx = qs_thread_ctx(QS_SLOT_ZSTD_DEC);
	size_t res;
	int err;

	(void)opt;
	if (!dctx) {
		dctx = ZSTD_createDCtx();
		if (!dctx)
			return qs_set_error(-ENOMEM, "zstd: out of memory for a decompression context");
		err = qs_thread_ctx_set(QS_SLOT_ZSTD_DEC, dctx, free_dctx);
		if (err)
			return err;
	}

	res = ZSTD_decompressDCtx(dctx, dst, cap, src, len);
	if (ZSTD_isError(res)) {
		if (ZSTD_getErrorCode(res) == ZSTD_error_dstSize_tooSmall)
			return qs_set_error(-EIO, "zstd: block decompresses to more than %zu bytes", cap);
		return qs_set_error(-EIO, "zstd: corrupt block: %s", ZSTD_getErrorName(res));
	}
	/* No frame at all (or only skippable ones) is valid zstd but never a squashfs block. */
	if (res == 0)
		return qs_set_error(-EIO, "zstd: block of %zu bytes holds no data", len);
	return (ssize_t)res;
}

static int zstd_level(const struct qs_compress_params *p)
{
	return p->level ? p->level : ZSTD_LEVEL_DEFAULT;
}

static ssize_t zstd_compress(const struct qs_compress_params *p, const void *src, size_t len,
			     void *dst, size_t cap)
{
	ZSTD_CCtx *cctx = qs_thread_ctx(QS_SLOT_ZSTD_ENC);
	int level = zstd_level(p);
	size_t res;
	int err;

	if (level < ZSTD_LEVEL_MIN || level > ZSTD_maxCLevel())
		return qs_set_error(-EINVAL, "zstd: compression level %d not in %d..%d", level,
				    ZSTD_LEVEL_MIN, ZSTD_maxCLevel());
	if (!cctx) {
		cctx = ZSTD_createCCtx();
		if (!cctx)
			return qs_set_error(-ENOMEM, "zstd: out of memory for a compression context");
		err = qs_thread_ctx_set(QS_SLOT_ZSTD_ENC, cctx, free_cctx);
		if (err)
			return err;
	}

	res = ZSTD_compressCCtx(cctx, dst, qs_comp_room(len, cap), src, len, level);
	if (ZSTD_isError(res)) {
		if (ZSTD_getErrorCode(res) == ZSTD_error_dstSize_tooSmall)
			return 0;
		return qs_set_error(-EIO, "zstd: compression failed: %s", ZSTD_getErrorName(res));
	}
	return (ssize_t)res;
}

static size_t zstd_write_options(const struct qs_compress_params *p, uint8_t *buf)
{
	int level = zstd_level(p);

	if (level == ZSTD_LEVEL_DEFAULT)
		return 0;
	sqfs_put32(buf, (uint32_t)level);
	return ZSTD_OPTIONS_SIZE;
}

static ssize_t zstd_frame_size(const void *src, size_t len)
{
	size_t n = ZSTD_findFrameCompressedSize(src, len);

	return ZSTD_isError(n) || n > (size_t)SSIZE_MAX ? -1 : (ssize_t)n;
}

const struct qs_compressor qs_zstd_compressor = {
	.name = "zstd",
	.id = SQFS_COMP_ZSTD,
	.parse_options = zstd_parse_options,
	.decompress = zstd_decompress,
	.compress = zstd_compress,
	.write_options = zstd_write_options,
	.frame_size = zstd_frame_size,
};
