/*
 * xz_wrapper.c - squashfs "xz": each block is one .xz stream (CRC32 check,
 * LZMA2, optionally behind one BCJ filter), as the kernel's xz_dec reads it.
 *
 * Options block (8 bytes, little-endian): u32 dictionary size, u32 filters
 * (bit mask: x86 1, powerpc 2, ia64 4, arm 8, armthumb 16, sparc 32, arm64 64,
 * riscv 128).  The filters only tell which ones mksquashfs tried on each
 * block; every stream names its own, so decoding needs neither field.
 * mksquashfs writes the block only when the dictionary is not the block size
 * or filters were asked for, and like it we try each asked-for filter (and
 * none) per block and keep the smallest result.
 *
 * This file also holds the liblzma block helpers lzma_wrapper.c shares.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "liblzma_block.h"
#include "squashfs_fs.h"

#define XZ_OPTIONS_SIZE		8
#define XZ_DICT_MIN		LZMA_DICT_SIZE_MIN		/* 4 KiB */
#define XZ_DICT_MAX		(1u << SQFS_BLOCK_LOG_MAX)	/* no block is larger */
#define XZ_PRESET_DEFAULT	LZMA_PRESET_DEFAULT		/* 6, as mksquashfs */
#define XZ_PRESET_MAX		9
#define XZ_FILTER_BITS		8
#define XZ_DICT_SIZE_MIN_OPTION	(8u << 10)	/* mksquashfs's smallest -Xdict-size */

struct bcj_filter {
	const char *name;
	lzma_vli id;
	uint32_t lc, lp, pb;		/* literal coding tuned to the instruction size */
};

/* Indexed by bit number in the options' filter mask. */
static const struct bcj_filter bcj_filters[XZ_FILTER_BITS] = {
	{ "x86",      LZMA_FILTER_X86,      3, 0, 2 },
	{ "powerpc",  LZMA_FILTER_POWERPC,  2, 2, 2 },
	{ "ia64",     LZMA_FILTER_IA64,     0, 4, 4 },
	{ "arm",      LZMA_FILTER_ARM,      2, 2, 2 },
	{ "armthumb", LZMA_FILTER_ARMTHUMB, 3, 1, 2 },
	{ "sparc",    LZMA_FILTER_SPARC,    2, 2, 2 },
#ifdef LZMA_FILTER_ARM64
	{ "arm64",    LZMA_FILTER_ARM64,    2, 2, 2 },
#endif
#ifdef LZMA_FILTER_RISCV
	{ "riscv",    LZMA_FILTER_RISCV,    3, 1, 2 },
#endif
};

/* ---- liblzma block helpers (liblzma_block.h) ---------------------------- */

static void free_streams(void *ctx)
{
	struct qs_lzma_streams *s = ctx;

	lzma_end(&s->dec);
	lzma_end(&s->enc);
	free(s);
}

struct qs_lzma_streams *qs_lzma_streams_get(enum qs_comp_slot slot)
{
	static const lzma_stream init = LZMA_STREAM_INIT;
	struct qs_lzma_streams *s = qs_thread_ctx(slot);

	if (s)
		return s;
	s = malloc(sizeof(*s));
	if (!s) {
		qs_set_error(-ENOMEM, "out of memory for liblzma state");
		return NULL;
	}
	s->dec = init;
	s->enc = init;
	if (qs_thread_ctx_set(slot, s, free_streams))
		return NULL;
	return s;
}

static int lzma_init_error(const char *what, lzma_ret init)
{
	if (init == LZMA_MEM_ERROR)
		return qs_set_error(-ENOMEM, "%s: out of memory for liblzma", what);
	return qs_set_error(-EINVAL, "%s: liblzma refused the settings (error %d)", what, init);
}

