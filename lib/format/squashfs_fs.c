/*
 * squashfs_fs.c - decoding and encoding the fixed-size on-disk structures.
 *
 * Field by field, little-endian, so nothing depends on the host's byte order
 * or on structure padding.
 */
#include "squashfs_fs.h"

void sqfs_super_decode(struct sqfs_super *s, const uint8_t b[SQFS_SUPER_SIZE])
{
	s->magic = sqfs_le32(b + 0);
	s->inode_count = sqfs_le32(b + 4);
	s->mkfs_time = sqfs_le32(b + 8);
	s->block_size = sqfs_le32(b + 12);
	s->fragment_count = sqfs_le32(b + 16);
	s->compressor = sqfs_le16(b + 20);
	s->block_log = sqfs_le16(b + 22);
	s->flags = sqfs_le16(b + 24);
	s->id_count = sqfs_le16(b + 26);
	s->version_major = sqfs_le16(b + 28);
	s->version_minor = sqfs_le16(b + 30);
	s->root_inode_ref = sqfs_le64(b + 32);
	s->bytes_used = sqfs_le64(b + 40);
	s->id_table_start = sqfs_le64(b + 48);
	s->xattr_id_table_start = sqfs_le64(b + 56);
	s->inode_table_start = sqfs_le64(b + 64);
	s->directory_table_start = sqfs_le64(b + 72);
	s->fragment_table_start = sqfs_le64(b + 80);
	s->export_table_start = sqfs_le64(b + 88);
}

void sqfs_super_encode(const struct sqfs_super *s, uint8_t b[SQFS_SUPER_SIZE])
{
	sqfs_put32(b + 0, s->magic);
	sqfs_put32(b + 4, s->inode_count);
	sqfs_put32(b + 8, s->mkfs_time);
	sqfs_put32(b + 12, s->block_size);
	sqfs_put32(b + 16, s->fragment_count);
	sqfs_put16(b + 20, s->compressor);
	sqfs_put16(b + 22, s->block_log);
	sqfs_put16(b + 24, s->flags);
	sqfs_put16(b + 26, s->id_count);
	sqfs_put16(b + 28, s->version_major);
	sqfs_put16(b + 30, s->version_minor);
	sqfs_put64(b + 32, s->root_inode_ref);
	sqfs_put64(b + 40, s->bytes_used);
	sqfs_put64(b + 48, s->id_table_start);
	sqfs_put64(b + 56, s->xattr_id_table_start);
	sqfs_put64(b + 64, s->inode_table_start);
	sqfs_put64(b + 72, s->directory_table_start);
	sqfs_put64(b + 80, s->fragment_table_start);
	sqfs_put64(b + 88, s->export_table_start);
}

void sqfs_dir_header_decode(struct sqfs_dir_header *h, const uint8_t b[SQFS_DIR_HEADER_SIZE])
{
	h->count = sqfs_le32(b + 0);
	h->start_block = sqfs_le32(b + 4);
	h->inode_number = sqfs_le32(b + 8);
}

void sqfs_dir_entry_decode(struct sqfs_dir_entry *e, const uint8_t b[SQFS_DIR_ENTRY_SIZE])
{
	e->offset = sqfs_le16(b + 0);
	e->inode_offset = (int16_t)sqfs_le16(b + 2);
	e->type = sqfs_le16(b + 4);
	e->size = sqfs_le16(b + 6);
}

void sqfs_dir_index_decode(struct sqfs_dir_index *i, const uint8_t b[SQFS_DIR_INDEX_SIZE])
{
	i->index = sqfs_le32(b + 0);
	i->start_block = sqfs_le32(b + 4);
	i->size = sqfs_le32(b + 8);
}

void sqfs_fragment_entry_decode(struct sqfs_fragment_entry *f, const uint8_t b[SQFS_FRAGMENT_ENTRY_SIZE])
{
	f->start = sqfs_le64(b + 0);
	f->size = sqfs_le32(b + 8);
	f->unused = sqfs_le32(b + 12);
}

void sqfs_xattr_id_decode(struct sqfs_xattr_id *x, const uint8_t b[SQFS_XATTR_ID_SIZE])
{
	x->ref = sqfs_le64(b + 0);
	x->count = sqfs_le32(b + 8);
	x->size = sqfs_le32(b + 12);
}

void sqfs_xattr_id_table_decode(struct sqfs_xattr_id_table *t, const uint8_t b[SQFS_XATTR_ID_TABLE_SIZE])
{
	t->kv_start = sqfs_le64(b + 0);
	t->count = sqfs_le32(b + 8);
	t->unused = sqfs_le32(b + 12);
}
