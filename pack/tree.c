/*
 * tree.c - the merged in-memory tree: insert and replace entries, look
 * names up, and put the result into the one canonical order the image is
 * written in (names sorted bytewise, as the squashfs directory format and
 * the kernel's lookup require).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tree.h"
#include "pack_util.h"

#define TREE_HASH_INITIAL 4096

static size_t name_hash(const struct pack_inode *dir, const char *name, size_t len)
{
	uint64_t h = (uintptr_t)dir * 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29);
}

int tree_init(struct pack_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->hash_size = TREE_HASH_INITIAL;
	t->hash = calloc(t->hash_size, sizeof(*t->hash));
	t->root = tree_inode_new(0040755);
	if (!t->hash || !t->root)
		return -ENOMEM;
	t->root->refs = 1;
	return 0;
}

/* An inode with 'extra' bytes after it. */
static struct pack_inode *inode_alloc(uint32_t mode, size_t extra)
{
	struct pack_inode *inode = calloc(1, sizeof(*inode) + extra);

	if (!inode)
		return NULL;
	inode->mode = mode;
	inode->xattr_id = 0xffffffffu;
	if (tree_is_reg(inode))
		inode->u.file.fragment = 0xffffffffu;
	return inode;
}

struct pack_inode *tree_inode_new(uint32_t mode)
{
	return inode_alloc(mode, 0);
}

struct pack_inode *tree_file_new(uint32_t mode, const char *name, size_t len)
{
	struct pack_inode *inode = inode_alloc(mode, len + 1);

	if (inode) {
		inode->u.file.content.name = (char *)(inode + 1);
		memcpy(inode->u.file.content.name, name, len);
	}
	return inode;
}

void tree_xattrs_free(struct pack_xattrs *x)
{
	for (uint32_t i = 0; i < x->count; i++) {
		free(x->list[i].name);
		free(x->list[i].value);
	}
	free(x->list);
	x->list = NULL;
	x->count = 0;
}

int tree_xattrs_add(struct pack_xattrs *x, const char *name, const void *value, size_t len)
{
	struct pack_xattr *list = realloc(x->list, (x->count + 1) * sizeof(*x->list));
	struct pack_xattr *a;

	if (!list)
		return -ENOMEM;
	x->list = list;
	a = &x->list[x->count];
	a->name = strdup(name);
	a->value = malloc(len + 1);
	if (!a->name || !a->value) {
		free(a->name);
		free(a->value);
		return -ENOMEM;
	}
	memcpy(a->value, value, len);
	a->len = (uint32_t)len;
	x->count++;
	return 0;
}

void tree_drop_index(struct pack_tree *t)
{
	free(t->hash);
	t->hash = NULL;
	t->hash_size = t->hash_used = 0;
}

static void hash_remove(struct pack_tree *t, struct pack_dirent *d)
{
	struct pack_dirent **pp;

	if (!t->hash)
		return;
	pp = &t->hash[name_hash(d->parent, d->name, d->name_len) & (t->hash_size - 1)];
	while (*pp && *pp != d)
		pp = &(*pp)->hash_next;
	if (*pp) {
		*pp = d->hash_next;
		t->hash_used--;
	}
}

void tree_inode_put(struct pack_tree *t, struct pack_inode *inode)
{
	if (!inode || --inode->refs > 0)
		return;
	if (tree_is_dir(inode)) {
		for (size_t i = 0; i < inode->u.dir.count; i++) {
			struct pack_dirent *d = inode->u.dir.children[i];

			if (t)
				hash_remove(t, d);
			tree_inode_put(t, d->inode);
			if (d->name != d->in_place)
				free(d->name);
			free(d);
		}
		free(inode->u.dir.children);
		free(inode->u.dir.index);
	} else if (tree_is_reg(inode)) {
		if (inode->u.file.content.name != (char *)(inode + 1))
			free(inode->u.file.content.name);
		block_list_free(&inode->u.file.blocks);
	} else if (tree_is_symlink(inode)) {
		free(inode->u.symlink.target);
	}
	tree_xattrs_free(&inode->xattrs);
	free(inode);
}

void tree_free(struct pack_tree *t)
{
	/* The table only indexes dirents that the root's subtree owns. */
	free(t->hash);
	t->hash = NULL;
	tree_inode_put(NULL, t->root);
	t->root = NULL;
	while (t->srcdirs) {
		struct pack_srcdir *d = t->srcdirs;

		t->srcdirs = d->next;
		if (d->root_fd >= 0)
			close(d->root_fd);
		free(d->path);
		free(d);
	}
}

