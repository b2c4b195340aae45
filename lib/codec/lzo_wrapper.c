/*
 * lzo_wrapper.c - squashfs "lzo": each block is one LZO1X block.
 *
 * Options block (8 bytes, little-endian): u32 algorithm (0 lzo1x_1,
 * 1 lzo1x_1_11, 2 lzo1x_1_12, 3 lzo1x_1_15, 4 lzo1x_999), u32 level (1..9
 * for lzo1x_999, else 0).  All five produce the same LZO1X format, so
 * decoding ignores them.  Like mksquashfs we compress with lzo1x_999 (level
 * 8 by default) or the algorithm asked for (-Xalgorithm), run
 * lzo1x_optimize over the result, and write the options block only for
 * something other than lzo1x_999 at level 8.
 */
#include <errno.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "squashfs_fs.h"
#include "wrapper.h"

#define LZO_OPTIONS_SIZE	8
#define LZO_ALG_1X_1		0
#define LZO_ALG_1X_999		4
#define LZO_LEVEL_MIN		1
#define LZO_LEVEL_MAX		9
#define LZO_LEVEL_DEFAULT	8

/* mksquashfs's names, by the options' algorithm number, and the compressors (lzo1x_999 apart). */
static const struct {
	const char *name;
	int (*compress)(const lzo_bytep src, lzo_uint len, lzo_bytep dst, lzo_uintp out, lzo_voidp work);
} algorithms[] = {
	{ "lzo1x_1", lzo1x_1_compress },
	{ "lzo1x_1_11", lzo1x_1_11_compress },
	{ "lzo1x_1_12", lzo1x_1_12_compress },
	{ "lzo1x_1_15", lzo1x_1_15_compress },
	{ "lzo1x_999", NULL },
};

/* One workspace serves every algorithm: lzo1x_999's is the largest. */
_Static_assert(LZO1X_999_MEM_COMPRESS >= LZO1X_1_MEM_COMPRESS && LZO1X_999_MEM_COMPRESS >= LZO1X_1_11_MEM_COMPRESS &&
	       LZO1X_999_MEM_COMPRESS >= LZO1X_1_12_MEM_COMPRESS && LZO1X_999_MEM_COMPRESS >= LZO1X_1_15_MEM_COMPRESS,
	       "the lzo workspace is sized for lzo1x_999");

int qs_lzo_algorithm(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(algorithms); i++)
		if (strcmp(name, algorithms[i].name) == 0)
			return (int)i + 1;
	return 0;
}

static int lzo_algorithm(const struct qs_compress_params *p)
{
	return p->lzo_algorithm ? p->lzo_algorithm - 1 : LZO_ALG_1X_999;
}

/* Worst-case LZO1X output for n input bytes (from the LZO documentation). */
#define LZO_BOUND(n)		((n) + (n) / 16 + 64 + 3)

static pthread_once_t lzo_once = PTHREAD_ONCE_INIT;
static int lzo_init_result;

static void lzo_init_once(void)
{
	lzo_init_result = lzo_init();
}

static int lzo_ready(void)
{
	pthread_once(&lzo_once, lzo_init_once);
	if (lzo_init_result != LZO_E_OK)
		return qs_set_error(-EIO, "lzo: library failed to initialise (%d)", lzo_init_result);
	return 0;
}

static int lzo_parse_options(const uint8_t *buf, size_t len, struct qs_comp_options *out)
{
	*out = (struct qs_comp_options){ .algorithm = LZO_ALG_1X_999, .level = LZO_LEVEL_DEFAULT };
	if (len == 0)
		return 0;
	if (len < LZO_OPTIONS_SIZE)
		return qs_set_error(-EINVAL, "lzo options: block of %zu bytes, want %d", len,
				    LZO_OPTIONS_SIZE);
	out->present = true;
	out->algorithm = sqfs_le32(buf);
	out->level = sqfs_le32(buf + 4);
	if (out->algorithm > LZO_ALG_1X_999)
		return qs_set_error(-EINVAL, "lzo options: unknown algorithm %u", out->algorithm);
	if (out->algorithm == LZO_ALG_1X_999 && (out->level < LZO_LEVEL_MIN || out->level > LZO_LEVEL_MAX))
		return qs_set_error(-EINVAL, "lzo options: lzo1x_999 level %u not in %d..%d",
				    out->level, LZO_LEVEL_MIN, LZO_LEVEL_MAX);
	if (out->algorithm != LZO_ALG_1X_999 && out->level != 0)
		return qs_set_error(-EINVAL, "lzo options: level %u given for a fixed-level algorithm",
				    out->level);
	return 0;
}

