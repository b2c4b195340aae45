/*
 * scan_dir.c - a source directory into the tree.
 *
 * The walk uses directory file descriptors (openat/fstatat) and never
 * follows a symlink below the top, so symlink loops cannot trap it; a
 * directory that is its own ancestor (a bind mount) is refused.  The tree
 * being packed may belong to someone else, who may change it while root
 * packs it: so every entry is read through a descriptor or a directory
 * descriptor the walk opened itself, never by a path string, and what was
 * opened is checked with fstat against what the listing said.  A regular
 * file is not opened here at all: its bytes and its xattrs are read in the
 * data phase, which opens it once, the same way (data.c, srcdir.c),
 * through the pack_srcdir chain recorded here.
 *
 * The system calls are made by scan_pool.c, on its threads, ahead of the
 * walk and in its order; this file takes what they found, one directory
 * batch at a time, and alone builds the tree, in the order of a walk
 * without threads: so the image does not depend on their number.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "scan.h"
#include "exclude.h"
#include "scan_pool.h"
#include "srcdir.h"
#include "format/squashfs_fs.h"
#include "base/util.h"

#define HARDLINK_TABLE_INITIAL 1024

struct hardlink {
	dev_t dev;
	ino_t ino;
	struct pack_inode *inode;
};

struct link_table {                 /* open addressing on (dev, ino) */
	struct hardlink *links;
	size_t size, used;
};

struct dir_scan {
	struct pack_tree *tree;
	const struct scan_options *opt;
	dev_t root_dev;             /* the source's filesystem, for -one-file-system */
	struct link_table links;    /* files seen with st_nlink > 1 */
	struct scan_pool *pool;     /* the system calls, made ahead on threads */
	bool no_recurse;            /* scan_paths, -cpiostyle: a directory is added without its contents */
	struct pack_srcdir *last_sub;   /* the srcdir scan_entry made for the directory it added */
};

static uint32_t encode_dev(dev_t rdev)
{
	uint32_t ma = major(rdev), mi = minor(rdev);

	return (mi & 0xff) | (ma & 0xfff) << 8 | (mi & ~0xffu) << 12;
}

