/*
 * scan_pool.c - a directory scan's system calls, made ahead of the walk on
 * worker threads (why and how: scan_pool.h).
 *
 * The queue holds the batches to list, and those being listed, in the
 * order the walk will take them: a batch, once listed, is replaced in it
 * by the first batches of its subdirectories and then the directory's
 * next batch, which is the depth-first order the walk follows.  A thread
 * takes the first batch not begun, while fewer than SCAN_BATCHES_AHEAD
 * wait for the walk; everything in the queue lies ahead of where the
 * walk is, so a directory the walk adds itself goes to its front.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "exclude.h"
#include "scan_pool.h"
#include "srcdir.h"

/* A directory being listed: its batches not yet taken by the walk, and where it is. */
struct listed_dir {
	int fd;                     /* -1 until its first batch opens it again */
	bool own_fd;
	struct listed_dir *parent;  /* where to open it again (NULL: fd given) */
	dev_t dev;
	ino_t ino;
	char *path;                 /* for excludes, and its name at the end */
	size_t path_len, rel;
	dev_t root_dev;             /* the source's filesystem, for -one-file-system */
	uint32_t depth;             /* levels below the source's root, for -max-depth */
	struct dir_batch *first;    /* listed or to be, not yet taken; then first->after... */
	struct listed_dir *prev, *next;     /* every one the pool holds, for stopping */
};

/* One thread's room to read entries in. */
struct entry_reader {
	struct xattr_scratch xattr;
	char target[PACK_SYMLINK_MAX + 1];
	char path[PATH_MAX];
};

struct scan_pool {
	const struct scan_options *opt;
	pthread_mutex_t lock;
	pthread_cond_t work;        /* a batch was queued, the window opened, or stop */
	pthread_cond_t listed;      /* a batch was listed */
	struct dir_batch *head, *tail;      /* the queue */
	struct listed_dir *dirs;
	unsigned ahead;             /* batches in the window */
	bool stop;
	unsigned threads;
	pthread_t thread[SCAN_THREADS_MAX];
	struct entry_reader main;   /* the walk's own */
};

/*
 * Where an entry's xattrs are read: its open descriptor, or, for what
 * cannot be opened for reading (symlinks, devices, fifos, sockets), its
 * name in the open directory reached through /proc/self/fd, so that no
 * directory above it is looked up by name again.
 */
struct xattr_src {
	int fd;                     /* or -1: use 'proc' */
	char proc[sizeof("/proc/self/fd//") + 3 * sizeof(int) + NAME_MAX + 1];
};

static void xattr_src_at(struct xattr_src *x, int dirfd, const char *name)
{
	x->fd = -1;
	snprintf(x->proc, sizeof(x->proc), "/proc/self/fd/%d/%s", dirfd, name);
}

static ssize_t xattr_src_list(const struct xattr_src *x, char *buf, size_t size)
{
	return x->fd >= 0 ? flistxattr(x->fd, buf, size) : llistxattr(x->proc, buf, size);
}

static ssize_t xattr_src_get(const struct xattr_src *x, const char *name, void *buf, size_t size)
{
	return x->fd >= 0 ? fgetxattr(x->fd, name, buf, size) : lgetxattr(x->proc, name, buf, size);
}

static int read_xattrs(struct xattr_scratch *scratch, const struct xattr_src *src, struct pack_xattrs *x)
{
	char *names = scratch->names;
	ssize_t len = xattr_src_list(src, names, PACK_XATTR_LIST_MAX);

	if (len < 0)
		return errno == ENOTSUP || errno == ENODATA ? 0 : -errno;
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(names + off) + 1) {
		const char *name = names + off;
		ssize_t vlen;

		if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) &&
		    strncmp(name, "security.", 9))
			continue;   /* squashfs has no place for system.* (ACLs) */
		vlen = xattr_src_get(src, name, scratch->value, PACK_XATTR_VALUE_MAX);
		if (vlen < 0) {
			if (errno == ENODATA)
				continue;
			return -errno;
		}
		if (tree_xattrs_add(x, name, scratch->value, (size_t)vlen))
			return -ENOMEM;
	}
	return 0;
}

