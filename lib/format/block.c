/*
 * block.c - reading one block of the image and decompressing it, through
 * the block cache.
 *
 * Two kinds of block exist.  A metadata block starts with a 16-bit header
 * (bit 15: stored uncompressed; low 15 bits: stored size) and holds at most
 * 8 KiB once decompressed; blocks of a table follow each other, so each
 * cached metadata block also records where the next one starts.  A data or
 * fragment block has its size word stored elsewhere (block list, fragment
 * table: bit 24 uncompressed, low 24 bits size) and holds at most one
 * block_size once decompressed.
 *
 * The compressed bytes are read into a per-thread scratch buffer, so reading
 * and decompressing need no allocation but the cached result.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Compressed input of one block never exceeds a data block (1 MiB) plus a metadata header. */
#define SCRATCH_MAX ((1u << SQFS_BLOCK_LOG_MAX) + 2)

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_key_create(void)
{
	pthread_key_create(&scratch_key, free);
}

static uint8_t *scratch_buffer(void)
{
	uint8_t *buf;

	pthread_once(&scratch_once, scratch_key_create);
	buf = pthread_getspecific(scratch_key);
	if (!buf) {
		buf = malloc(SCRATCH_MAX);
		if (buf && pthread_setspecific(scratch_key, buf) != 0) {
			free(buf);
			buf = NULL;
		}
	}
	return buf;
}

int qs_image_pread(struct qs_image *img, void *buf, size_t len, uint64_t pos)
{
	if (pos > img->sb.bytes_used || len > img->sb.bytes_used - pos)
		return qs_set_error(-EIO, "read of %zu bytes at %llu lies outside the image (%llu bytes)", len,
				    (unsigned long long)pos, (unsigned long long)img->sb.bytes_used);
	return qs_source_pread(img->src, buf, len, img->info.offset + pos);
}

struct load_request {
	struct qs_image *img;
	uint64_t pos;
	uint32_t word;                  /* data: stored size word */
	const uint8_t *stored;          /* data: its stored bytes, read already (warm.c), or NULL */
	bool loaded;                    /* the loader ran (a miss), not a hit */
};

/* Decompress 'len' bytes from src into a new buffer of 'cap' bytes owned by the block. */
static int decompress_into(struct qs_image *img, struct qs_block *b, const uint8_t *src, size_t len,
			   size_t cap, const char *what, uint64_t pos)
{
	ssize_t n;

	b->data = qs_cache_buffer(b, cap);
	if (!b->data)
		return qs_set_error(-ENOMEM, "out of memory");
	n = img->comp->decompress(&img->comp_opts, src, len, b->data, cap);
	if (n < 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", qs_last_error());
		return qs_set_error((int)n, "%s block at %llu: %s", what, (unsigned long long)pos, why);
	}
	b->size = (size_t)n;
	b->charge = cap;
	return 0;
}

static int load_metadata(void *ctx, struct qs_block *b)
{
	struct load_request *r = ctx;
	struct qs_image *img = r->img;
	uint8_t *buf = scratch_buffer();
	uint64_t avail = img->sb.bytes_used - r->pos;

	r->loaded = true;
	size_t want = avail < SQFS_META_SIZE + 2 ? (size_t)avail : SQFS_META_SIZE + 2;
	uint16_t header;
	size_t len;
	int err;

	if (!buf)
		return qs_set_error(-ENOMEM, "out of memory");
	if (want < 2)
		return qs_set_error(-EIO, "metadata block at %llu lies outside the image",
				    (unsigned long long)r->pos);
	err = qs_image_pread(img, buf, want, r->pos);
	if (err)
		return err;
	header = sqfs_le16(buf);
	len = header & SQFS_META_SIZE_MASK;
	if (len == 0 || len > SQFS_META_SIZE || len > want - 2)
		return qs_set_error(-EIO, "metadata block at %llu has a bad size (%zu bytes)",
				    (unsigned long long)r->pos, len);
	b->aux = r->pos + 2 + len;
	if (header & SQFS_META_UNCOMPRESSED) {
		b->data = qs_cache_buffer(b, len);
		if (!b->data)
			return qs_set_error(-ENOMEM, "out of memory");
		memcpy(b->data, buf + 2, len);
		b->size = len;
		return 0;
	}
	return decompress_into(img, b, buf + 2, len, SQFS_META_SIZE, "metadata", r->pos);
}

int qs_metadata_block(struct qs_image *img, uint64_t pos, struct qs_block **out)
{
	struct load_request r = { .img = img, .pos = pos };

	if (pos >= img->sb.bytes_used)
		return qs_set_error(-EIO, "metadata block at %llu lies outside the image (%llu bytes)",
				    (unsigned long long)pos, (unsigned long long)img->sb.bytes_used);
	/* Key b's low 32 bits 0 mark metadata; data keys always carry a non-zero size word there. */
	return qs_cache_get(img->cache, pos, img->cache_tag, load_metadata, &r, out);
}