static size_t link_slot(dev_t dev, ino_t ino, size_t size)
{
	return (size_t)(((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dev) & (size - 1);
}

static struct hardlink *link_find(struct link_table *t, dev_t dev, ino_t ino)
{
	size_t i = link_slot(dev, ino, t->size);

	while (t->links[i].inode && !(t->links[i].dev == dev && t->links[i].ino == ino))
		i = (i + 1) & (t->size - 1);
	return &t->links[i];
}

static int link_remember(struct link_table *t, dev_t dev, ino_t ino, struct pack_inode *inode)
{
	struct hardlink *h;

	if (2 * (t->used + 1) > t->size) {
		struct link_table bigger = { .size = t->size ? t->size * 2 : HARDLINK_TABLE_INITIAL };

		bigger.links = calloc(bigger.size, sizeof(*bigger.links));
		if (!bigger.links)
			return -ENOMEM;
		for (size_t i = 0; i < t->size; i++)
			if (t->links[i].inode)
				*link_find(&bigger, t->links[i].dev, t->links[i].ino) = t->links[i];
		free(t->links);
		t->links = bigger.links;
		t->size = bigger.size;
	}
	h = link_find(t, dev, ino);
	h->dev = dev;
	h->ino = ino;
	h->inode = inode;
	t->used++;
	return 0;
}

/* 0, or -ENOMEM or -E2BIG (said) from tree_set_owner(). */
static int set_metadata(struct pack_tree *t, struct pack_inode *inode, const struct stat *st)
{
	inode->mode = (uint16_t)st->st_mode;
	inode->mtime = tree_time(st->st_mtim.tv_sec);
	return tree_set_owner(t, inode, st->st_uid, st->st_gid);
}

static int scan_tree(struct dir_scan *s, struct listed_dir *d, struct pack_srcdir *sd, struct pack_inode *dir,
		     char *path, size_t path_len, size_t rel, unsigned depth);

/* The inode for an entry the pool read: what it found is moved into it. */
static int make_inode(struct dir_scan *s, struct pack_srcdir *sd, struct scan_entry *e, struct pack_inode **out)
{
	const struct stat *st = &e->st;
	int err;
	struct pack_inode *inode = S_ISREG(st->st_mode) ? tree_file_new(s->tree, st->st_mode, e->name, e->name_len)
							: tree_inode_new(s->tree, st->st_mode);

	*out = inode;
	if (!inode)
		return -ENOMEM;
	err = set_metadata(s->tree, inode, st);
	if (S_ISREG(st->st_mode)) {
		inode->u.file.size = (uint64_t)st->st_size;
		inode->srcdir = sd->index;
		inode->u.file.content.ino = st->st_ino;
		inode->xattrs_pending = e->xattrs_pending;
	} else if (S_ISLNK(st->st_mode)) {
		inode->u.symlink.target = e->target;
		e->target = NULL;
	} else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		tree_set_rdev(inode, encode_dev(st->st_rdev));
	}
	if (!err)
		err = tree_set_xattrs(inode, &e->xattrs);
	else
		tree_xattrs_free(&e->xattrs);
	if (!err && S_ISREG(st->st_mode))
		err = tree_set_file_dev(s->tree, inode, st->st_dev);
	if (err) {
		inode->refs = 1;
		tree_inode_put(s->tree, inode);
		*out = NULL;
	}
	return err;
}

/* Into directory 'e', which the pool listed already (or, below 'parent', lists now). */
static int walk_into(struct dir_scan *s, struct listed_dir *parent, struct scan_entry *e, struct pack_srcdir *sub,
		     struct pack_inode *inode, char *path, size_t path_len, size_t rel, unsigned depth)
{
	struct listed_dir *d = e->sub;

	e->sub = NULL;
	if (!d) {
		d = scan_pool_add(s->pool, parent, e->fd, true, path, path_len, rel, s->root_dev, &e->st);
		if (!d)
			return -ENOMEM;
		e->fd = -1;
	}
	return scan_tree(s, d, sub, inode, path, path_len, rel, depth);
}

/* One entry of a directory being walked ('parent', or NULL: read on this thread). */
static int add_entry(struct dir_scan *s, struct listed_dir *parent, struct pack_srcdir *sd, struct pack_inode *dir,
		     struct scan_entry *e, char *path, size_t path_len, size_t rel, unsigned depth)
{
	const struct stat *st = &e->st;
	struct pack_inode *inode;
	struct hardlink *link = NULL;
	int err;

	if (e->state == ENTRY_TOO_LONG) {
		pack_error("%s/%s: path too long", path, e->name);
		return -ENAMETOOLONG;
	}
	if (e->state == ENTRY_SKIP)
		return 0;
	path[path_len] = '/';
	memcpy(path + path_len + 1, e->name, e->name_len + 1);
	path_len += 1 + e->name_len;
	err = e->err;
	if (e->state == ENTRY_STAT_FAILED)
		goto fail;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && s->links.size && !s->opt->no_hardlinks) {
		link = link_find(&s->links, st->st_dev, st->st_ino);
		if (link->inode)
			return tree_link(s->tree, dir, e->name, e->name_len, link->inode);
	}
	if (!err)
		err = make_inode(s, sd, e, &inode);
	if (!err && !(inode = tree_insert(s->tree, dir, e->name, e->name_len, inode)))
		err = -ENOMEM;
	if (!err && !S_ISDIR(st->st_mode) && st->st_nlink > 1 && !s->opt->no_hardlinks)
		err = link_remember(&s->links, st->st_dev, st->st_ino, inode);
	if (!err && S_ISDIR(st->st_mode) && !e->walk)
		return 0;       /* a mount point (-one-file-system): kept, as an empty directory */
	if (!err && S_ISDIR(st->st_mode)) {
		struct pack_srcdir *sub = tree_srcdir_add(s->tree, sd, e->name, path, st->st_dev, st->st_ino, -1);

		if (!sub)
			err = -ENOMEM;
		else if (!s->no_recurse)
			err = walk_into(s, parent, e, sub, inode, path, path_len, rel, depth + 1);
		s->last_sub = sub;
		if (err == -ENOMEM)
			pack_error("out of memory");
		return err;
	}
	if (err)
		goto fail;
	return 0;
fail:
	if (err == -ENOMEM) {
		pack_error("out of memory");
		return err;
	}
	if (err == -E2BIG)
		return err;     /* more owners than an image holds: said by tree_id() */
	if (s->opt->skip_unreadable && (err == -EACCES || err == -EPERM || err == -EIO)) {
		pack_warn("%s: %s (skipped)", path, strerror(-err));
		return 0;
	}
	if (err == -ESTALE)
		pack_error("%s: replaced while being scanned", path);
	else if (err == -EACCES || err == -EPERM || err == -EIO)
		pack_error("%s: %s; --skip-unreadable leaves such files out", path, strerror(-err));
	else
		pack_error("%s: %s", path, strerror(-err));
	return err;
}

