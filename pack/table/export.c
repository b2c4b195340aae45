/*
 * export.c - the export table: inode number -> inode reference, which
 * lets NFS (and quash's own lookups by number) find any inode directly.
 */
#include <errno.h>
#include <stdlib.h>

#include "image.h"
#include "tree/spill.h"
#include "format/squashfs_fs.h"

/* The references [off / 8, (off + len) / 8), little-endian; under --memory, read once and let go. */
static void fill(void *arg, uint8_t *buf, size_t off, size_t len)
{
	struct image_writer *iw = arg;
	const uint64_t *refs = iw->export + off / 8;

	for (size_t i = 0; i < len / 8; i++)
		sqfs_put64(buf + 8 * i, refs[i]);
	if (iw->tree && iw->tree->spill && iw->tree->spill->region_count)
		spill_check_at(iw->tree->spill, refs + len / 8 - 1);
}

int export_table_write(struct image_writer *iw, struct pack_sink *sink, uint64_t *start)
{
	return meta_write_table_from(sink, image_comp(iw, SQFS_FLAG_UNCOMPRESSED_INODES), iw->params, iw->jobs,
				     (size_t)iw->inode_count * 8, fill, iw, start);
}
