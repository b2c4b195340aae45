/*
 * export.c - the export table: inode number -> inode reference, which
 * lets NFS (and quash's own lookups by number) find any inode directly.
 */
#include <errno.h>
#include <stdlib.h>

#include "image.h"
#include "squashfs_fs.h"

int export_table_write(struct image_writer *iw, struct pack_sink *sink, uint64_t *start)
{
	uint8_t *buf = malloc((size_t)iw->inode_count * 8 + 1);
	int err;

	if (!buf)
		return -ENOMEM;
	for (uint32_t i = 0; i < iw->inode_count; i++)
		sqfs_put64(buf + 8 * i, iw->export[i]);
	err = meta_write_table(sink, image_comp(iw, SQFS_FLAG_UNCOMPRESSED_INODES), iw->params, iw->jobs, buf, (size_t)iw->inode_count * 8, start);
	free(buf);
	return err;
}
