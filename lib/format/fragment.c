/*
 * fragment.c - the fragment table: where each fragment block lies.
 *
 * A fragment block packs the tails of several files (and small files
 * whole); an inode names its fragment by index and the tail by offset.  Only
 * the index of the table is read at open; entries are read on demand
 * through the metadata cache.
 */
#include <errno.h>

#include "internal.h"

int qs_fragment_table_load(struct qs_image *img)
{
	if (img->sb.fragment_count == 0)
		return 0;
	return qs_table_index_load(img, "fragment", img->sb.fragment_table_start,
				   img->sb.fragment_table_start, img->sb.fragment_count,
				   SQFS_FRAGMENT_ENTRY_SIZE, &img->fragment_index, &img->fragment_index_count);
}

int qs_fragment_lookup(struct qs_image *img, uint32_t index, struct sqfs_fragment_entry *out)
{
	uint8_t raw[SQFS_FRAGMENT_ENTRY_SIZE];
	int err;

	if (index >= img->sb.fragment_count)
		return qs_set_error(-EIO, "fragment %u does not exist (%u fragments)", index,
				    img->sb.fragment_count);
	err = qs_table_entry(img, "fragment", img->fragment_index, img->fragment_index_count, index, raw,
			     sizeof(raw));
	if (err)
		return err;
	sqfs_fragment_entry_decode(out, raw);
	return 0;
}

int qs_fragment_get(struct qs_image *img, uint32_t index, uint64_t *start, uint32_t *size_word)
{
	struct sqfs_fragment_entry e;
	int err = qs_fragment_lookup(img, index, &e);

	if (err)
		return err;
	if ((e.size & SQFS_BLOCK_SIZE_MASK) == 0 || (e.size & SQFS_BLOCK_SIZE_MASK) > img->sb.block_size ||
	    (e.size & ~(SQFS_BLOCK_SIZE_MASK | SQFS_BLOCK_UNCOMPRESSED)) ||
	    e.start > img->sb.bytes_used || (e.size & SQFS_BLOCK_SIZE_MASK) > img->sb.bytes_used - e.start)
		return qs_set_error(-EIO, "fragment %u: bad position or size word 0x%x", index, e.size);
	*start = e.start;
	*size_word = e.size;
	return 0;
}
