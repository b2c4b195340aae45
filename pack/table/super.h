/*
 * super.h - encoding the image's first bytes.
 */
#ifndef QUASH_PACK_SUPER_H
#define QUASH_PACK_SUPER_H

#include <stddef.h>
#include <stdint.h>

#include "format/squashfs_fs.h"

/* Bytes of superblock plus options block; the writer reserves them first. */
size_t super_head_size(size_t options_len);
void super_encode_head(const struct sqfs_super *sb, const uint8_t *options, size_t options_len,
		       uint8_t *head);

#endif