ssize_t qs_lzma_decode(lzma_stream *strm, lzma_ret init, const char *what, const void *src, size_t len,
		       void *dst, size_t cap)
{
	lzma_ret ret;

	if (init != LZMA_OK)
		return lzma_init_error(what, init);
	strm->next_in = src;
	strm->avail_in = len;
	strm->next_out = dst;
	strm->avail_out = cap;
	ret = lzma_code(strm, LZMA_FINISH);
	switch (ret) {
	case LZMA_STREAM_END:
		return (ssize_t)(cap - strm->avail_out);
	case LZMA_OK:
	case LZMA_BUF_ERROR:
		if (strm->avail_out == 0)
			return qs_set_error(-EIO, "%s: block decompresses to more than %zu bytes", what, cap);
		return qs_set_error(-EIO, "%s: truncated block (%zu bytes)", what, len);
	case LZMA_MEMLIMIT_ERROR:
		return qs_set_error(-EIO, "%s: block needs more than %u MiB to decode", what,
				    QS_LZMA_MEMLIMIT >> 20);
	case LZMA_FORMAT_ERROR:
		return qs_set_error(-EIO, "%s: block has no valid header", what);
	case LZMA_OPTIONS_ERROR:
		return qs_set_error(-EIO, "%s: block uses unsupported options or filters", what);
	case LZMA_MEM_ERROR:
		return qs_set_error(-ENOMEM, "%s: out of memory decoding a block", what);
	default:
		return qs_set_error(-EIO, "%s: corrupt block (liblzma error %d)", what, ret);
	}
}

ssize_t qs_lzma_encode(lzma_stream *strm, lzma_ret init, const char *what, const void *src, size_t len,
		       void *dst, size_t room)
{
	lzma_ret ret;

	if (init != LZMA_OK)
		return lzma_init_error(what, init);
	strm->next_in = src;
	strm->avail_in = len;
	strm->next_out = dst;
	strm->avail_out = room;
	ret = lzma_code(strm, LZMA_FINISH);
	if (ret == LZMA_STREAM_END)
		return (ssize_t)(room - strm->avail_out);
	if (ret == LZMA_OK || ret == LZMA_BUF_ERROR)
		return 0;	/* out of room: not worth compressing */
	if (ret == LZMA_MEM_ERROR)
		return qs_set_error(-ENOMEM, "%s: out of memory compressing a block", what);
	return qs_set_error(-EIO, "%s: compression failed (liblzma error %d)", what, ret);
}

/* ---- xz ------------------------------------------------------------------ */

/* 2^n or 2^n + 2^(n-1): what the kernel and squashfs-tools accept. */
static bool xz_dict_size_valid(uint32_t size)
{
	uint32_t top;

	if (size == 0)
		return false;
	top = 1u << (31 - __builtin_clz(size));
	return size == top || size == (top | top >> 1);
}

static int xz_parse_options(const uint8_t *buf, size_t len, struct qs_comp_options *out)
{
	/* dictionary_size 0: none given, the block size is meant. */
	*out = (struct qs_comp_options){ 0 };
	if (len == 0)
		return 0;
	if (len < XZ_OPTIONS_SIZE)
		return qs_set_error(-EINVAL, "xz options: block of %zu bytes, want %d", len, XZ_OPTIONS_SIZE);
	out->present = true;
	out->dictionary_size = sqfs_le32(buf);
	out->filters = sqfs_le32(buf + 4);
	if (out->dictionary_size < XZ_DICT_MIN || out->dictionary_size > XZ_DICT_MAX)
		return qs_set_error(-EINVAL, "xz options: dictionary size %u not in %u..%u",
				    out->dictionary_size, XZ_DICT_MIN, XZ_DICT_MAX);
	if (!xz_dict_size_valid(out->dictionary_size))
		return qs_set_error(-EINVAL, "xz options: dictionary size %u is not 2^n or 2^n+2^(n-1)",
				    out->dictionary_size);
	/* Unknown filter bits are tolerated: they only concern the writer. */
	return 0;
}

static ssize_t xz_decompress(const struct qs_comp_options *opt, const void *src, size_t len,
			     void *dst, size_t cap)
{
	struct qs_lzma_streams *s = qs_lzma_streams_get(QS_SLOT_XZ);

	(void)opt;
	if (!s)
		return -ENOMEM;
	return qs_lzma_decode(&s->dec, lzma_stream_decoder(&s->dec, QS_LZMA_MEMLIMIT, 0), "xz",
			      src, len, dst, cap);
}

