/*
 * warm.c - decompressing a profile's blocks before the workload asks.
 *
 * On a fresh mount a read costs several times what it costs once its block
 * is in the cache, most of it decompression (docs/benchmarks.md, "The
 * mount's defaults").  With a prefetch profile the source knows which bytes
 * are coming, and in which order (qs_source_replayed()); one thread per
 * image walks those ranges as they arrive and decompresses their blocks
 * into the image's cache, so that the workload's reads find them there.
 *
 * The profile records byte ranges, not blocks.  The ranges begin where a
 * read of a block began, and a zstd block is a frame that says where it
 * ends, so the walk goes from frame to frame without reading any inode; a
 * data block's cache key is its position and its stored size word
 * (block.c), which the frame gives.  A guess that is wrong (a range
 * beginning inside a block, a block stored uncompressed: its word carries
 * the flag the guess lacks) makes an entry no read will ask for: bytes of
 * cache, never a wrong answer, since an entry is what loading that key
 * would give.  Metadata blocks carry their length in their header and are
 * walked the same way.  Codecs whose blocks do not say where they end
 * (gzip, xz, lz4, lzo) are not warmed.
 *
 * The thread stops at the end of the profile, when it has decompressed
 * WARM_SHARE_NUM / WARM_SHARE_DEN of the cache's limit, or when the image
 * closes.  Each step copies up to a block's size from the source to find
 * the next frame's end, and decompresses from that copy.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"
#include "source.h"

/*
 * The most a warm thread decompresses, as a fraction of the cache's limit:
 * blocks the workload has not read yet must not push each other out.  The
 * fleet bench's workload reads 43 MiB of blocks; the default cache holds
 * 64 MiB.
 */
#define WARM_SHARE_NUM 3u
#define WARM_SHARE_DEN 4u

/* Decompress the data blocks that follow each other from pos, up to end. */
static void warm_data(struct qs_image *img, uint8_t *buf, uint64_t pos, uint64_t end, uint64_t *done)
{
	size_t cap = img->sb.block_size;

	while (pos < end && !__atomic_load_n(&img->warm_stop, __ATOMIC_RELAXED)) {
		size_t n = end - pos < cap ? (size_t)(end - pos) : cap;
		ssize_t len;
		int loaded;

		if (qs_image_pread(img, buf, n, pos) < 0)
			return;
		len = img->comp->frame_size(buf, n);
		if (len <= 0 || (size_t)len > cap)
			return;         /* not a block boundary, or stored uncompressed: the walk ends */
		loaded = qs_data_block_ahead(img, pos, (uint32_t)len, buf);   /* not read twice */
		if (loaded < 0)
			return;
		if (loaded) {
			__atomic_fetch_add(&img->warmed, 1, __ATOMIC_RELAXED);
			*done += cap;   /* what the cache charges a data block */
		}
		pos += (uint64_t)len;
	}
}

/*
 * Decompress the metadata blocks that follow each other from pos, as long
 * as the bytes their load reads (SQFS_META_SIZE + 2 from the header, as
 * block.c's load_metadata()) lie before end: bytes past the replay's
 * would be fetched, in whole chunks, in the middle of the workload.
 */
static void warm_metadata(struct qs_image *img, uint64_t pos, uint64_t end, uint64_t *done)
{
	while (!__atomic_load_n(&img->warm_stop, __ATOMIC_RELAXED)) {
		uint64_t want = img->sb.bytes_used - pos < SQFS_META_SIZE + 2 ? img->sb.bytes_used - pos
									   : SQFS_META_SIZE + 2;
		uint64_t next;
		int loaded;

		if (pos >= end || want > end - pos)
			return;
		loaded = qs_metadata_block_ahead(img, pos, &next);
		if (loaded < 0)
			return;
		if (loaded) {
			__atomic_fetch_add(&img->warmed, 1, __ATOMIC_RELAXED);
			*done += SQFS_META_SIZE;
		}
		if (next <= pos)
			return;
		pos = next;
	}
}

/* The end of the inode and directory tables: the first table after them. */
static uint64_t listing_end(const struct sqfs_super *sb)
{
	uint64_t end = sb->bytes_used;
	uint64_t after[] = { sb->fragment_table_start, sb->export_table_start, sb->id_table_start,
			     sb->xattr_id_table_start };

	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++)
		if (after[i] > sb->directory_table_start && after[i] < end)
			end = after[i];
	return end;
}

static void *warm_main(void *arg)
{
	struct qs_image *img = arg;
	uint64_t start = img->info.offset, meta = img->sb.inode_table_start, meta_end = listing_end(&img->sb);
	uint64_t done = 0, budget, off, len;
	struct qs_cache_stats st;
	size_t next = 0;
	uint8_t *buf = malloc(img->sb.block_size);

	if (!buf)
		return NULL;
	qs_cache_stats(img->cache, &st);
	budget = st.limit / WARM_SHARE_DEN * WARM_SHARE_NUM;
	/* The source's waits end within 100 ms of the flag (qs_image_close()). */
	qs_source_set_interrupt(&img->warm_stop);
	while (done < budget && qs_source_replayed(img->src, &next, &off, &len) > 0) {
		uint64_t end;

		if (off + len <= start)
			continue;
		if (off < start) {
			len -= start - off;
			off = start;
		}
		off -= start;
		end = off + len < img->sb.bytes_used ? off + len : img->sb.bytes_used;
		if (off >= meta && off < meta_end)
			warm_metadata(img, off, end < meta_end ? end : meta_end, &done);
		else if (off < meta)
			warm_data(img, buf, off, end < meta ? end : meta, &done);
	}
	qs_source_set_interrupt(NULL);
	free(buf);
	return NULL;
}

void qs_warm_start(struct qs_image *img)
{
	if (!img->comp->frame_size || !img->src->ops->replayed)
		return;
	img->warm_stop = false;
	img->warming = pthread_create(&img->warmer, NULL, warm_main, img) == 0;
}

void qs_warm_stop(struct qs_image *img)
{
	if (!img->warming)
		return;
	__atomic_store_n(&img->warm_stop, true, __ATOMIC_RELAXED);
	pthread_join(img->warmer, NULL);
	img->warming = false;
}
