/*
 * prefetch.h - opening source files ahead of the data phase.
 *
 * The data phase reads files one after another, in the tree's order.  On
 * a cold cache each read of a small file waits for the disk, one request
 * at a time.  A thread of its
 * own walks the same list ahead of it, opens each file the way the data
 * phase would (srcdir.c, its directories checked against the scan), asks
 * the kernel to start reading it (POSIX_FADV_WILLNEED, which returns at
 * once), and hands the descriptor over, to be checked against the scan
 * by the data phase before anything is read (that half of the work on
 * the data phase's thread: the prefetcher, with its one request to the
 * disk per file, is the busier of the two); so many reads are in flight
 * at once, and the opening runs on the other core.  Only descriptors
 * cross: the bytes are read by the data phase, so the image does not
 * depend on the timing.
 */
#ifndef QUASH_PACK_PREFETCH_H
#define QUASH_PACK_PREFETCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "tree/tree.h"

struct prefetch;

/* prefetch_take(): the prefetcher did not open this file; open it yourself. */
#define PREFETCH_NONE INT_MIN

/*
 * Is 'file' one the data phase opens from a source directory (and so one
 * the prefetcher opens)?  Not the flag bits: the data phase's main thread
 * writes their byte meanwhile (data_done), so the prefetcher, another
 * thread, reads none of them.  A stored file (append.c) has no srcdir.
 */
static inline bool prefetch_wants(const struct pack_inode *file)
{
	return tree_is_reg(file) && file->u.file.size > 0 && file->srcdir;
}

/*
 * Start opening, in order, the files of files[0 .. n) that prefetch_wants()
 * (each inode once: hard links appear more than once), or with files NULL,
 * those of the tree under 'root' in tree_walk_files() order.  0 or -errno.
 */
int prefetch_start(struct pack_tree *tree, struct pack_inode *const *files, size_t n, struct prefetch **out);

/*
 * The descriptor opened for 'file' and checked against the scan (the
 * caller closes it), -errno if that failed (-ESTALE: not what the scan
 * saw), or PREFETCH_NONE.  Waits for the prefetcher if it is behind.
 */
int prefetch_take(struct prefetch *p, const struct pack_inode *file);

/* Stop the thread, close what was not taken, free. */
void prefetch_stop(struct prefetch *p);

#endif
