/*
 * srcdir.c - reopening a scanned source file for its bytes, safely (why:
 * srcdir.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srcdir.h"

void srcdir_cache_init(struct srcdir_cache *c, const struct pack_tree *tree)
{
	c->tree = tree;
	for (unsigned i = 0; i < SRCDIR_CACHE_SLOTS; i++) {
		c->slot[i].dir = NULL;
		c->slot[i].fd = -1;
	}
	c->next = 0;
}

void srcdir_cache_clear(struct srcdir_cache *c)
{
	for (unsigned i = 0; i < SRCDIR_CACHE_SLOTS; i++)
		if (c->slot[i].fd >= 0)
			close(c->slot[i].fd);
	srcdir_cache_init(c, c->tree);
}

/* A descriptor for 'd' that needs no closing by the caller, or -1. */
static int cached_fd(const struct srcdir_cache *c, const struct pack_srcdir *d)
{
	if (!d->parent)
		return d->root_fd;
	for (unsigned i = 0; i < SRCDIR_CACHE_SLOTS; i++)
		if (c->slot[i].dir == d)
			return c->slot[i].fd;
	return -1;
}

static int cache_put(struct srcdir_cache *c, const struct pack_srcdir *d, int fd)
{
	unsigned i = c->next;

	c->next = (c->next + 1) % SRCDIR_CACHE_SLOTS;
	if (c->slot[i].fd >= 0)
		close(c->slot[i].fd);
	c->slot[i].dir = d;
	c->slot[i].fd = fd;
	return fd;
}

int srcdir_open_checked(int dirfd, const char *name, int flags, dev_t dev, ino_t ino)
{
	int fd = openat(dirfd, name, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ESTALE : -errno;
	if (fstat(fd, &st) < 0 || st.st_dev != dev || st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Open 'name' in 'dirfd' as a directory and check it is the scan's 'd'. */
static int open_step(int dirfd, const struct pack_srcdir *d)
{
	return srcdir_open_checked(dirfd, d->name, O_PATH, d->dev, d->ino);
}

/* A descriptor for directory 'd', valid until the next call. */
static int open_dir(struct srcdir_cache *c, const struct pack_srcdir *d)
{
	size_t n = 0;
	int fd;

	/* Up to the nearest directory already open (a source's root at worst)... */
	while ((fd = cached_fd(c, d)) < 0) {
		if (n == sizeof(c->chain) / sizeof(c->chain[0]))
			return -ELOOP;
		c->chain[n++] = d;
		d = d->parent;
	}
	/* ...then down again, one checked name at a time. */
	while (n > 0) {
		d = c->chain[--n];
		fd = open_step(fd, d);
		if (fd < 0)
			return fd;
		cache_put(c, d, fd);
	}
	return fd;
}

int srcdir_open_unchecked(struct srcdir_cache *c, const struct pack_inode *file)
{
	int dirfd = open_dir(c, tree_srcdir(c->tree, file)), fd;

	if (dirfd < 0)
		return dirfd;
	fd = openat(dirfd, tree_file_name(file), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ESTALE : -errno;
	return fd;
}

int srcdir_check_file(const struct srcdir_cache *c, int fd, const struct pack_inode *file)
{
	const struct pack_content *ct = &file->u.file.content;
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != tree_file_dev(c->tree, file) || st.st_ino != ct->ino ||
	    (uint64_t)st.st_size != file->u.file.size) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int srcdir_open_file(struct srcdir_cache *c, const struct pack_inode *file)
{
	int fd = srcdir_open_unchecked(c, file);

	return fd < 0 ? fd : srcdir_check_file(c, fd, file);
}
