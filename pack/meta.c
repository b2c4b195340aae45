/*
 * meta.c - the metadata block writer.
 *
 * Each block holds up to 8 KiB of the table's byte stream, compressed if
 * that makes it smaller, behind a 16-bit header carrying its stored size
 * and an "uncompressed" bit.  References into the stream are (start of
 * the block relative to the table) << 16 | offset within the block.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "sink.h"
#include "pack_util.h"

void meta_init(struct meta_writer *w, const struct qs_compressor *comp, const struct qs_compress_params *p)
{
	memset(w, 0, sizeof(*w));
	w->comp = comp;
	w->params = p;
}

void meta_free(struct meta_writer *w)
{
	free(w->out);
	free(w->starts);
	w->out = NULL;
	w->starts = NULL;
}

static int reserve(void **buf, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*buf, n * elem);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

int meta_flush(struct meta_writer *w)
{
	uint8_t *dst;
	ssize_t n;

	if (w->fill == 0)
		return 0;
	if (reserve((void **)&w->out, &w->out_cap, w->out_len + 2 + SQFS_META_SIZE, 1) < 0 ||
	    reserve((void **)&w->starts, &w->starts_cap, w->starts_count + 1, sizeof(*w->starts)) < 0)
		return -ENOMEM;
	w->starts[w->starts_count++] = w->out_len;
	dst = w->out + w->out_len;
	n = w->comp->compress(w->params, w->block, w->fill, dst + 2, SQFS_META_SIZE);
	if (n < 0) {
		pack_error("metadata compression failed: %s", qs_last_error());
		return (int)n;
	}
	if (n == 0 || (size_t)n >= w->fill) {
		memcpy(dst + 2, w->block, w->fill);
		sqfs_put16(dst, (uint16_t)(w->fill | SQFS_META_UNCOMPRESSED));
		n = (ssize_t)w->fill;
	} else {
		sqfs_put16(dst, (uint16_t)n);
	}
	w->out_len += 2 + (size_t)n;
	w->fill = 0;
	return 0;
}

int meta_write(struct meta_writer *w, const void *data, size_t len)
{
	const uint8_t *p = data;

	w->uncompressed += len;
	while (len > 0) {
		size_t n = SQFS_META_SIZE - w->fill;

		if (n > len)
			n = len;
		memcpy(w->block + w->fill, p, n);
		w->fill += n;
		p += n;
		len -= n;
		if (w->fill == SQFS_META_SIZE) {
			int err = meta_flush(w);

			if (err)
				return err;
		}
	}
	return 0;
}

int meta_write_table(struct pack_sink *sink, const struct qs_compressor *comp,
		     const struct qs_compress_params *p, const uint8_t *entries, size_t len, uint64_t *start)
{
	struct meta_writer w;
	uint64_t base = sink->written;
	uint8_t *index = NULL;
	int err;

	meta_init(&w, comp, p);
	err = meta_write(&w, entries, len);
	if (!err)
		err = meta_flush(&w);
	if (!err)
		err = sink_append(sink, w.out, w.out_len);
	if (!err && !(index = malloc(w.starts_count * 8 + 1)))
		err = -ENOMEM;
	if (!err) {
		for (size_t i = 0; i < w.starts_count; i++)
			sqfs_put64(index + 8 * i, base + w.starts[i]);
		*start = sink->written;
		err = sink_append(sink, index, w.starts_count * 8);
	}
	free(index);
	meta_free(&w);
	return err;
}