struct pack_srcdir *tree_srcdir_add(struct pack_tree *t, struct pack_srcdir *parent, const char *name,
				    const char *path, dev_t dev, ino_t ino, int root_fd)
{
	size_t len = strlen(name);
	struct pack_srcdir *d = malloc(sizeof(*d) + len + 1);

	if (!d || !(d->path = strdup(path))) {
		free(d);
		return NULL;
	}
	d->parent = parent;
	d->root_fd = root_fd;
	d->dev = dev;
	d->ino = ino;
	memcpy(d->name, name, len + 1);
	d->next = t->srcdirs;
	t->srcdirs = d;
	return d;
}

struct pack_dirent *tree_lookup(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len)
{
	struct pack_dirent *d = t->hash[name_hash(dir, name, len) & (t->hash_size - 1)];

	for (; d; d = d->hash_next)
		if (d->parent == dir && d->name_len == len && memcmp(d->name, name, len) == 0)
			return d;
	return NULL;
}

static int hash_grow(struct pack_tree *t)
{
	size_t size = t->hash_size * 2;
	struct pack_dirent **hash = calloc(size, sizeof(*hash));

	if (!hash)
		return -ENOMEM;
	for (size_t i = 0; i < t->hash_size; i++) {
		struct pack_dirent *d = t->hash[i], *next;

		for (; d; d = next) {
			size_t b = name_hash(d->parent, d->name, d->name_len) & (size - 1);

			next = d->hash_next;
			d->hash_next = hash[b];
			hash[b] = d;
		}
	}
	free(t->hash);
	t->hash = hash;
	t->hash_size = size;
	return 0;
}

static struct pack_dirent *dirent_add(struct pack_tree *t, struct pack_inode *dir, const char *name,
				      size_t len, struct pack_inode *inode)
{
	struct pack_dirent *d;
	size_t b;

	if (t->hash_used >= t->hash_size && hash_grow(t) < 0)
		return NULL;
	if (dir->u.dir.count == dir->u.dir.cap) {
		size_t cap = dir->u.dir.cap ? dir->u.dir.cap * 2 : 8;
		void *p = realloc(dir->u.dir.children, cap * sizeof(*dir->u.dir.children));

		if (!p)
			return NULL;
		dir->u.dir.children = p;
		dir->u.dir.cap = cap;
	}
	d = calloc(1, sizeof(*d) + len + 1);
	if (!d)
		return NULL;
	d->name = d->in_place;
	memcpy(d->name, name, len);
	d->name_len = (uint32_t)len;
	d->inode = inode;
	d->parent = dir;
	inode->refs++;
	dir->u.dir.children[dir->u.dir.count++] = d;
	b = name_hash(dir, name, len) & (t->hash_size - 1);
	d->hash_next = t->hash[b];
	t->hash[b] = d;
	t->hash_used++;
	return d;
}

/* A directory met again (another source, or a later archive entry) takes the new metadata. */
static void dir_take_metadata(struct pack_inode *old, struct pack_inode *inode)
{
	old->mode = inode->mode;
	old->uid = inode->uid;
	old->gid = inode->gid;
	old->mtime = inode->mtime;
	tree_xattrs_free(&old->xattrs);
	old->xattrs = inode->xattrs;
	inode->xattrs.list = NULL;
	inode->xattrs.count = 0;
}

struct pack_inode *tree_insert(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len,
			       struct pack_inode *inode)
{
	struct pack_dirent *d = tree_lookup(t, dir, name, len);

	if (!d) {
		if (dirent_add(t, dir, name, len, inode))
			return inode;
		inode->refs++;
		tree_inode_put(t, inode);
		return NULL;
	}
	if (tree_is_dir(d->inode) && tree_is_dir(inode)) {
		dir_take_metadata(d->inode, inode);
		inode->refs++;
		tree_inode_put(t, inode);
		return d->inode;
	}
	tree_inode_put(t, d->inode);
	d->inode = inode;
	inode->refs++;
	return inode;
}

int tree_rename(struct pack_tree *t, struct pack_dirent *d, const char *name, size_t len)
{
	char *copy = strndup(name, len);
	size_t b;

	if (!copy)
		return -ENOMEM;
	hash_remove(t, d);
	if (d->name != d->in_place)
		free(d->name);
	d->name = copy;
	d->name_len = (uint32_t)len;
	b = name_hash(d->parent, name, len) & (t->hash_size - 1);
	d->hash_next = t->hash[b];
	t->hash[b] = d;
	t->hash_used++;
	return 0;
}

