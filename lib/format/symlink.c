/*
 * symlink.c - symlink targets, stored in the inode table right after the
 * symlink's inode and not NUL-terminated.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

int qs_readlink(struct qs_image *img, const struct qs_inode *link, char *buf, size_t bufsize)
{
	struct qs_meta_cursor c;
	int err;

	if (link->type != QS_SYMLINK)
		return qs_set_error(-EINVAL, "not a symlink");
	if (bufsize <= link->size)
		return qs_set_error(-ERANGE, "symlink target longer than the buffer");
	qs_meta_cursor_init(&c, img, img->sb.inode_table_start + sqfs_ref_block(link->u.symlink.target),
			    sqfs_ref_offset(link->u.symlink.target));
	err = qs_meta_read(&c, buf, (size_t)link->size);
	if (err)
		return err;
	buf[link->size] = '\0';
	if (memchr(buf, '\0', (size_t)link->size))
		return qs_set_error(-EIO, "symlink target holds a NUL byte");
	return (int)link->size;
}
