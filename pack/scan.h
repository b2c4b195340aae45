/*
 * scan.h - reading sources into the tree: directories and archives.
 */
#ifndef QUASH_PACK_SCAN_H
#define QUASH_PACK_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "tree.h"

/* Archive contents are copied here so that the data phase can read every source alike. */
struct spool {
	int fd;                     /* -1 until the first archive needs it */
	uint64_t end;
	const char *dir;            /* created in this directory (beside the image) */
};

struct scan_options {
	const char **excludes;      /* fnmatch patterns */
	size_t exclude_count;
	bool xattrs;
	bool skip_unreadable;
	int64_t implicit_mtime;     /* for directories an archive implies but does not list */
	uint32_t block_size;        /* of the image: bounds the file size it can hold */
	struct spool *spool;
};

/*
 * Can a squashfs file hold 'size' bytes in blocks of 'bs'?  Its inode
 * lists one 32-bit size word per block, at most UINT32_MAX - 1 of them.
 */
static inline bool scan_size_fits(uint64_t size, uint32_t bs)
{
	return size / bs < UINT32_MAX - 1;
}

/* Is 'relpath' (relative to its source's root) excluded?  Patterns with a '/' match the whole path. */
bool scan_excluded(const struct scan_options *o, const char *relpath);

int scan_dir(struct pack_tree *t, const char *path, const struct scan_options *o);
/* 'path' is an archive file, or "-" for standard input. */
int scan_archive(struct pack_tree *t, const char *path, const struct scan_options *o);

void spool_close(struct spool *s);

/* libarchive is opened on first use (archive_loader.c, lib/io/lazy_lib.h):
 * 0, or -ENOSYS with a one-line reason. */
int archive_loader_load(void);
const char *archive_loader_error(void);

#endif