int tree_link(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len,
	      struct pack_inode *inode)
{
	struct pack_dirent *d = tree_lookup(t, dir, name, len);

	if (d) {
		if (d->inode == inode)
			return 0;
		inode->refs++;
		tree_inode_put(t, d->inode);
		d->inode = inode;
		return 0;
	}
	return dirent_add(t, dir, name, len, inode) ? 0 : -ENOMEM;
}

struct pack_inode *tree_walk_parent(struct pack_tree *t, const char *path, const struct pack_inode *implicit,
				    const char **leaf, size_t *leaf_len)
{
	struct pack_inode *dir = t->root;
	unsigned depth = 0;

	for (;;) {
		const char *slash = strchr(path, '/');
		struct pack_dirent *d;
		struct pack_inode *sub;
		size_t len;

		if (!slash) {
			*leaf = path;
			*leaf_len = strlen(path);
			return dir;
		}
		len = (size_t)(slash - path);
		if (++depth > PACK_DEPTH_MAX)
			return NULL;
		d = tree_lookup(t, dir, path, len);
		if (d && tree_is_dir(d->inode)) {
			dir = d->inode;
		} else {
			sub = tree_inode_new(implicit->mode);
			if (!sub)
				return NULL;
			sub->uid = implicit->uid;
			sub->gid = implicit->gid;
			sub->mtime = implicit->mtime;
			dir = tree_insert(t, dir, path, len, sub);
			if (!dir)
				return NULL;
		}
		path = slash + 1;
	}
}

static int dirent_cmp(const void *a, const void *b)
{
	const struct pack_dirent *x = *(struct pack_dirent *const *)a, *y = *(struct pack_dirent *const *)b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int xattr_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pack_xattr *)a)->name, ((const struct pack_xattr *)b)->name);
}

void tree_xattrs_normalize(struct pack_xattrs *x)
{
	tree_xattrs_filter(x, NULL, NULL);
}

void tree_xattrs_filter(struct pack_xattrs *x, const regex_t *include, const regex_t *exclude)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < x->count; i++) {
		const char *n = x->list[i].name;

		if ((strncmp(n, "user.", 5) == 0 || strncmp(n, "trusted.", 8) == 0 ||
		     strncmp(n, "security.", 9) == 0) &&
		    (!include || regexec(include, n, 0, NULL, 0) == 0) &&
		    (!exclude || regexec(exclude, n, 0, NULL, 0) != 0)) {
			x->list[kept++] = x->list[i];
		} else {
			free(x->list[i].name);
			free(x->list[i].value);
		}
	}
	x->count = kept;
	if (kept == 0) {
		free(x->list);
		x->list = NULL;
		return;
	}
	qsort(x->list, x->count, sizeof(*x->list), xattr_cmp);
}

/* mksquashfs -xattrs-add: like mksquashfs, a name the inode already has is an error. */
static int add_xattrs(struct pack_inode *inode, const struct pack_overrides *o)
{
	bool file_or_dir = tree_is_reg(inode) || tree_is_dir(inode);
	int err = 0;

	for (size_t i = 0; !err && i < o->xattrs_add_count; i++) {
		const struct pack_xattr *a = &o->xattrs_add[i];

		if (strncmp(a->name, "user.", 5) == 0 && !file_or_dir)
			continue;   /* man 7 xattr: user.* is for files and directories */
		for (uint32_t k = 0; k < inode->xattrs.count; k++) {
			if (strcmp(inode->xattrs.list[k].name, a->name) == 0) {
				pack_error("-xattrs-add %s: a file has that xattr already (as mksquashfs, refused)",
					   a->name);
				return -EEXIST;
			}
		}
		err = tree_xattrs_add(&inode->xattrs, a->name, a->value, a->len);
	}
	if (!err && o->xattrs_add_count)
		tree_xattrs_normalize(&inode->xattrs);
	return err;
}

static int apply_overrides(struct pack_inode *inode, const struct pack_overrides *o)
{
	if (inode->stored)
		return 0;   /* appended to: kept as the image has it, as mksquashfs keeps it */
	if (o->all_root)
		inode->uid = inode->gid = 0;
	if (o->uid >= 0)
		inode->uid = (uint32_t)o->uid;
	if (o->gid >= 0)
		inode->gid = (uint32_t)o->gid;
	if (o->mode >= 0)
		inode->mode = (inode->mode & 0170000) | ((uint32_t)o->mode & 07777);
	if (o->mtime >= 0)
		inode->mtime = o->mtime;
	else if (o->mtime_max >= 0 && inode->mtime > o->mtime_max)
		inode->mtime = o->mtime_max;
	if (o->no_xattrs) {
		tree_xattrs_free(&inode->xattrs);
		return 0;
	}
	tree_xattrs_filter(&inode->xattrs, o->xattrs_include, o->xattrs_exclude);
	return add_xattrs(inode, o);
}

