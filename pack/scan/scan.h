/*
 * scan.h - reading sources into the tree: directories and archives.
 */
#ifndef QUASH_PACK_SCAN_H
#define QUASH_PACK_SCAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tree/spool.h"
#include "tree/tree.h"
#include "base/util.h"

/* A file by identity, for mksquashfs's excludes. */
struct scan_devino {
	dev_t dev;
	ino_t ino;
};

struct scan_options {
	const char **excludes;      /* fnmatch patterns */
	size_t exclude_count;
	/*
	 * mksquashfs's -regex: each '/'-separated part of a pattern is a POSIX
	 * extended regex, matched unanchored against the name at that depth
	 * ("a.c" leaves out "xabcx" at the top); a pattern without '/' (given
	 * as "... NAME") matches a name at any depth.
	 */
	bool exclude_regex;
	/*
	 * mksquashfs's plain -e paths: it stats each and leaves out that file
	 * wherever it appears, its hard links included.
	 */
	const struct scan_devino *exclude_ids;
	size_t exclude_id_count;
	bool xattrs;
	bool skip_unreadable;
	int64_t implicit_mtime;     /* for directories an archive implies but does not list */
	uint32_t implicit_mode;     /* their permission bits */
	uint32_t implicit_uid, implicit_gid;
	bool no_hardlinks;          /* mksquashfs -no-hardlinks: every name of a file a file of its own */
	bool ignore_zeros;          /* mksquashfs -ignore-zeros: tars one after another, read as one */
	/*
	 * mksquashfs -tar without -numeric-owner: an archive entry's user and
	 * group names give its owner where this system knows them, as GNU tar
	 * extracting as root; else, and always in quash pack, the numbers.
	 */
	bool owner_names;
	uint32_t block_size;        /* of the image: bounds the file size it can hold */
	struct spool *spool;
	const char *as_name;        /* scan_dir: nest the source under this name (NULL: merge at the root) */
	/*
	 * mksquashfs's -one-file-system: what lies on another filesystem than
	 * the source's root is left out, files entirely, a mount point as an
	 * empty directory (or, with one_file_system_x, not at all).
	 */
	bool one_file_system, one_file_system_x;
	/*
	 * mksquashfs's -max-depth: with limit_depth, a directory more than
	 * max_depth levels below a source's root is kept empty (as find's
	 * -maxdepth: 0, the root alone; 1, its entries, their directories
	 * empty).
	 */
	bool limit_depth;
	uint32_t max_depth;
	bool ignore_archive_root;   /* an archive's "./" entry does not set the root (mksquashfs -tar) */
	unsigned threads;           /* a directory's scan lists ahead on this many (scan_pool.h; 0, 1: none) */
};

/*
 * Can a squashfs file hold 'size' bytes in blocks of 'bs'?  Its inode
 * lists one 32-bit size word per block, at most UINT32_MAX - 1 of them.
 */
static inline bool scan_size_fits(uint64_t size, uint32_t bs)
{
	return size / bs < UINT32_MAX - 1;
}

/* 'path' is a directory: its contents merge at the root, or under o->as_name. */
int scan_dir(struct pack_tree *t, const char *path, const struct scan_options *o);
/*
 * mksquashfs -no-strip (recurse) and -cpiostyle (not): each path in the
 * image as given, less a leading '/', "." and ".." (scan_dir.c).
 */
int scan_paths(struct pack_tree *t, const char *const *paths, size_t count, bool recurse,
	       const struct scan_options *o);
/* mksquashfs's SOURCE that is no directory: the file itself, by its last component, in the root. */
int scan_file(struct pack_tree *t, const char *path, const struct scan_options *o);
/* 'path' is an archive file, or "-" for standard input. */
int scan_archive(struct pack_tree *t, const char *path, const struct scan_options *o);

/* Room to read one file's xattrs in. */
struct xattr_scratch {
	char names[PACK_XATTR_LIST_MAX];
	uint8_t value[PACK_XATTR_VALUE_MAX];
};

/*
 * The xattrs of the open file 'fd' that squashfs can store, appended to
 * 'x' (unsorted); 0 (also where the file system has none) or -errno.
 */
int scan_fd_xattrs(struct xattr_scratch *scratch, int fd, struct pack_xattrs *x);

/*
 * Levels below the image's root of a directory 'depth' levels below a
 * source's root, as -max-depth counts them: a source nested by its name
 * is one level down itself, as in mksquashfs.
 */
static inline uint32_t scan_levels(const struct scan_options *o, uint32_t depth)
{
	return depth + (o->as_name != NULL);
}

#endif
