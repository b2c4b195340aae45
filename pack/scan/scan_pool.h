/*
 * scan_pool.h - the system calls of a directory scan, made ahead of it on
 * worker threads.
 *
 * Scanning a tree of many small files is almost all system calls: a
 * getdents64 per directory, an fstatat per entry, an open, fstat and
 * flistxattr per subdirectory.  The pool's threads make them for whole
 * directories, one getdents64 buffer (a "batch") at a time, ahead of the
 * walk and in its order; the walk itself (scan_dir.c), which alone
 * touches the tree, takes each directory's batches in order and lists a
 * batch itself when no thread has begun it.  So the tree, and the image,
 * are the same whatever the thread count.
 *
 * A subdirectory is opened, checked with fstat and its xattrs read when
 * its parent is listed, then closed: it is opened again, relative to its
 * parent and checked against the first (dev, ino), when its own turn to
 * be listed comes.  The descriptors held are thus those of the
 * directories being walked and of the few listed ahead, never one per
 * directory waiting.
 */
#ifndef QUASH_PACK_SCAN_POOL_H
#define QUASH_PACK_SCAN_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "scan.h"

#define SCAN_THREADS_MAX   16           /* more cannot help: the walk takes the batches one by one */
#define SCAN_BATCHES_AHEAD 32           /* batches listed ahead of the walk, at most (and being listed) */
#define SCAN_LIST_BYTES    (32u << 10)  /* one batch's getdents64 buffer: up to 1,365 names */

enum scan_entry_state {
	ENTRY_SKIP,         /* excluded (by name, identity or -one-file-system): left out */
	ENTRY_TOO_LONG,     /* its path would be PATH_MAX or longer; nothing was read */
	ENTRY_STAT_FAILED,  /* fstatat() failed with err */
	ENTRY_READ,         /* st holds what fstatat() found, and the rest what was read (err: what failed) */
};

/* One name of a directory, and what the scan's system calls found there. */
struct scan_entry {
	const char *name;
	size_t name_len;
	enum scan_entry_state state;
	int err;
	struct stat st;
	bool walk;                  /* a directory to descend into */
	bool xattrs_pending;        /* a regular file's xattrs, read in the data phase */
	int fd;                     /* read by scan_pool_read_entry(): a directory to walk, open; else -1 */
	char *target;               /* a symlink's (malloc'd) */
	struct pack_xattrs xattrs;  /* unsorted, as read */
	struct listed_dir *sub;     /* listed by a thread: the directory to walk, its listing under way */
};

enum dir_batch_state { BATCH_QUEUED, BATCH_LISTING, BATCH_LISTED };

/* One getdents64 buffer of a directory: its entries, in the directory's order. */
struct dir_batch {
	struct scan_entry *entries;
	size_t count;
	int err;                    /* the listing failed after these entries */
	bool last;                  /* the directory's end (or its error) */

	/* The pool's. */
	struct listed_dir *dir;
	enum dir_batch_state state;
	bool ahead;                 /* listed by a thread: in the SCAN_BATCHES_AHEAD window until taken */
	char *buf;                  /* the names */
	struct dir_batch *prev, *next;  /* the pool's queue, in walk order, while queued or being listed */
	struct dir_batch *after;    /* the directory's next batch */
};

struct scan_pool;
struct listed_dir;

/* A pool of o->threads threads (0 or 1: none, the walk lists everything); 0 or -ENOMEM. */
int scan_pool_start(struct scan_pool **out, const struct scan_options *o);
/* Stop the threads and free everything not yet taken (a walk that failed leaves much). */
void scan_pool_stop(struct scan_pool *p);

/*
 * Read one entry 'e' (its name set) of the open directory 'dirfd' at
 * 'path' (path_len bytes; excludes see it from 'rel' on), on the calling
 * thread, as the threads read every entry they list.  A directory to walk
 * is left open in e->fd.
 */
void scan_pool_read_entry(struct scan_pool *p, int dirfd, const char *path, size_t path_len, size_t rel,
			  dev_t root_dev, struct scan_entry *e);
/* Free what 'e' still holds (close its descriptor). */
void scan_entry_clear(struct scan_entry *e);
/* The xattrs of the open 'fd', read on the walk's thread (scan_fd_xattrs()). */
int scan_pool_fd_xattrs(struct scan_pool *p, int fd, struct pack_xattrs *x);

/*
 * The directory the walk goes into next: either 'fd' (taken over if
 * 'own_fd'), or 'parent''s entry at the end of 'path' opened again and
 * checked against 'st'.  Its first batch goes to the front of the queue.
 * NULL if out of memory.
 */
struct listed_dir *scan_pool_add(struct scan_pool *p, struct listed_dir *parent, int fd, bool own_fd,
				 const char *path, size_t path_len, size_t rel, dev_t root_dev, const struct stat *st);
/*
 * 'd''s next batch, listed by a thread or, if none has begun it, here.
 * Only after the last one may the walk call scan_pool_dir_done().
 */
struct dir_batch *scan_pool_next(struct scan_pool *p, struct listed_dir *d);
void scan_batch_free(struct dir_batch *b);
/* The walk is through with 'd': close and free it. */
void scan_pool_dir_done(struct scan_pool *p, struct listed_dir *d);

#endif
