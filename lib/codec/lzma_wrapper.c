/*
 * lzma_wrapper.c - squashfs "lzma": each block is a legacy .lzma ("alone")
 * stream: 13-byte header (properties byte, u32 dictionary size, u64
 * uncompressed size) then LZMA1 data.  Only squashfs-tools reads these; the
 * kernel has no lzma support.
 *
 * There is no options block.  Like mksquashfs we encode with preset 5 and a
 * dictionary of the block size, then write the real uncompressed size into
 * the header (liblzma's encoder leaves it "unknown" and ends the data with
 * an end marker; decoders accept both, and squashfs-tools expects the size).
 */
#include <errno.h>

#include "liblzma_block.h"
#include "squashfs_fs.h"

#define LZMA_HEADER_SIZE	13
#define LZMA_SIZE_OFFSET	5	/* of the u64 uncompressed size in the header */
#define LZMA_SIZE_UNKNOWN	UINT64_MAX
#define LZMA_PRESET_SQUASHFS	5
#define LZMA_PRESET_MAX		9

static int lzma_parse_options(const uint8_t *buf, size_t len, struct qs_comp_options *out)
{
	(void)buf;
	*out = (struct qs_comp_options){ 0 };
	if (len != 0)
		return qs_set_error(-EINVAL, "lzma options: unexpected options block of %zu bytes", len);
	return 0;
}

static ssize_t lzma_decompress(const struct qs_comp_options *opt, const void *src, size_t len,
			       void *dst, size_t cap)
{
	struct qs_lzma_streams *s;
	uint64_t size;

	(void)opt;
	if (len < LZMA_HEADER_SIZE)
		return qs_set_error(-EIO, "lzma: block of %zu bytes is shorter than its header", len);
	size = sqfs_le64((const uint8_t *)src + LZMA_SIZE_OFFSET);
	if (size != LZMA_SIZE_UNKNOWN && size > cap)
		return qs_set_error(-EIO, "lzma: block claims %llu bytes, more than %zu",
				    (unsigned long long)size, cap);
	s = qs_lzma_streams_get(QS_SLOT_LZMA);
	if (!s)
		return -ENOMEM;
	return qs_lzma_decode(&s->dec, lzma_alone_decoder(&s->dec, QS_LZMA_MEMLIMIT), "lzma",
			      src, len, dst, cap);
}

static ssize_t lzma_compress(const struct qs_compress_params *p, const void *src, size_t len,
			     void *dst, size_t cap)
{
	uint32_t preset = p->level ? (uint32_t)p->level : LZMA_PRESET_SQUASHFS;
	uint32_t dict_size = p->block_size ? p->block_size : (uint32_t)len;
	struct qs_lzma_streams *s;
	lzma_options_lzma opt;
	ssize_t n;

	if (p->level < 0 || preset > LZMA_PRESET_MAX || lzma_lzma_preset(&opt, preset))
		return qs_set_error(-EINVAL, "lzma: preset %d not in 1..%d", p->level, LZMA_PRESET_MAX);
	opt.dict_size = dict_size < LZMA_DICT_SIZE_MIN ? LZMA_DICT_SIZE_MIN : dict_size;
	s = qs_lzma_streams_get(QS_SLOT_LZMA);
	if (!s)
		return -ENOMEM;

	n = qs_lzma_encode(&s->enc, lzma_alone_encoder(&s->enc, &opt), "lzma", src, len, dst,
			   qs_comp_room(len, cap));
	if (n > 0)
		sqfs_put64((uint8_t *)dst + LZMA_SIZE_OFFSET, len);
	return n;
}

static size_t lzma_write_options(const struct qs_compress_params *p, uint8_t *buf)
{
	(void)p;
	(void)buf;
	return 0;
}

const struct qs_compressor qs_lzma_compressor = {
	.name = "lzma",
	.id = SQFS_COMP_LZMA,
	.parse_options = lzma_parse_options,
	.decompress = lzma_decompress,
	.compress = lzma_compress,
	.write_options = lzma_write_options,
};