/* One name in the open directory 'dirfd', read on this thread (scan_paths). */
static int scan_entry(struct dir_scan *s, int dirfd, struct pack_srcdir *sd, struct pack_inode *dir,
		      const char *name, char *path, size_t path_len, size_t rel, unsigned depth)
{
	struct scan_entry e = { .name = name, .name_len = strlen(name) };
	int err;

	scan_pool_read_entry(s->pool, dirfd, path, path_len, rel, s->root_dev, &e);
	err = add_entry(s, NULL, sd, dir, &e, path, path_len, rel, depth);
	scan_entry_clear(&e);
	return err;
}

static int scan_tree(struct dir_scan *s, struct listed_dir *d, struct pack_srcdir *sd, struct pack_inode *dir,
		     char *path, size_t path_len, size_t rel, unsigned depth)
{
	int err = 0;

	for (const struct pack_srcdir *a = sd->parent; a; a = a->parent) {
		if (a->dev == sd->dev && a->ino == sd->ino) {
			pack_error("%s: directory contains itself (not followed)", path);
			return -ELOOP;
		}
	}
	if (depth > PACK_DEPTH_MAX) {
		pack_error("%s: more than %d directory levels", path, PACK_DEPTH_MAX);
		return -ELOOP;
	}
	for (;;) {
		struct dir_batch *b = scan_pool_next(s->pool, d);
		bool last = b->last;

		for (size_t i = 0; !err && i < b->count; i++) {
			err = add_entry(s, d, sd, dir, &b->entries[i], path, path_len, rel, depth);
			path[path_len] = '\0';
		}
		if (!err && b->err) {
			err = b->err;
			if (err == -ESTALE)
				pack_error("%s: replaced while being scanned", path);
			else
				pack_error("%s: %s", path, strerror(-err));
		}
		scan_batch_free(b);
		if (err || last)
			break;
	}
	/* After a failure the pool frees it, once no thread can be listing it. */
	if (!err)
		scan_pool_dir_done(s->pool, d);
	return err;
}

/*
 * Open the directory 'path' (named 'shown' in messages) as a root of the
 * data phase's walks: the tree keeps its descriptor, which opens every
 * file below it.  Its stat into *st.
 */
