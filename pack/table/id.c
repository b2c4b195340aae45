/*
 * id.c - the id table: every distinct uid and gid once, in order of first
 * use, each inode naming its owner and group by 16-bit index.
 */
#include <errno.h>
#include <stdlib.h>

#include "image.h"
#include "format/squashfs_fs.h"
#include "base/util.h"

#define ID_COUNT_MAX 65536u     /* the index is 16 bits */

int id_index(struct id_table *t, uint32_t id, uint16_t *index)
{
	/* Trees have few owners; a linear scan beats any structure here. */
	for (uint32_t i = 0; i < t->count; i++) {
		if (t->ids[i] == id) {
			*index = (uint16_t)i;
			return 0;
		}
	}
	if (t->count == ID_COUNT_MAX) {
		pack_error("more than %u distinct owners and groups", ID_COUNT_MAX);
		return -EOVERFLOW;
	}
	if (t->count == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		void *p = realloc(t->ids, cap * sizeof(*t->ids));

		if (!p)
			return -ENOMEM;
		t->ids = p;
		t->cap = cap;
	}
	t->ids[t->count] = id;
	*index = (uint16_t)t->count++;
	return 0;
}

int id_table_write(struct image_writer *iw, struct pack_sink *sink, uint64_t *start)
{
	uint8_t *buf = malloc((size_t)iw->ids.count * 4 + 1);
	int err;

	if (!buf)
		return -ENOMEM;
	for (uint32_t i = 0; i < iw->ids.count; i++)
		sqfs_put32(buf + 4 * i, iw->ids.ids[i]);
	/* mksquashfs -noI stores the ids uncompressed as well as -noId does. */
	err = meta_write_table(sink, image_comp(iw, SQFS_FLAG_UNCOMPRESSED_INODES | SQFS_FLAG_UNCOMPRESSED_IDS),
			       iw->params, iw->jobs, buf, (size_t)iw->ids.count * 4, start);
	free(buf);
	return err;
}
