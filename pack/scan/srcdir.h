/*
 * srcdir.h - reopening a scanned source file for its bytes, safely.
 *
 * The data phase runs long after the scan, on a tree that may belong to
 * someone else.  A file is reached from its source's root descriptor one
 * name at a time (O_PATH|O_NOFOLLOW|O_DIRECTORY), every directory checked
 * against the scan's (dev, ino), and the file itself opened with
 * O_NOFOLLOW and checked for type, (dev, ino) and size: so a directory
 * renamed and replaced by a symlink to /etc makes the pack fail, and
 * nothing else is ever read in the file's place.
 */
#ifndef QUASH_PACK_SRCDIR_H
#define QUASH_PACK_SRCDIR_H

#include "tree/tree.h"
#include "base/util.h"

/*
 * Directories opened recently: files are visited in tree order, so most
 * files find their directory here and the rest find a close ancestor.
 */
#define SRCDIR_CACHE_SLOTS 8

struct srcdir_cache {
	const struct pack_tree *tree;       /* the files' (their pack_inode.srcdir) */
	struct {
		const struct pack_srcdir *dir;
		int fd;
	} slot[SRCDIR_CACHE_SLOTS];
	unsigned next;                      /* the slot to reuse next, round robin */
	const struct pack_srcdir *chain[PACK_DEPTH_MAX + 2];
};

void srcdir_cache_init(struct srcdir_cache *c, const struct pack_tree *tree);
void srcdir_cache_clear(struct srcdir_cache *c);

/*
 * Open directory 'name' of 'dirfd' (with 'flags': O_RDONLY or O_PATH; never
 * following a symlink) and check it is the (dev, ino) the scan found.  A
 * descriptor, -ESTALE if something else is there now, or -errno.  Every
 * directory pack opens below a source's root goes through here.
 */
int srcdir_open_checked(int dirfd, const char *name, int flags, dev_t dev, ino_t ino);

/*
 * Open a scanned regular file for reading (its u.file.content and
 * tree_file_name()).  A descriptor, or -errno; -ESTALE when a directory on
 * the way or the file itself is not what the scan saw (other (dev, ino),
 * another type, another size).
 */
int srcdir_open_file(struct srcdir_cache *c, const struct pack_inode *file);

/*
 * srcdir_open_file() in two halves, for the prefetcher (prefetch.c), which
 * opens on one thread while the data phase checks on another: the
 * directories on the way are checked by the first, the file by the second,
 * which closes 'fd' and returns -ESTALE where it is not what the scan saw.
 * Nothing may be read from the descriptor before the check.
 */
int srcdir_open_unchecked(struct srcdir_cache *c, const struct pack_inode *file);
int srcdir_check_file(const struct srcdir_cache *c, int fd, const struct pack_inode *file);

#endif
