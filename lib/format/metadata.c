/*
 * metadata.c - reading through chains of metadata blocks, and the indexed
 * tables built from them.
 *
 * Inodes, directory listings and xattrs are addressed as (block, offset)
 * and may straddle block boundaries; a cursor follows the chain.  The id,
 * fragment, export and xattr id tables are arrays of fixed-size entries in
 * metadata blocks, found through an index of 64-bit block positions that
 * the superblock points at.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int qs_meta_read(struct qs_meta_cursor *c, void *buf, size_t len)
{
	uint8_t *out = buf;

	while (len > 0) {
		struct qs_block *b;
		size_t n;
		int err = qs_metadata_block(c->img, c->block, &b);

		if (err)
			return err;
		if (c->offset >= b->size) {
			/* Only a position exactly at a block's end may move on to the next block. */
			int bad = c->offset > b->size;

			c->offset = 0;
			c->block = b->aux;
			qs_block_release(c->img, b);
			if (bad)
				return qs_set_error(-EIO, "metadata offset past the end of its block");
			continue;
		}
		n = b->size - c->offset;
		if (n > len)
			n = len;
		if (out) {
			memcpy(out, (uint8_t *)b->data + c->offset, n);
			out += n;
		}
		c->offset += (uint32_t)n;
		len -= n;
		qs_block_release(c->img, b);
	}
	return 0;
}

int qs_meta_skip(struct qs_meta_cursor *c, size_t len)
{
	return qs_meta_read(c, NULL, len);
}

int qs_meta_read_held(struct qs_meta_cursor *c, const struct qs_block *held, void *buf, size_t len)
{
	/* A metadata block's cache key is its image position (block.c). */
	if (!held || held->key_a != c->block || c->offset > held->size || len > held->size - c->offset)
		return qs_meta_read(c, buf, len);
	memcpy(buf, (const uint8_t *)held->data + c->offset, len);
	c->offset += (uint32_t)len;
	return 0;
}

int qs_table_index_load(struct qs_image *img, const char *what, uint64_t index_pos, uint64_t blocks_end,
			uint64_t count, size_t entry_size, uint64_t **index, uint32_t *index_count)
{
	uint64_t blocks = (count * entry_size + SQFS_META_SIZE - 1) / SQFS_META_SIZE;
	uint8_t *raw;
	uint64_t *table;
	int err;

	*index = NULL;
	*index_count = 0;
	if (blocks == 0)
		return 0;
	if (blocks > QS_TABLE_INDEX_MAX || index_pos >= img->sb.bytes_used ||
	    blocks * 8 > img->sb.bytes_used - index_pos)
		return qs_set_error(-EIO, "%s table index at %llu (%llu blocks) lies outside the image", what,
				    (unsigned long long)index_pos, (unsigned long long)blocks);
	raw = malloc(blocks * 8);
	table = malloc(blocks * sizeof(*table));
	if (!raw || !table) {
		free(raw);
		free(table);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	err = qs_image_pread(img, raw, blocks * 8, index_pos);
	if (err) {
		free(raw);
		free(table);
		return err;
	}
	for (uint64_t i = 0; i < blocks; i++)
		table[i] = sqfs_le64(raw + i * 8);
	free(raw);

	/*
	 * As the kernel checks: the blocks come in order, just before their
	 * index, each no longer than a full metadata block.
	 */
	for (uint64_t i = 0; i < blocks; i++) {
		uint64_t end = i + 1 < blocks ? table[i + 1] : blocks_end;

		if (table[i] >= end || end - table[i] > SQFS_META_SIZE + 2) {
			free(table);
			return qs_set_error(-EIO, "%s table index entry %llu is corrupt", what,
					    (unsigned long long)i);
		}
	}
	*index = table;
	*index_count = (uint32_t)blocks;
	return 0;
}

int qs_table_entry(struct qs_image *img, const char *what, const uint64_t *index, uint32_t index_count,
		   uint64_t n, void *buf, size_t entry_size)
{
	uint64_t byte = n * entry_size;
	uint64_t block = byte / SQFS_META_SIZE;
	struct qs_meta_cursor c;

	if (block >= index_count)
		return qs_set_error(-EIO, "%s %llu is outside its table", what, (unsigned long long)n);
	qs_meta_cursor_init(&c, img, index[block], (uint32_t)(byte % SQFS_META_SIZE));
	return qs_meta_read(&c, buf, entry_size);
}
