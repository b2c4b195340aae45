/*
 * export.c - the export table: inode number to inode reference, which is
 * what lets NFS (and the mount) find an inode from its number alone.
 * Optional; mksquashfs writes it unless told -no-exports.
 */
#include <errno.h>

#include "internal.h"

int qs_export_table_load(struct qs_image *img)
{
	if (!(img->sb.flags & SQFS_FLAG_EXPORTABLE) || img->sb.export_table_start == SQFS_INVALID_TABLE)
		return 0;
	return qs_table_index_load(img, "export", img->sb.export_table_start, img->sb.export_table_start,
				   img->sb.inode_count, 8, &img->export_index, &img->export_index_count);
}

int qs_inode_by_number(struct qs_image *img, uint32_t ino, struct qs_inode *out)
{
	uint8_t raw[8];
	int err;

	if (!img->export_index)
		return qs_set_error(-ENOTSUP, "the image has no export table");
	if (ino == 0 || ino > img->sb.inode_count)
		return qs_set_error(-ENOENT, "inode %u does not exist", ino);
	err = qs_table_entry(img, "export", img->export_index, img->export_index_count, ino - 1, raw, 8);
	if (err)
		return err;
	err = qs_inode_read(img, sqfs_le64(raw), out);
	if (err)
		return err;
	if (out->ino != ino)
		return qs_set_error(-EIO, "export table entry of inode %u points at inode %u", ino, out->ino);
	return 0;
}
