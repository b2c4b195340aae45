/*
 * xattr.c - the xattr table.
 *
 * Inodes name their xattrs by an id; the id table (indexed like the other
 * tables) gives for each id the position of its key/value pairs in the
 * key/value metadata that starts at kv_start, and how many pairs there are.
 * A key is a 16-bit type (its prefix: user, trusted, security; bit 8: the
 * value is stored out of line), a 16-bit length and the name without its
 * prefix; a value is a 32-bit length and the bytes, or for an out-of-line
 * value a 64-bit reference to where the value lies, so that equal values
 * are stored once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const prefixes[] = {
	[SQFS_XATTR_USER] = "user.",
	[SQFS_XATTR_TRUSTED] = "trusted.",
	[SQFS_XATTR_SECURITY] = "security.",
};

#define XATTR_NAME_MAX 255            /* Linux's XATTR_NAME_MAX, prefix included */
#define XATTR_TOTAL_MAX (1u << 20)    /* all values of one inode; Linux's listxattr limit is 64 KiB */

int qs_xattr_table_load(struct qs_image *img)
{
	uint8_t raw[SQFS_XATTR_ID_TABLE_SIZE];
	struct sqfs_xattr_id_table *t = &img->xattr_table;
	int err;

	if (img->sb.xattr_id_table_start == SQFS_INVALID_TABLE)
		return 0;
	err = qs_image_pread(img, raw, sizeof(raw), img->sb.xattr_id_table_start);
	if (err)
		return err;
	sqfs_xattr_id_table_decode(t, raw);
	if (t->count == 0)
		return 0;
	if (t->kv_start >= img->sb.xattr_id_table_start) {
		t->count = 0;
		return qs_set_error(-EIO, "xattr table starts after its own index");
	}
	err = qs_table_index_load(img, "xattr id", img->sb.xattr_id_table_start + SQFS_XATTR_ID_TABLE_SIZE,
				  img->sb.xattr_id_table_start, t->count, SQFS_XATTR_ID_SIZE,
				  &img->xattr_index, &img->xattr_index_count);
	if (err)
		t->count = 0;
	return err;
}

int qs_xattr_id_lookup(struct qs_image *img, uint32_t index, struct sqfs_xattr_id *out)
{
	uint8_t raw[SQFS_XATTR_ID_SIZE];
	int err;

	if (index >= img->xattr_table.count)
		return qs_set_error(-EIO, "xattr id %u is outside the xattr table", index);
	err = qs_table_entry(img, "xattr id", img->xattr_index, img->xattr_index_count, index, raw,
			     sizeof(raw));
	if (err)
		return err;
	sqfs_xattr_id_decode(out, raw);
	return 0;
}

/* The cursor at a key/value reference (relative to kv_start). */
static int kv_cursor(struct qs_image *img, uint64_t ref, struct qs_meta_cursor *c)
{
	uint64_t block = sqfs_ref_block(ref);

	if (block >= img->sb.xattr_id_table_start - img->xattr_table.kv_start ||
	    sqfs_ref_offset(ref) >= SQFS_META_SIZE)
		return qs_set_error(-EIO, "xattr reference 0x%llx lies outside the xattr table",
				    (unsigned long long)ref);
	qs_meta_cursor_init(c, img, img->xattr_table.kv_start + block, sqfs_ref_offset(ref));
	return 0;
}

static int read_value(struct qs_meta_cursor *c, struct qs_xattr *x, size_t *total)
{
	uint8_t raw[4];
	uint32_t len;
	int err = qs_meta_read(c, raw, 4);

	if (err)
		return err;
	len = sqfs_le32(raw);
	if (len > QS_XATTR_VALUE_MAX || len > XATTR_TOTAL_MAX - *total)
		return qs_set_error(-EIO, "xattr value of %u bytes is too large", len);
	*total += len;
	x->value = malloc(len ? len : 1);
	if (!x->value)
		return qs_set_error(-ENOMEM, "out of memory");
	x->value_len = len;
	return qs_meta_read(c, x->value, len);
}

static int read_pair(struct qs_image *img, struct qs_meta_cursor *c, struct qs_xattr *x, size_t *total)
{
	uint8_t raw[8];
	uint16_t type, len;
	size_t plen;
	int err = qs_meta_read(c, raw, 4);

	if (err)
		return err;
	type = sqfs_le16(raw);
	len = sqfs_le16(raw + 2);
	if ((type & SQFS_XATTR_PREFIX_MASK) > SQFS_XATTR_SECURITY ||
	    (type & ~(SQFS_XATTR_PREFIX_MASK | SQFS_XATTR_VALUE_OOL)))
		return qs_set_error(-EIO, "xattr has an unknown type 0x%x", type);
	plen = strlen(prefixes[type & SQFS_XATTR_PREFIX_MASK]);
	if (len == 0 || plen + len > XATTR_NAME_MAX)
		return qs_set_error(-EIO, "xattr name of %u bytes is invalid", len);
	x->name = malloc(plen + len + 1);
	if (!x->name)
		return qs_set_error(-ENOMEM, "out of memory");
	memcpy(x->name, prefixes[type & SQFS_XATTR_PREFIX_MASK], plen);
	err = qs_meta_read(c, x->name + plen, len);
	if (err)
		return err;
	x->name[plen + len] = '\0';
	if (memchr(x->name, '\0', plen + len))
		return qs_set_error(-EIO, "xattr name holds a NUL byte");

	if (!(type & SQFS_XATTR_VALUE_OOL))
		return read_value(c, x, total);

	/* Out of line: a 4-byte length (8) and a reference to the real value. */
	err = qs_meta_read(c, raw, 4);
	if (!err && sqfs_le32(raw) != 8)
		err = qs_set_error(-EIO, "out-of-line xattr value has a bad reference size");
	if (!err)
		err = qs_meta_read(c, raw, 8);
	if (!err) {
		struct qs_meta_cursor vc;

		err = kv_cursor(img, sqfs_le64(raw), &vc);
		if (!err)
			err = read_value(&vc, x, total);
	}
	return err;
}

int qs_xattr_list(struct qs_image *img, const struct qs_inode *inode, struct qs_xattr **out, size_t *count)
{
	struct sqfs_xattr_id id;
	struct qs_meta_cursor c;
	struct qs_xattr *list;
	size_t total = 0;
	int err;

	*out = NULL;
	*count = 0;
	if (inode->xattr == QS_NO_XATTR)
		return 0;
	err = qs_xattr_id_lookup(img, inode->xattr, &id);
	if (err)
		return err;
	if (id.count == 0)
		return 0;
	if (id.count > QS_XATTR_COUNT_MAX)
		return qs_set_error(-EIO, "xattr id %u claims %u attributes", inode->xattr, id.count);
	err = kv_cursor(img, id.ref, &c);
	if (err)
		return err;
	list = calloc(id.count, sizeof(*list));
	if (!list)
		return qs_set_error(-ENOMEM, "out of memory");
	for (uint32_t i = 0; i < id.count && !err; i++)
		err = read_pair(img, &c, &list[i], &total);
	if (err) {
		qs_xattr_free(list, id.count);
		return err;
	}
	*out = list;
	*count = id.count;
	return 0;
}

void qs_xattr_free(struct qs_xattr *xattrs, size_t count)
{
	if (!xattrs)
		return;
	for (size_t i = 0; i < count; i++) {
		free(xattrs[i].name);
		free(xattrs[i].value);
	}
	free(xattrs);
}