static int add_top(struct dir_scan *s, const char *path, const char *shown, struct stat *st,
		   struct pack_srcdir **out)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0 || fstat(fd, st) < 0) {
		err = -errno;
		pack_error("%s: %s", shown, strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	*out = tree_srcdir_add(s->tree, NULL, "", path, st->st_dev, st->st_ino, fd);
	if (!*out) {
		close(fd);
		pack_error("out of memory");
		return -ENOMEM;
	}
	s->root_dev = st->st_dev;
	return 0;
}

/* The source's root into 'dir': its metadata and xattrs, then the walk below it. */
static int scan_root(struct dir_scan *s, const char *source, char *path, size_t len)
{
	struct pack_tree *t = s->tree;
	const struct scan_options *o = s->opt;
	struct pack_inode root_meta = { 0 }, *dir;
	struct pack_xattrs root_xattrs = { 0 };         /* root_meta's, until moved into it */
	struct pack_srcdir *top;
	struct listed_dir *d;
	struct stat st;
	int fd, err;

	err = add_top(s, path, source, &st, &top);
	if (err)
		return err;
	fd = top->root_fd;
	if (set_metadata(t, &root_meta, &st) < 0)
		return -ENOMEM;
	if (o->xattrs && scan_pool_fd_xattrs(s->pool, fd, &root_xattrs) < 0)
		pack_warn("%s: cannot read xattrs", source);
	if (tree_set_xattrs(&root_meta, &root_xattrs) < 0) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	if (o->as_name && o->limit_depth && o->max_depth == 0) {
		tree_drop_xattrs(&root_meta);
		return 0;       /* -max-depth 0, sources nested by name: the image's root alone */
	}
	dir = t->root;
	if (o->as_name) {
		/* mksquashfs's nesting: the source becomes a directory of the root. */
		dir = tree_inode_new(t, st.st_mode);
		if (dir)
			dir = tree_insert(t, t->root, o->as_name, strlen(o->as_name), dir);
		if (!dir) {
			tree_drop_xattrs(&root_meta);
			pack_error("out of memory");
			return -ENOMEM;
		}
	}
	tree_take_metadata(dir, &root_meta);
	if (o->limit_depth && scan_levels(o, 0) >= o->max_depth)
		return 0;       /* -max-depth: the source's root alone */

	/* Exclude patterns see paths relative to the source: "sub/file", without the leading '/'. */
	d = scan_pool_add(s->pool, NULL, fd, false, path, len, len + 1, s->root_dev, &st);
	if (!d) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	return scan_tree(s, d, top, dir, path, len, len + 1, 0);
}

/* A scan into t, its pool of threads started, and a PATH_MAX buffer; NULL after saying why. */
static struct dir_scan *scan_new(struct pack_tree *t, const struct scan_options *o, char **path)
{
	struct dir_scan *s = calloc(1, sizeof(*s));

	*path = malloc(PATH_MAX);
	if (!*path || !s || scan_pool_start(&s->pool, o) < 0) {
		pack_error("out of memory");
		free(s);
		free(*path);
		*path = NULL;
		return NULL;
	}
	s->tree = t;
	s->opt = o;
	return s;
}

static void scan_free(struct dir_scan *s, char *path)
{
	if (s) {
		scan_pool_stop(s->pool);
		free(s->links.links);
	}
	free(s);
	free(path);
}

int scan_dir(struct pack_tree *t, const char *source, const struct scan_options *o)
{
	char *path;
	struct dir_scan *s = scan_new(t, o, &path);
	size_t len = strlen(source);
	int err = -ENOMEM;

	if (!s)
		return err;
	while (len > 1 && source[len - 1] == '/')
		len--;
	if (len >= PATH_MAX) {
		pack_error("%s: path too long", source);
		err = -ENAMETOOLONG;
		goto out;
	}
	memcpy(path, source, len);
	path[len] = '\0';
	err = scan_root(s, source, path, len);
out:
	scan_free(s, path);
	return err;
}

int scan_file(struct pack_tree *t, const char *source, const struct scan_options *o)
{
	char *path;
	struct dir_scan *s = scan_new(t, o, &path);
	const char *slash = strrchr(source, '/'), *name = slash ? slash + 1 : source;
	size_t dlen = !slash ? 1 : slash == source ? 1 : (size_t)(slash - source);
	struct pack_srcdir *sd;
	struct stat st;
	int err;

	if (!s)
		return -ENOMEM;
	s->no_recurse = true;
	if (dlen >= PATH_MAX || strlen(name) > SQFS_NAME_MAX || !*name) {
		pack_error("%s: %s", source, *name ? "path too long" : "not a file name");
		err = *name ? -ENAMETOOLONG : -EINVAL;
		goto out;
	}
	memcpy(path, !slash ? "." : source, dlen);
	path[dlen] = '\0';
	/* The file is opened through its directory, as every other file is. */
	err = add_top(s, path, path, &st, &sd);
	if (!err)
		err = scan_entry(s, sd->root_fd, sd, t->root, name, path, dlen, dlen + 1, 0);
out:
	scan_free(s, path);
	return err;
}

/*
 * mksquashfs -no-strip (-tarstyle) and -cpiostyle: each path is kept in
 * the image as it is given, less its leading "/", "." and ".." (mksquashfs
 * add_source).  The directories on the way take the metadata of the real
 * ones; the last component is added as it is, a directory with all it
 * holds unless -cpiostyle (whose lists name every file).  The root is the
 * directory all paths start from (".", "/", "..") if they share one, else
 * one made up: 0777, the caller's, now.
 */

/* Where the paths start: each distinct prefix opened once, as a root of the data phase's walks. */
#define PATHS_PREFIX_MAX 16

struct path_scan {
	struct dir_scan *s;
	struct {
		char *name;
		struct pack_srcdir *sd;
	} prefixes[PATHS_PREFIX_MAX];
	size_t n_prefixes;
	/* Directories of the tree made from real ones: which, for files added below them later. */
	struct pack_inode **dirs;
	struct pack_srcdir **dir_sd;
	size_t dirs_size, dirs_used;
	bool have_root, same_root;  /* do all paths so far start from one directory? */
	struct stat root_st;        /* the first one's */
};

static size_t dir_slot(const struct pack_inode *dir, size_t size)
{
	return (size_t)(((uintptr_t)dir >> 4) * 0x9e3779b97f4a7c15ull) & (size - 1);
}

static struct pack_srcdir *dir_map_get(struct path_scan *ps, const struct pack_inode *dir)
{
	if (!ps->dirs_size)
		return NULL;
	for (size_t i = dir_slot(dir, ps->dirs_size); ps->dirs[i]; i = (i + 1) & (ps->dirs_size - 1))
		if (ps->dirs[i] == dir)
			return ps->dir_sd[i];
	return NULL;
}

static int dir_map_put(struct path_scan *ps, struct pack_inode *dir, struct pack_srcdir *sd)
{
	size_t i;

	if (2 * (ps->dirs_used + 1) > ps->dirs_size) {
		struct path_scan bigger = { .dirs_size = ps->dirs_size ? 2 * ps->dirs_size : HARDLINK_TABLE_INITIAL };

		bigger.dirs = calloc(bigger.dirs_size, sizeof(*bigger.dirs));
		bigger.dir_sd = calloc(bigger.dirs_size, sizeof(*bigger.dir_sd));
		if (!bigger.dirs || !bigger.dir_sd) {
			free(bigger.dirs);
			free(bigger.dir_sd);
			return -ENOMEM;
		}
		for (size_t k = 0; k < ps->dirs_size; k++) {
			if (!ps->dirs[k])
				continue;
			for (i = dir_slot(ps->dirs[k], bigger.dirs_size); bigger.dirs[i]; i = (i + 1) & (bigger.dirs_size - 1))
				;
			bigger.dirs[i] = ps->dirs[k];
			bigger.dir_sd[i] = ps->dir_sd[k];
		}
		free(ps->dirs);
		free(ps->dir_sd);
		ps->dirs = bigger.dirs;
		ps->dir_sd = bigger.dir_sd;
		ps->dirs_size = bigger.dirs_size;
	}
	for (i = dir_slot(dir, ps->dirs_size); ps->dirs[i] && ps->dirs[i] != dir; i = (i + 1) & (ps->dirs_size - 1))
		;
	ps->dirs_used += !ps->dirs[i];
	ps->dirs[i] = dir;
	ps->dir_sd[i] = sd;
	return 0;
}

/* The srcdir of a prefix ("/", ".", "..", "../.."), opened on first use. */
static int prefix_srcdir(struct path_scan *ps, const char *prefix, struct pack_srcdir **out)
{
	const char *open_as = prefix;
	struct stat st;
	int fd;

	for (size_t i = 0; i < ps->n_prefixes; i++) {
		if (strcmp(ps->prefixes[i].name, prefix) == 0) {
			*out = ps->prefixes[i].sd;
			return 0;
		}
	}
	if (ps->n_prefixes == PATHS_PREFIX_MAX) {
		pack_error("%s: more than %d different starting directories", open_as, PATHS_PREFIX_MAX);
		return -E2BIG;
	}
	fd = open(open_as, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int err = -errno;

		pack_error("%s: %s", open_as, strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	*out = tree_srcdir_add(ps->s->tree, NULL, "", open_as, st.st_dev, st.st_ino, fd);
	ps->prefixes[ps->n_prefixes].name = strdup(prefix);
	if (!*out || !ps->prefixes[ps->n_prefixes].name) {
		if (!*out)
			close(fd);
		free(ps->prefixes[ps->n_prefixes].name);
		pack_error("out of memory");
		return -ENOMEM;
	}
	ps->prefixes[ps->n_prefixes++].sd = *out;
	if (!ps->have_root) {
		ps->have_root = ps->same_root = true;
		ps->root_st = st;
		ps->s->root_dev = st.st_dev;
	} else if (st.st_dev != ps->root_st.st_dev || st.st_ino != ps->root_st.st_ino) {
		ps->same_root = false;
	}
	return 0;
}

/* A directory below a srcdir, opened by name as the walk opens everything (no symlinks followed). */
static int open_subdir(int dirfd, const char *name, const struct pack_srcdir *want)
{
	return srcdir_open_checked(dirfd, name, O_RDONLY, want->dev, want->ino);
}

/* A directory of the tree a whole directory's scan made: its srcdir, found again by name. */
static int map_scanned_dir(struct path_scan *ps, int dirfd, struct pack_srcdir *parent, struct pack_inode *dir,
			   const char *name, const char *path)
{
	struct pack_srcdir *sd;
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
		pack_error("%s: no longer a directory", path);
		return -ESTALE;
	}
	sd = tree_srcdir_add(ps->s->tree, parent, name, path, st.st_dev, st.st_ino, -1);
	if (!sd || dir_map_put(ps, dir, sd)) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Move *pp past a leading '/' and "." and ".." components, and say where they lead ("/", ".", "../.."). */
static int path_prefix(const char **pp, char *prefix, size_t size)
{
	const char *p = *pp;

	strcpy(prefix, *p == '/' ? "/" : ".");
	for (;;) {
		size_t n, len = strlen(prefix);

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (len + sizeof("/..") > size)
				return -ENAMETOOLONG;
			strcpy(strcmp(prefix, ".") == 0 ? prefix : prefix + len, strcmp(prefix, ".") == 0 ? ".." :
			       strcmp(prefix, "/") == 0 ? ".." : "/..");
		} else if (!(n == 1 && p[0] == '.')) {
			break;
		}
		p += n;
	}
	*pp = p;
	return 0;
}

/*
 * One name of a -no-strip or -cpiostyle path: 'name' in 'dir' (open as
 * 'dirfd') into the tree unless it is there; *out is its entry, NULL if
 * it is excluded.  A directory named again with -no-strip is added whole
 * once more, merging.
 */
static int add_path_name(struct path_scan *ps, const char *given, int dirfd, struct pack_srcdir *sd,
			 struct pack_inode *dir, const char *name, bool leaf, bool recurse, char *path,
			 size_t path_len, size_t rel, unsigned depth, struct pack_inode **out)
{
	struct dir_scan *s = ps->s;
	size_t n = strlen(name);
	struct pack_inode *d = tree_lookup(s->tree, dir, name, n);
	struct stat st;
	int err;

	*out = d;
	if (d && !(leaf && recurse && tree_is_dir(d)))
		return 0;
	if (!leaf && (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))) {
		pack_error("%s: %s is not a directory", given, name);
		return -ENOTDIR;
	}
	s->no_recurse = !leaf || !recurse;
	s->last_sub = NULL;
	err = scan_entry(s, dirfd, sd, dir, name, path, path_len, rel, depth);
	s->no_recurse = false;
	path[path_len] = '\0';
	if (err)
		return err;
	*out = d = tree_lookup(s->tree, dir, name, n);
	if (d && tree_is_dir(d) && s->last_sub && (err = dir_map_put(ps, d, s->last_sub)) != 0) {
		pack_error("out of memory");
		return err;
	}
	return 0;
}

static int scan_one_path(struct path_scan *ps, const char *given, bool recurse, char *path)
{
	struct dir_scan *s = ps->s;
	const char *p = given;
	char prefix[PATH_MAX];
	size_t path_len, rel;
	struct pack_srcdir *sd = NULL;
	struct pack_inode *dir = s->tree->root;
	int dirfd, owned = -1, err;
	unsigned depth = 0;

	if (path_prefix(&p, prefix, sizeof(prefix))) {
		pack_error("%s: path too long", given);
		return -ENAMETOOLONG;
	}
	if (!*p) {
		if (!recurse)
			return 0;   /* -cpiostyle: find lists "." first, with nothing to add */
		pack_error("%s: nothing is left of it without its leading '/', '.' and '..' (-no-strip)", given);
		return -EINVAL;
	}
	err = prefix_srcdir(ps, prefix, &sd);
	if (err)
		return err;
	dirfd = sd->root_fd;
	/* Messages name the real path; excludes see the path in the image, from rel on. */
	path_len = (size_t)snprintf(path, PATH_MAX, "%s", strcmp(prefix, "/") == 0 ? "" : prefix);
	rel = path_len + 1;
	for (;;) {
		size_t n = strcspn(p, "/");
		const char *next = p + n;
		char name[NAME_MAX + 1];
		struct pack_inode *d;
		bool leaf;

		while (*next == '/')
			next++;
		leaf = !*next;
		if (n > NAME_MAX || path_len + 1 + n >= PATH_MAX) {
			pack_error("%s: path too long", given);
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
			pack_error("%s: '.' or '..' inside a path (-no-strip, -cpiostyle)", given);
			err = -EINVAL;
			break;
		}
		err = add_path_name(ps, given, dirfd, sd, dir, name, leaf, recurse, path, path_len, rel, depth, &d);
		if (err || !d)
			break;      /* !d: excluded, and what lies below it with it */
		if (leaf)
			break;
		if (!tree_is_dir(d)) {
			pack_error("%s: %s is not a directory", given, name);
			err = -ENOTDIR;
			break;
		}
		path[path_len] = '/';
		memcpy(path + path_len + 1, name, n + 1);
		path_len += 1 + n;
		/* Added whole by an earlier path: this one goes on below it, through the same directory. */
		if (!dir_map_get(ps, d) && (err = map_scanned_dir(ps, dirfd, sd, d, name, path)) != 0)
			break;
		sd = dir_map_get(ps, d);
		err = open_subdir(dirfd, name, sd);
		if (err < 0) {
			if (err == -ESTALE)
				pack_error("%s: another directory than the %s already in the image (as mksquashfs: "
					   "two sources cannot have one path)", given, path + rel);
			else
				pack_error("%s: %s", path, strerror(-err));
			break;
		}
		if (owned >= 0)
			close(owned);
		dirfd = owned = err;
		err = 0;
		dir = d;
		depth++;
		p = next;
	}
	if (owned >= 0)
		close(owned);
	return err;
}

int scan_paths(struct pack_tree *t, const char *const *paths, size_t count, bool recurse,
	       const struct scan_options *o)
{
	char *path;
	struct path_scan ps = { .s = scan_new(t, o, &path) };
	int err = ps.s ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < count; i++)
		err = scan_one_path(&ps, paths[i], recurse, path);
	if (!err && ps.have_root && ps.same_root) {
		err = set_metadata(t, t->root, &ps.root_st);
	} else if (!err) {
		/* mksquashfs: "Top level directory conflict.  Create dummy top level directory". */
		t->root->mode = S_IFDIR | 0777;
		t->root->mtime = tree_time(time(NULL));
		err = tree_set_owner(t, t->root, getuid(), getgid());
	}
	for (size_t i = 0; i < ps.n_prefixes; i++)
		free(ps.prefixes[i].name);
	free(ps.dirs);
	free(ps.dir_sd);
	scan_free(ps.s, path);
	return err;
}
