/*
 * super.c - the image's head: the superblock, then the compressor's
 * options as one uncompressed metadata block, as mksquashfs writes them.
 */
#include <string.h>

#include "super.h"

size_t super_head_size(size_t options_len)
{
	return SQFS_SUPER_SIZE + (options_len ? 2 + options_len : 0);
}

void super_encode_head(const struct sqfs_super *sb, const uint8_t *options, size_t options_len,
		       uint8_t *head)
{
	sqfs_super_encode(sb, head);
	if (options_len) {
		sqfs_put16(head + SQFS_SUPER_SIZE, (uint16_t)(options_len | SQFS_META_UNCOMPRESSED));
		memcpy(head + SQFS_SUPER_SIZE + 2, options, options_len);
	}
}