static ssize_t lzo_decompress(const struct qs_comp_options *opt, const void *src, size_t len,
			      void *dst, size_t cap)
{
	lzo_uint out = cap;
	int res, err;

	(void)opt;
	err = lzo_ready();
	if (err)
		return err;
	res = lzo1x_decompress_safe(src, len, dst, &out, NULL);
	if (res == LZO_E_OUTPUT_OVERRUN)
		return qs_set_error(-EIO, "lzo: block decompresses to more than %zu bytes", cap);
	if (res != LZO_E_OK)
		return qs_set_error(-EIO, "lzo: corrupt or truncated block (error %d)", res);
	return (ssize_t)out;
}

/*
 * lzo1x_999 takes no output limit, so it writes into a scratch buffer of the
 * worst-case size; each thread keeps its workspace and scratch buffer.
 */
struct lzo_encoder {
	size_t out_size;
	uint8_t *out;
	_Alignas(lzo_align_t) uint8_t work[LZO1X_999_MEM_COMPRESS];
};

static void free_encoder(void *ctx)
{
	struct lzo_encoder *enc = ctx;

	free(enc->out);
	free(enc);
}

static struct lzo_encoder *lzo_encoder_get(size_t len)
{
	struct lzo_encoder *enc = qs_thread_ctx(QS_SLOT_LZO);
	uint8_t *out;

	if (!enc) {
		enc = calloc(1, sizeof(*enc));
		if (!enc || qs_thread_ctx_set(QS_SLOT_LZO, enc, free_encoder))
			return NULL;
	}
	if (enc->out_size < LZO_BOUND(len)) {
		out = realloc(enc->out, LZO_BOUND(len));
		if (!out)
			return NULL;
		enc->out = out;
		enc->out_size = LZO_BOUND(len);
	}
	return enc;
}

static ssize_t lzo_compress(const struct qs_compress_params *p, const void *src, size_t len,
			    void *dst, size_t cap)
{
	int level = p->level ? p->level : LZO_LEVEL_DEFAULT, alg = lzo_algorithm(p);
	lzo_uint out, check = len;
	struct lzo_encoder *enc;
	int res, err;

	if (alg < 0 || alg > LZO_ALG_1X_999)
		return qs_set_error(-EINVAL, "lzo: unknown algorithm %d", alg);
	if (alg != LZO_ALG_1X_999 && p->level)
		return qs_set_error(-EINVAL, "lzo: a compression level is for lzo1x_999 only, not %s",
				    algorithms[alg].name);
	if (level < LZO_LEVEL_MIN || level > LZO_LEVEL_MAX)
		return qs_set_error(-EINVAL, "lzo: compression level %d not in %d..%d", level,
				    LZO_LEVEL_MIN, LZO_LEVEL_MAX);
	err = lzo_ready();
	if (err)
		return err;
	enc = lzo_encoder_get(len);
	if (!enc)
		return qs_set_error(-ENOMEM, "lzo: out of memory for a compressor");

	if (alg == LZO_ALG_1X_999)
		res = lzo1x_999_compress_level(src, len, enc->out, &out, enc->work, NULL, 0, 0, level);
	else
		res = algorithms[alg].compress(src, len, enc->out, &out, enc->work);
	if (res != LZO_E_OK)
		return qs_set_error(-EIO, "lzo: compression failed (error %d)", res);
	if (out > qs_comp_room(len, cap))
		return 0;

	/* lzo1x_optimize decompresses as it goes; dst (at least len bytes) is its scratch. */
	res = lzo1x_optimize(enc->out, out, dst, &check, NULL);
	if (res != LZO_E_OK || check != len)
		return qs_set_error(-EIO, "lzo: optimising the compressed block failed (error %d)", res);
	memcpy(dst, enc->out, out);
	return (ssize_t)out;
}

static size_t lzo_write_options(const struct qs_compress_params *p, uint8_t *buf)
{
	int level = p->level ? p->level : LZO_LEVEL_DEFAULT, alg = lzo_algorithm(p);

	if (alg == LZO_ALG_1X_999 && level == LZO_LEVEL_DEFAULT)
		return 0;
	sqfs_put32(buf, (uint32_t)alg);
	sqfs_put32(buf + 4, alg == LZO_ALG_1X_999 ? (uint32_t)level : 0);
	return LZO_OPTIONS_SIZE;
}

const struct qs_compressor qs_lzo_compressor = {
	.name = "lzo",
	.id = SQFS_COMP_LZO,
	.parse_options = lzo_parse_options,
	.decompress = lzo_decompress,
	.compress = lzo_compress,
	.write_options = lzo_write_options,
};