/* First sight of an inode in the final tree: count it once. */
static int count_inode(struct pack_tree *t, struct pack_inode *inode, const struct pack_overrides *o)
{
	int err = apply_overrides(inode, o);

	t->inode_count++;
	if (inode->mtime > t->newest_mtime)
		t->newest_mtime = inode->mtime;
	switch (inode->mode & 0170000) {
	case 0100000:
		t->file_count++;
		t->data_bytes += inode->u.file.size;
		break;
	case 0040000: t->dir_count++; break;
	case 0120000: t->symlink_count++; break;
	case 0020000: case 0060000: t->device_count++; break;
	case 0010000: t->fifo_count++; break;
	case 0140000: t->socket_count++; break;
	}
	return err;
}

static int finish_dir(struct pack_tree *t, struct pack_inode *dir, const struct pack_overrides *o)
{
	uint32_t subdirs = 0;
	int err = 0;

	if (dir->u.dir.count)
		qsort(dir->u.dir.children, dir->u.dir.count, sizeof(*dir->u.dir.children), dirent_cmp);
	for (size_t i = 0; !err && i < dir->u.dir.count; i++) {
		struct pack_inode *inode = dir->u.dir.children[i]->inode;

		if (tree_is_dir(inode)) {
			subdirs++;
			err = count_inode(t, inode, o);
			if (!err)
				err = finish_dir(t, inode, o);
		} else if (inode->nlink++ == 0) {
			err = count_inode(t, inode, o);
		} else if (inode->nlink == 2) {
			t->hardlinked++;
		}
	}
	dir->nlink = 2 + subdirs;
	return err;
}

struct pack_inode *tree_find_path(struct pack_tree *t, const char *path)
{
	struct pack_inode *dir = t->root;

	for (;;) {
		size_t n = strcspn(path, "/");
		struct pack_dirent *d = tree_lookup(t, dir, path, n);

		if (!d)
			return NULL;
		if (!path[n])
			return d->inode;
		if (!tree_is_dir(d->inode))
			return NULL;
		dir = d->inode;
		path += n + 1;
	}
}

int tree_finish(struct pack_tree *t, const struct pack_overrides *o)
{
	int err;

	t->inode_count = t->file_count = t->data_bytes = 0;
	t->dir_count = t->symlink_count = t->device_count = t->fifo_count = t->socket_count = 0;
	t->hardlinked = 0;
	t->newest_mtime = 0;
	err = count_inode(t, t->root, o);
	if (!err)
		err = finish_dir(t, t->root, o);
	if (err == -ENOMEM)
		pack_error("out of memory");
	if (err)
		return err;
	if (t->inode_count >= 0xffffffffull)
		return -EFBIG;
	return 0;
}

static int walk(struct pack_inode *dir, tree_visit_fn fn, void *arg)
{
	for (size_t i = 0; i < dir->u.dir.count; i++) {
		struct pack_inode *inode = dir->u.dir.children[i]->inode;
		int err = fn(inode, arg);

		if (err)
			return err;
		if (tree_is_dir(inode) && (err = walk(inode, fn, arg)))
			return err;
	}
	return 0;
}

int tree_walk_files(struct pack_inode *dir, tree_visit_fn fn, void *arg)
{
	return walk(dir, fn, arg);
}

int block_list_init(struct pack_block_list *l, uint32_t count)
{
	l->count = count;
	l->pages = NULL;
	if (count == 0)
		return 0;           /* a file all in a fragment: most small files */
	l->pages = calloc(count / BLOCK_LIST_PAGE + 1, sizeof(*l->pages));
	return l->pages ? 0 : -ENOMEM;
}

void block_list_free(struct pack_block_list *l)
{
	for (uint32_t p = 0; l->pages && p <= l->count / BLOCK_LIST_PAGE; p++)
		free(l->pages[p]);
	free(l->pages);
	l->pages = NULL;
}

uint32_t *block_list_slot(struct pack_block_list *l, uint32_t i)
{
	uint32_t **page = &l->pages[i / BLOCK_LIST_PAGE];

	if (!*page && !(*page = calloc(BLOCK_LIST_PAGE, sizeof(**page))))
		return NULL;
	return &(*page)[i % BLOCK_LIST_PAGE];
}
