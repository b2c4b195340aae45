/*
 * lz4_wrapper.c - squashfs "lz4": each block is one raw LZ4 block (no frame).
 *
 * Options block, little-endian: u32 version (1, the "legacy" block format,
 * the only one the kernel knows), u32 flags (1 = compressed with LZ4 HC).
 * mksquashfs always writes it and the kernel refuses an lz4 image without
 * it, so write_options always returns it.  Newer squashfs-tools may append a
 * u32 with the HC level or acceleration (flag 2 says so); it does not matter
 * for decoding and is accepted.  We write the 8-byte form of squashfs-tools
 * 4.5, which every reader understands.
 *
 * The writer's level is the HC level (1..12, default 12 as mksquashfs -Xhc);
 * plain LZ4 has no level.
 */
#include <errno.h>
#include <limits.h>
#include <lz4.h>
#include <lz4hc.h>
#include <stdlib.h>

#include "squashfs_fs.h"
#include "wrapper.h"

#define LZ4_OPTIONS_SIZE	8
#define LZ4_VERSION_LEGACY	1
#define LZ4_FLAG_HC		1u
#define LZ4_FLAG_NON_DEFAULT	2u	/* a third word follows (squashfs-tools >= 4.7) */
#define LZ4_FLAGS_KNOWN		(LZ4_FLAG_HC | LZ4_FLAG_NON_DEFAULT)

static int lz4_parse_options(const uint8_t *buf, size_t len, struct qs_comp_options *out)
{
	*out = (struct qs_comp_options){ .version = LZ4_VERSION_LEGACY };
	/* The kernel insists on the block; unsquashfs does not: be as lenient as unsquashfs. */
	if (len == 0)
		return 0;
	if (len < LZ4_OPTIONS_SIZE)
		return qs_set_error(-EINVAL, "lz4 options: block of %zu bytes, want %d", len,
				    LZ4_OPTIONS_SIZE);
	out->present = true;
	out->version = sqfs_le32(buf);
	out->flags = sqfs_le32(buf + 4);
	if (out->version != LZ4_VERSION_LEGACY)
		return qs_set_error(-EINVAL, "lz4 options: unknown stream format version %u", out->version);
	if (out->flags & ~LZ4_FLAGS_KNOWN)
		return qs_set_error(-EINVAL, "lz4 options: unknown flags 0x%x", out->flags);
	return 0;
}

static ssize_t lz4_decompress(const struct qs_comp_options *opt, const void *src, size_t len,
			      void *dst, size_t cap)
{
	int res;

	(void)opt;
	if (len > INT_MAX)
		return qs_set_error(-EIO, "lz4: block of %zu bytes is too large", len);
	if (cap > INT_MAX)
		cap = INT_MAX;
	res = LZ4_decompress_safe(src, dst, (int)len, (int)cap);
	if (res < 0)
		return qs_set_error(-EIO, "lz4: corrupt or truncated block, or larger than %zu bytes", cap);
	return res;
}

static void free_hc_state(void *ctx)
{
	free(ctx);
}

static ssize_t lz4_compress(const struct qs_compress_params *p, const void *src, size_t len,
			    void *dst, size_t cap)
{
	int room, level = p->level ? p->level : LZ4HC_CLEVEL_MAX;
	void *state;
	int err;

	if (len > INT_MAX)
		return qs_set_error(-EINVAL, "lz4: block of %zu bytes is too large", len);
	room = (int)qs_comp_room(len, cap);
	if (!p->lz4_hc)
		return LZ4_compress_default(src, dst, (int)len, room);

	if (level < 1 || level > LZ4HC_CLEVEL_MAX)
		return qs_set_error(-EINVAL, "lz4: HC level %d not in 1..%d", level, LZ4HC_CLEVEL_MAX);
	state = qs_thread_ctx(QS_SLOT_LZ4_HC);
	if (!state) {
		state = malloc((size_t)LZ4_sizeofStateHC());
		if (!state)
			return qs_set_error(-ENOMEM, "lz4: out of memory for HC state");
		err = qs_thread_ctx_set(QS_SLOT_LZ4_HC, state, free_hc_state);
		if (err)
			return err;
	}
	/* Like the plain encoder, returns 0 when the result does not fit. */
	return LZ4_compress_HC_extStateHC(state, src, dst, (int)len, room, level);
}

static size_t lz4_write_options(const struct qs_compress_params *p, uint8_t *buf)
{
	sqfs_put32(buf, LZ4_VERSION_LEGACY);
	sqfs_put32(buf + 4, p->lz4_hc ? LZ4_FLAG_HC : 0);
	return LZ4_OPTIONS_SIZE;
}

const struct qs_compressor qs_lz4_compressor = {
	.name = "lz4",
	.id = SQFS_COMP_LZ4,
	.parse_options = lz4_parse_options,
	.decompress = lz4_decompress,
	.compress = lz4_compress,
	.write_options = lz4_write_options,
	.options_required = true,
};