static int load_data(void *ctx, struct qs_block *b)
{
	struct load_request *r = ctx;
	struct qs_image *img = r->img;
	size_t len = r->word & SQFS_BLOCK_SIZE_MASK;
	uint8_t *buf;
	int err;

	r->loaded = true;
	if (r->word & SQFS_BLOCK_UNCOMPRESSED) {
		b->data = qs_cache_buffer(b, len);
		if (!b->data)
			return qs_set_error(-ENOMEM, "out of memory");
		b->size = len;
		return qs_image_pread(img, b->data, len, r->pos);
	}
	if (r->stored)
		return decompress_into(img, b, r->stored, len, img->sb.block_size, "data", r->pos);
	buf = scratch_buffer();
	if (!buf)
		return qs_set_error(-ENOMEM, "out of memory");
	err = qs_image_pread(img, buf, len, r->pos);
	if (err)
		return err;
	return decompress_into(img, b, buf, len, img->sb.block_size, "data", r->pos);
}

int qs_data_block(struct qs_image *img, uint64_t pos, uint32_t word, struct qs_block **out)
{
	struct load_request r = { .img = img, .pos = pos, .word = word };
	size_t len = word & SQFS_BLOCK_SIZE_MASK;

	if (len == 0 || len > img->sb.block_size || (word & ~(SQFS_BLOCK_SIZE_MASK | SQFS_BLOCK_UNCOMPRESSED)))
		return qs_set_error(-EIO, "data block at %llu has a bad size word 0x%x",
				    (unsigned long long)pos, word);
	if (pos > img->sb.bytes_used || len > img->sb.bytes_used - pos)
		return qs_set_error(-EIO, "data block at %llu (%zu bytes) lies outside the image",
				    (unsigned long long)pos, len);
	return qs_cache_get(img->cache, pos, img->cache_tag | word, load_data, &r, out);
}

/* Blocks loaded ahead of their reads (warm.c): 1 if loaded now, 0 if cached already, or -errno. */
int qs_data_block_ahead(struct qs_image *img, uint64_t pos, uint32_t word, const void *stored)
{
	struct load_request r = { .img = img, .pos = pos, .word = word, .stored = stored };
	size_t len = word & SQFS_BLOCK_SIZE_MASK;
	struct qs_block *b;
	int err;

	if (len == 0 || len > img->sb.block_size || pos > img->sb.bytes_used || len > img->sb.bytes_used - pos)
		return qs_set_error(-EIO, "data block at %llu: bad size word 0x%x", (unsigned long long)pos, word);
	err = qs_cache_get(img->cache, pos, img->cache_tag | word, load_data, &r, &b);
	if (err < 0)
		return err;
	qs_cache_release(img->cache, b);
	return r.loaded;
}

int qs_metadata_block_ahead(struct qs_image *img, uint64_t pos, uint64_t *next)
{
	struct load_request r = { .img = img, .pos = pos };
	struct qs_block *b;
	int err;

	if (pos >= img->sb.bytes_used)
		return qs_set_error(-EIO, "metadata block at %llu lies outside the image", (unsigned long long)pos);
	err = qs_cache_get(img->cache, pos, img->cache_tag, load_metadata, &r, &b);
	if (err < 0)
		return err;
	*next = b->aux;
	qs_cache_release(img->cache, b);
	return r.loaded;
}

static struct qs_block zero_block;
static pthread_once_t zero_once = PTHREAD_ONCE_INIT;

/* calloc() of 1 MiB maps zero pages: no memory is used until read, and reads share one page. */
static void zero_block_create(void)
{
	zero_block.data = calloc(1, (size_t)1 << SQFS_BLOCK_LOG_MAX);
	zero_block.size = zero_block.data ? (size_t)1 << SQFS_BLOCK_LOG_MAX : 0;
}

struct qs_block *qs_zero_block(void)
{
	pthread_once(&zero_once, zero_block_create);
	return zero_block.data ? &zero_block : NULL;
}

void qs_block_release(struct qs_image *img, struct qs_block *block)
{
	(void)img;
	if (block && block != &zero_block)
		qs_cache_release(block->owner, block);
}

void qs_block_release_passed(struct qs_image *img, struct qs_block *block, const void *data, size_t len)
{
	(void)img;
	if (block && block != &zero_block && data == block->data && len == block->size)
		qs_cache_drop(block->owner, block);
	else
		qs_block_release(img, block);
}