int scan_fd_xattrs(struct xattr_scratch *scratch, int fd, struct pack_xattrs *x)
{
	struct xattr_src src = { .fd = fd };

	return read_xattrs(scratch, &src, x);
}

int scan_pool_fd_xattrs(struct scan_pool *p, int fd, struct pack_xattrs *x)
{
	return scan_fd_xattrs(&p->main.xattr, fd, x);
}

/* Is what 'fd' holds still the entry the listing's fstatat() found? */
static int same_entry(int fd, const struct stat *listed)
{
	struct stat now;

	if (fstat(fd, &now) < 0)
		return -errno;
	if (now.st_dev != listed->st_dev || now.st_ino != listed->st_ino ||
	    (now.st_mode & S_IFMT) != (listed->st_mode & S_IFMT))
		return -ESTALE;
	return 0;
}

/*
 * What the tree needs of an entry fstatat() found: a directory opened (so
 * that an unreadable one can be left out) and checked, a symlink's
 * target, the xattrs.  A regular file is not opened here: its bytes and
 * its xattrs are read in the data phase, which opens it once (opening
 * each file twice cost a third of the system calls of a tree of a million
 * small files).  Only an empty file, which the data phase never opens, is
 * opened here for its xattrs, and with --skip-unreadable every file is,
 * so that an unreadable one is left out before anything is written.
 */
