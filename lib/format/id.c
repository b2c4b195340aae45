/*
 * id.c - the id table: the uids and gids of the image, stored once each and
 * referred to from inodes by a 16-bit index.  Small (at most 64 Ki entries),
 * so it is read whole at open.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

int qs_id_table_load(struct qs_image *img)
{
	uint16_t count = img->sb.id_count;
	uint32_t index_count;
	uint64_t *index;
	int err;

	if (count == 0)
		return qs_set_error(-EIO, "the id table is empty");
	err = qs_table_index_load(img, "id", img->sb.id_table_start, img->sb.id_table_start, count, 4, &index,
				  &index_count);
	if (err)
		return err;
	img->ids = malloc(count * sizeof(*img->ids));
	if (!img->ids) {
		free(index);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < count && !err; i++) {
		uint8_t raw[4];

		err = qs_table_entry(img, "id", index, index_count, i, raw, 4);
		img->ids[i] = sqfs_le32(raw);
	}
	free(index);
	return err;
}

int qs_id_lookup(struct qs_image *img, uint16_t index, uint32_t *id)
{
	if (index >= img->sb.id_count)
		return qs_set_error(-EIO, "id index %u is outside the id table (%u entries)", index,
				    img->sb.id_count);
	*id = img->ids[index];
	return 0;
}