/* Encode with one filter chain: BCJ 'bcj' (or none if NULL) in front of LZMA2. */
static ssize_t xz_encode_with(lzma_stream *strm, const struct bcj_filter *bcj, uint32_t preset,
			      uint32_t dict_size, const void *src, size_t len, void *dst, size_t room)
{
	lzma_options_lzma lzma;
	lzma_filter chain[3];
	int n = 0;

	if (lzma_lzma_preset(&lzma, preset))
		return qs_set_error(-EINVAL, "xz: unknown preset %u", preset);
	lzma.dict_size = dict_size;
	if (bcj) {
		lzma.lc = bcj->lc;
		lzma.lp = bcj->lp;
		lzma.pb = bcj->pb;
		chain[n++] = (lzma_filter){ .id = bcj->id };
	}
	chain[n++] = (lzma_filter){ .id = LZMA_FILTER_LZMA2, .options = &lzma };
	chain[n] = (lzma_filter){ .id = LZMA_VLI_UNKNOWN };
	return qs_lzma_encode(strm, lzma_stream_encoder(strm, chain, LZMA_CHECK_CRC32), "xz",
			      src, len, dst, room);
}

int qs_xz_filter_bit(const char *name)
{
	for (unsigned int i = 0; i < ARRAY_LEN(bcj_filters); i++)
		if (bcj_filters[i].name && strcmp(bcj_filters[i].name, name) == 0)
			return (int)i;
	return -1;
}

bool qs_xz_dict_size_ok(uint32_t size)
{
	return size >= XZ_DICT_SIZE_MIN_OPTION && size <= XZ_DICT_MAX && xz_dict_size_valid(size);
}

static uint32_t xz_dict_size(const struct qs_compress_params *p, size_t len)
{
	uint32_t size = p->xz_dict_size ? p->xz_dict_size : p->block_size ? p->block_size : (uint32_t)len;

	return size < XZ_DICT_MIN ? XZ_DICT_MIN : size;
}

static ssize_t xz_compress(const struct qs_compress_params *p, const void *src, size_t len,
			   void *dst, size_t cap)
{
	uint32_t preset = p->level ? (uint32_t)p->level : XZ_PRESET_DEFAULT;
	uint32_t dict_size = xz_dict_size(p, len);
	struct qs_lzma_streams *s;
	ssize_t best, n;
	uint8_t *trial = NULL;

	if (p->level < 0 || preset > XZ_PRESET_MAX)
		return qs_set_error(-EINVAL, "xz: preset %d not in 1..%d", p->level, XZ_PRESET_MAX);
	if (p->xz_filters & ~((1u << ARRAY_LEN(bcj_filters)) - 1))
		return qs_set_error(-EINVAL, "xz: unknown BCJ filters 0x%x", p->xz_filters);
	s = qs_lzma_streams_get(QS_SLOT_XZ);
	if (!s)
		return -ENOMEM;

	best = xz_encode_with(&s->enc, NULL, preset, dict_size, src, len, dst, qs_comp_room(len, cap));
	for (unsigned int i = 0; best >= 0 && i < ARRAY_LEN(bcj_filters); i++) {
		size_t room = best ? (size_t)best - 1 : qs_comp_room(len, cap);

		if (!(p->xz_filters & 1u << i) || room == 0)
			continue;
		if (!trial && !(trial = malloc(room)))
			return qs_set_error(-ENOMEM, "xz: out of memory for a trial block");
		n = xz_encode_with(&s->enc, &bcj_filters[i], preset, dict_size, src, len, trial, room);
		if (n > 0) {
			memcpy(dst, trial, (size_t)n);
			best = n;
		} else if (n < 0) {
			best = n;
		}
	}
	free(trial);
	return best;
}

static size_t xz_write_options(const struct qs_compress_params *p, uint8_t *buf)
{
	if (p->xz_filters == 0 && (!p->xz_dict_size || p->xz_dict_size == p->block_size))
		return 0;	/* dictionary = block size and no filters: the defaults */
	sqfs_put32(buf, xz_dict_size(p, 0));
	sqfs_put32(buf + 4, p->xz_filters);
	return XZ_OPTIONS_SIZE;
}

const struct qs_compressor qs_xz_compressor = {
	.name = "xz",
	.id = SQFS_COMP_XZ,
	.parse_options = xz_parse_options,
	.decompress = xz_decompress,
	.compress = xz_compress,
	.write_options = xz_write_options,
};