static int read_contents(const struct scan_options *o, struct entry_reader *r, int dirfd, struct scan_entry *e)
{
	const struct stat *st = &e->st;
	struct xattr_src xs = { .fd = -1 };
	int err = 0;

	if (S_ISDIR(st->st_mode)) {
		e->fd = openat(dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (e->fd < 0)
			return -errno;
		xs.fd = e->fd;
	} else if (S_ISREG(st->st_mode)) {
		bool now_or_never = st->st_size == 0 && o->xattrs;

		if (!now_or_never && !o->skip_unreadable) {
			e->xattrs_pending = o->xattrs;
			return 0;
		}
		xs.fd = openat(dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (xs.fd < 0)
			return -errno;
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlinkat(dirfd, e->name, r->target, sizeof(r->target));

		if (n < 0)
			return -errno;
		if ((size_t)n > PACK_SYMLINK_MAX)
			return -ENAMETOOLONG;
		e->target = strndup(r->target, (size_t)n);
		if (!e->target)
			return -ENOMEM;
	}
	if (xs.fd >= 0)
		err = same_entry(xs.fd, st);
	if (!err && o->xattrs) {
		struct stat now;

		if (xs.fd < 0)
			xattr_src_at(&xs, dirfd, e->name);
		err = read_xattrs(&r->xattr, &xs, &e->xattrs);
		/* Read by name: make sure the name still held what was listed. */
		if (!err && xs.fd < 0 && fstatat(dirfd, e->name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (now.st_dev != st->st_dev || now.st_ino != st->st_ino))
			err = -ESTALE;
	}
	if (xs.fd >= 0 && xs.fd != e->fd)
		close(xs.fd);
	return err;
}

/* The checks of scan_dir.c's walk that need no tree, in its order, then the reads. */
static void read_entry(const struct scan_options *o, struct entry_reader *r, int dirfd, const char *path,
		       size_t path_len, size_t rel, dev_t root_dev, struct scan_entry *e)
{
	struct stat *st = &e->st;

	e->fd = -1;
	if (path_len + 1 + e->name_len >= PATH_MAX) {
		e->state = ENTRY_TOO_LONG;
		return;
	}
	memcpy(r->path, path, path_len);
	r->path[path_len] = '/';
	memcpy(r->path + path_len + 1, e->name, e->name_len + 1);
	e->state = ENTRY_SKIP;
	if (scan_excluded(o, r->path + rel))
		return;
	if (fstatat(dirfd, e->name, st, AT_SYMLINK_NOFOLLOW) < 0) {
		e->state = ENTRY_STAT_FAILED;
		e->err = -errno;
		return;
	}
	for (size_t i = 0; i < o->exclude_id_count; i++)
		if (o->exclude_ids[i].dev == st->st_dev && o->exclude_ids[i].ino == st->st_ino)
			return;
	if (o->one_file_system && st->st_dev != root_dev && (!S_ISDIR(st->st_mode) || o->one_file_system_x))
		return;
	e->state = ENTRY_READ;
	e->err = read_contents(o, r, dirfd, e);
	/* A mount point under -one-file-system is kept, as an empty directory. */
	e->walk = !e->err && S_ISDIR(st->st_mode) && !(o->one_file_system && st->st_dev != root_dev);
	if (!e->walk && e->fd >= 0) {
		close(e->fd);
		e->fd = -1;
	}
}

void scan_pool_read_entry(struct scan_pool *p, int dirfd, const char *path, size_t path_len, size_t rel,
			  dev_t root_dev, struct scan_entry *e)
{
	read_entry(p->opt, &p->main, dirfd, path, path_len, rel, root_dev, e);
}

void scan_entry_clear(struct scan_entry *e)
{
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	free(e->target);
	e->target = NULL;
	tree_xattrs_free(&e->xattrs);
}

static struct dir_batch *batch_new(struct listed_dir *d)
{
	struct dir_batch *b = calloc(1, sizeof(*b));

	if (b)
		b->dir = d;
	return b;
}

void scan_batch_free(struct dir_batch *b)
{
	for (size_t i = 0; i < b->count; i++)
		scan_entry_clear(&b->entries[i]);     /* a listed subdirectory is the pool's */
	free(b->entries);
	free(b->buf);
	free(b);
}

/* A directory and its first batch, not yet known to the pool. */
static struct listed_dir *dir_new(struct listed_dir *parent, int fd, bool own_fd, const char *path,
				  size_t path_len, size_t rel, dev_t root_dev, const struct stat *st)
{
	struct listed_dir *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->path = malloc(path_len + 1);
	d->first = batch_new(d);
	if (!d->path || !d->first) {
		free(d->path);
		free(d->first);
		free(d);
		return NULL;
	}
	memcpy(d->path, path, path_len);
	d->path[path_len] = '\0';
	d->path_len = path_len;
	d->rel = rel;
	d->root_dev = root_dev;
	d->fd = fd;
	d->own_fd = own_fd;
	d->parent = parent;
	d->depth = parent ? parent->depth + 1 : 0;
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	return d;
}

static void dir_free(struct listed_dir *d)
{
	while (d->first) {
		struct dir_batch *b = d->first;

		d->first = b->after;
		scan_batch_free(b);
	}
	if (d->fd >= 0 && d->own_fd)
		close(d->fd);
	free(d->path);
	free(d);
}

/* Open a directory listed by its parent again, and check it is the one listed. */
static int reopen_dir(struct listed_dir *d)
{
	int fd = srcdir_open_checked(d->parent->fd, strrchr(d->path, '/') + 1, O_RDONLY, d->dev, d->ino);

	if (fd < 0)
		return fd;
	d->fd = fd;
	d->own_fd = true;
	return 0;
}

/*
 * Fill 'buf' with whole getdents64 records, *len bytes: 0, or -errno after
 * those (as readdir() fails after the names before); *eof at the end.
 */
static int list_names(int fd, char *buf, size_t *len, bool *eof)
{
	*len = 0;
	/* Room for the longest record, or getdents64 says EINVAL. */
	while (SCAN_LIST_BYTES - *len >= sizeof(struct dirent64)) {
		ssize_t n = getdents64(fd, buf + *len, SCAN_LIST_BYTES - *len);

		if (n < 0)
			return -errno;
		if (n == 0) {
			*eof = true;
			break;
		}
		*len += (size_t)n;
	}
	return 0;
}

static bool dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/*
 * List batch 'b' of its directory, on any thread: the names of one
 * getdents64 buffer, each entry read, each subdirectory to walk made a
 * listed_dir; and the next batch, unless this is the last.
 */
static void batch_list(const struct scan_options *o, struct entry_reader *r, struct dir_batch *b)
{
	struct listed_dir *d = b->dir;
	size_t len = 0, n = 0;
	bool eof = false;
	char *shrunk;

	b->last = true;
	if (d->fd < 0 && (b->err = reopen_dir(d)) != 0)
		return;
	b->buf = malloc(SCAN_LIST_BYTES);
	if (!b->buf) {
		b->err = -ENOMEM;
		return;
	}
	b->err = list_names(d->fd, b->buf, &len, &eof);
	/* Names point into it from here on: shrink it first. */
	shrunk = realloc(b->buf, len ? len : 1);
	if (shrunk)
		b->buf = shrunk;
	for (size_t off = 0; off < len; off += ((struct dirent64 *)(b->buf + off))->d_reclen)
		n += !dot_or_dotdot(((struct dirent64 *)(b->buf + off))->d_name);
	b->entries = calloc(n ? n : 1, sizeof(*b->entries));
	if (!b->entries) {
		b->err = -ENOMEM;
		return;
	}
	for (size_t off = 0; off < len; off += ((struct dirent64 *)(b->buf + off))->d_reclen) {
		const char *name = ((struct dirent64 *)(b->buf + off))->d_name;
		struct scan_entry *e = &b->entries[b->count];

		if (dot_or_dotdot(name))
			continue;
		e->name = name;
		e->name_len = strlen(e->name);
		b->count++;
		read_entry(o, r, d->fd, d->path, d->path_len, d->rel, d->root_dev, e);
		if (e->walk && o->limit_depth && scan_levels(o, d->depth + 1) >= o->max_depth) {
			/* -max-depth: kept, as an empty directory, as a mount point is. */
			e->walk = false;
			close(e->fd);
			e->fd = -1;
		}
		if (!e->walk)
			continue;
		/* Its own listing opens it again: a descriptor per directory queued would be too many. */
		memcpy(r->path, d->path, d->path_len);
		r->path[d->path_len] = '/';
		memcpy(r->path + d->path_len + 1, e->name, e->name_len + 1);
		e->sub = dir_new(d, -1, false, r->path, d->path_len + 1 + e->name_len, d->rel, d->root_dev, &e->st);
		close(e->fd);
		e->fd = -1;
	}
	if (!eof && !b->err) {
		b->after = batch_new(d);
		if (b->after)
			b->last = false;
		else
			b->err = -ENOMEM;
	}
}

static void queue_insert_after(struct scan_pool *p, struct dir_batch *at, struct dir_batch *b)
{
	b->prev = at;
	b->next = at ? at->next : p->head;
	if (b->next)
		b->next->prev = b;
	else
		p->tail = b;
	if (at)
		at->next = b;
	else
		p->head = b;
}

static void queue_remove(struct scan_pool *p, struct dir_batch *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		p->head = b->next;
	if (b->next)
		b->next->prev = b->prev;
	else
		p->tail = b->prev;
	b->prev = b->next = NULL;
}

static void dir_link(struct scan_pool *p, struct listed_dir *d)
{
	d->prev = NULL;
	d->next = p->dirs;
	if (p->dirs)
		p->dirs->prev = d;
	p->dirs = d;
}

/* Under the lock: 'b' is listed; what it found to list goes in its place in the queue. */
static void batch_listed(struct scan_pool *p, struct dir_batch *b)
{
	struct dir_batch *at = b;

	for (size_t i = 0; i < b->count; i++) {
		struct listed_dir *sub = b->entries[i].sub;

		if (!sub)
			continue;
		dir_link(p, sub);
		queue_insert_after(p, at, sub->first);
		at = sub->first;
	}
	if (b->after)
		queue_insert_after(p, at, b->after);
	queue_remove(p, b);
	b->state = BATCH_LISTED;
	pthread_cond_broadcast(&p->listed);
	pthread_cond_broadcast(&p->work);
}

static struct dir_batch *first_queued(struct scan_pool *p)
{
	struct dir_batch *b = p->head;

	while (b && b->state != BATCH_QUEUED)
		b = b->next;            /* past the few being listed */
	return b;
}

static void *worker(void *arg)
{
	struct scan_pool *p = arg;
	struct entry_reader *r = malloc(sizeof(*r));

	if (!r)
		return NULL;    /* the walk lists what this thread would have */
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct dir_batch *b = p->ahead < SCAN_BATCHES_AHEAD ? first_queued(p) : NULL;

		if (!b) {
			pthread_cond_wait(&p->work, &p->lock);
			continue;
		}
		b->state = BATCH_LISTING;
		b->ahead = true;
		p->ahead++;
		pthread_mutex_unlock(&p->lock);
		batch_list(p->opt, r, b);
		pthread_mutex_lock(&p->lock);
		batch_listed(p, b);
	}
	pthread_mutex_unlock(&p->lock);
	free(r);
	scan_excluded_forget();
	return NULL;
}

int scan_pool_start(struct scan_pool **out, const struct scan_options *o)
{
	struct scan_pool *p = calloc(1, sizeof(*p));
	unsigned want = o->threads > SCAN_THREADS_MAX ? SCAN_THREADS_MAX : o->threads;

	*out = p;
	if (!p)
		return -ENOMEM;
	p->opt = o;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->listed, NULL);
	/* One thread would only take turns with the walk. */
	for (unsigned i = 0; want > 1 && i < want; i++)
		if (pthread_create(&p->thread[p->threads], NULL, worker, p) == 0)
			p->threads++;
	return 0;
}

void scan_pool_stop(struct scan_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->threads; i++)
		pthread_join(p->thread[i], NULL);
	while (p->dirs) {
		struct listed_dir *d = p->dirs;

		p->dirs = d->next;
		dir_free(d);
	}
	pthread_cond_destroy(&p->listed);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

struct listed_dir *scan_pool_add(struct scan_pool *p, struct listed_dir *parent, int fd, bool own_fd,
				 const char *path, size_t path_len, size_t rel, dev_t root_dev, const struct stat *st)
{
	struct listed_dir *d = dir_new(parent, fd, own_fd, path, path_len, rel, root_dev, st);

	if (!d)
		return NULL;
	pthread_mutex_lock(&p->lock);
	dir_link(p, d);
	queue_insert_after(p, NULL, d->first);
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
	return d;
}

struct dir_batch *scan_pool_next(struct scan_pool *p, struct listed_dir *d)
{
	struct dir_batch *b;

	pthread_mutex_lock(&p->lock);
	b = d->first;
	if (b->state == BATCH_QUEUED) {
		b->state = BATCH_LISTING;
		pthread_mutex_unlock(&p->lock);
		batch_list(p->opt, &p->main, b);
		pthread_mutex_lock(&p->lock);
		batch_listed(p, b);
	}
	while (b->state != BATCH_LISTED)
		pthread_cond_wait(&p->listed, &p->lock);
	d->first = b->after;
	b->after = NULL;
	if (b->ahead) {
		p->ahead--;
		pthread_cond_signal(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
	return b;
}

void scan_pool_dir_done(struct scan_pool *p, struct listed_dir *d)
{
	pthread_mutex_lock(&p->lock);
	if (d->prev)
		d->prev->next = d->next;
	else
		p->dirs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	pthread_mutex_unlock(&p->lock);
	dir_free(d);
}
