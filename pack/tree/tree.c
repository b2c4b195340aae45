/*
 * tree.c - the merged in-memory tree: insert and replace entries, look
 * names up, and put the result into the one canonical order the image is
 * written in (names sorted bytewise, as the squashfs directory format and
 * the kernel's lookup require).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tree.h"
#include "spill.h"
#include "base/util.h"

/*
 * Dirents are carved from chunks of TREE_ARENA_CHUNK bytes: a malloc()
 * each cost 16-24 bytes of header and rounding on a dirent of 20-odd.
 * They are freed all at once with the tree; one dropped earlier (a
 * replaced subtree, a rename) stays until then, so what is wasted is
 * bounded by what the sources held.
 */
#define TREE_ARENA_CHUNK (1u << 20)

struct tree_arena {
	struct tree_arena *next;
	size_t used, size;          /* in words */
	uint64_t words[];
};

/*
 * A directory of at most this many names is searched one by one; a larger
 * one gets a table on its first lookup, a child's index + 1 per slot, at
 * most half full.
 */
#define TREE_LINEAR_LOOKUP_MAX 16u
#define TREE_LOOKUP_MIN_SLOTS 64u
/* Children of one directory: the table holds their indices + 1 in 32 bits. */
#define TREE_DIR_ENTRIES_MAX (1u << 30)

/*
 * Directories' inodes come from an arena of their own: a walk meets a
 * directory's subdirectories side by side, not one a whole subtree apart
 * (root's thousand, sorted, touched 16,000 pages of a paged-out tree).
 */
static void *arena_alloc_in(struct pack_tree *t, struct tree_arena **head, size_t bytes)
{
	size_t words = (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t);
	struct tree_arena *a = *head;
	void *p;

	if (!a || a->size - a->used < words) {
		size_t size = TREE_ARENA_CHUNK / sizeof(uint64_t);

		if (size < words)
			size = words;
		a = spill_alloc(t->spill, sizeof(*a) + size * sizeof(uint64_t));
		if (!a)
			return NULL;
		a->next = *head;
		a->used = 0;
		a->size = size;
		*head = a;
	}
	p = &a->words[a->used];
	a->used += words;
	spill_tick(t->spill, p);
	return p;
}

/* The arena an inode of this mode, or the dirent naming it, comes from. */
static void *arena_alloc(struct pack_tree *t, uint32_t mode, size_t bytes)
{
	return arena_alloc_in(t, (mode & 0170000) == 0040000 ? &t->dir_arena : &t->arena, bytes);
}

/* Does 'inode' keep this name after itself (tree_file_new())? */
static bool keeps_name(const struct pack_inode *inode, const char *name, size_t len)
{
	/* strncmp(): the kept name may be the shorter, and nothing of the arena lies past its NUL. */
	return tree_is_reg(inode) && inode->named && strncmp(tree_file_name(inode), name, len) == 0 &&
	       tree_file_name(inode)[len] == '\0';
}

/* A child naming 'inode' 'name': the inode itself when it keeps that name, else a dirent; 0 or -ENOMEM. */
static int child_new(struct pack_tree *t, const char *name, size_t len, struct pack_inode *inode, pack_child *out)
{
	struct pack_dirent *d;

	if (keeps_name(inode, name, len)) {
		out->bits = (uintptr_t)inode | 1;
		return 0;
	}
	d = arena_alloc(t, inode->mode, offsetof(struct pack_dirent, name) + len + 1);
	if (!d)
		return -ENOMEM;
	d->inode = inode;
	d->name_len = (uint32_t)len;
	memcpy(d->name, name, len);
	d->name[len] = '\0';
	out->bits = (uintptr_t)d;
	return 0;
}

static uint32_t name_hash(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ h >> 32);
}

static void lookup_forget(struct pack_tree *t, struct pack_inode *dir)
{
	spill_free(t ? t->spill : NULL, dir->u.dir.lookup);
	dir->u.dir.lookup = NULL;
	dir->u.dir.lookup_size = 0;
}

static void lookup_put(struct pack_inode *dir, uint32_t i)
{
	pack_child c = dir->u.dir.children[i];
	uint32_t mask = dir->u.dir.lookup_size - 1, slot = name_hash(tree_child_name(c), tree_child_name_len(c)) & mask;

	while (dir->u.dir.lookup[slot])
		slot = (slot + 1) & mask;
	dir->u.dir.lookup[slot] = i + 1;
}

/*
 * Under --memory the tables come from the spill file too: 8 bytes an entry
 * of a big directory, held until the data phase, were 40 MB of a
 * 5,000,000-entry tar's 58 MB peak.  A table outgrown stays there unused.
 */
static int lookup_build(struct pack_tree *t, struct pack_inode *dir)
{
	uint32_t size = TREE_LOOKUP_MIN_SLOTS;

	while (size < 2 * dir->u.dir.count + 2)
		size *= 2;
	lookup_forget(t, dir);
	dir->u.dir.lookup = spill_alloc(t->spill, (size_t)size * sizeof(*dir->u.dir.lookup));
	if (!dir->u.dir.lookup)
		return -ENOMEM;
	dir->u.dir.lookup_size = size;
	for (uint32_t i = 0; i < dir->u.dir.count; i++)
		lookup_put(dir, i);
	return 0;
}

static bool child_is(pack_child c, const char *name, size_t len)
{
	const char *n = tree_child_name(c);

	if (tree_child_is_file_name(c))
		return strncmp(n, name, len) == 0 && n[len] == '\0';
	return ((const struct pack_dirent *)c.bits)->name_len == len && memcmp(n, name, len) == 0;
}

/* The index of 'name' among dir's children, or -1. */
static ssize_t lookup_index(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len)
{
	const pack_child *c = dir->u.dir.children;
	uint32_t mask, slot;

	if (dir->u.dir.count > TREE_LINEAR_LOOKUP_MAX && (dir->u.dir.lookup || lookup_build(t, dir) == 0)) {
		mask = dir->u.dir.lookup_size - 1;
		for (slot = name_hash(name, len) & mask; dir->u.dir.lookup[slot]; slot = (slot + 1) & mask)
			if (child_is(c[dir->u.dir.lookup[slot] - 1], name, len))
				return dir->u.dir.lookup[slot] - 1;
		return -1;
	}
	/* Small, or no memory for a table: one by one. */
	for (size_t i = 0; i < dir->u.dir.count; i++)
		if (child_is(c[i], name, len))
			return (ssize_t)i;
	return -1;
}

struct pack_inode *tree_lookup(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len)
{
	ssize_t i = lookup_index(t, dir, name, len);

	return i < 0 ? NULL : tree_child_inode(dir->u.dir.children[i]);
}

/*
 * Child i of 'dir' names 'inode' now, which takes the caller's reference;
 * 0 or -ENOMEM.  The child is made anew: the name may have been the old
 * inode's own.
 */
static int child_retarget(struct pack_tree *t, struct pack_inode *dir, size_t i, struct pack_inode *inode)
{
	pack_child old = dir->u.dir.children[i], c;

	if (child_new(t, tree_child_name(old), tree_child_name_len(old), inode, &c) < 0)
		return -ENOMEM;
	tree_inode_put(t, tree_child_inode(old));
	dir->u.dir.children[i] = c;
	return 0;
}

int tree_init(struct pack_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->forced_uid = t->forced_gid = -1;
	t->root = tree_inode_new(t, 0040755);
	if (!t->root)
		return -ENOMEM;
	t->root->refs = 1;
	/* Id 0 first: an inode whose owner is never set (index 0) is root's. */
	return tree_set_owner(t, t->root, 0, 0);
}

/* The size pack_inode's comment promises, which a million files multiply. */
_Static_assert(offsetof(struct pack_inode, u) + sizeof(((struct pack_inode *)0)->u.file) == 64,
	       "a regular file's inode is 64 bytes");

/* Bytes of an inode of this type: the common part and its own part of the union. */
static size_t inode_size(uint32_t mode)
{
	size_t own;

	switch (mode & 0170000) {
	case 0100000: own = sizeof(((struct pack_inode *)0)->u.file); break;
	case 0040000: own = sizeof(((struct pack_inode *)0)->u.dir); break;
	case 0120000: own = sizeof(((struct pack_inode *)0)->u.symlink); break;
	default:      own = sizeof(((struct pack_inode *)0)->u.dev); break;
	}
	return (offsetof(struct pack_inode, u) + own + 7) & ~(size_t)7;
}

/* An inode with 'extra' bytes after it. */
static struct pack_inode *inode_alloc(struct pack_tree *t, uint32_t mode, size_t extra)
{
	struct pack_inode *inode = arena_alloc(t, mode, inode_size(mode) + extra);

	if (!inode)
		return NULL;
	memset(inode, 0, inode_size(mode));
	inode->mode = (uint16_t)mode;
	if (tree_is_reg(inode))
		inode->u.file.fragment = 0xffffffffu;
	return inode;
}

struct pack_inode *tree_inode_new(struct pack_tree *t, uint32_t mode)
{
	return inode_alloc(t, mode, 0);
}

struct pack_inode *tree_file_new(struct pack_tree *t, uint32_t mode, const char *name, size_t len)
{
	struct pack_inode *inode = inode_alloc(t, mode, len + 1);

	if (inode) {
		memcpy((char *)inode + inode_size(mode), name, len);
		((char *)inode)[inode_size(mode) + len] = '\0';
		inode->named = true;
	}
	return inode;
}

dev_t tree_file_dev(const struct pack_tree *t, const struct pack_inode *file)
{
	const struct pack_srcdir *d = tree_srcdir(t, file);

	for (uint32_t i = 0; i < d->file_dev_count; i++)
		if (d->file_devs[i].file == file)
			return d->file_devs[i].dev;
	return d->dev;
}

int tree_set_file_dev(struct pack_tree *t, struct pack_inode *file, dev_t dev)
{
	struct pack_srcdir *d = tree_srcdir(t, file);
	struct pack_file_dev *p;

	if (dev == d->dev)
		return 0;
	p = realloc(d->file_devs, (d->file_dev_count + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	d->file_devs = p;
	p[d->file_dev_count++] = (struct pack_file_dev){ .file = file, .dev = dev };
	return 0;
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

/* The inode's extra part, made (empty) if it has none; NULL if out of memory. */
static struct pack_extra *extra_get(struct pack_inode *inode)
{
	if (!inode->extra) {
		inode->extra = calloc(1, sizeof(*inode->extra));
		if (inode->extra)
			inode->extra->xattrs.id = 0xffffffffu;
	}
	return inode->extra;
}

/* Let the extra part go once nothing is left in it. */
static void extra_trim(struct pack_inode *inode)
{
	struct pack_extra *x = inode->extra;

	if (x && x->xattrs.count == 0 && !x->has_pages && !x->count && !x->start && !x->sparse) {
		free(x->xattrs.list);
		free(x);
		inode->extra = NULL;
	}
}

int tree_set_xattrs(struct pack_inode *inode, struct pack_xattrs *x)
{
	tree_drop_xattrs(inode);
	if (x->count == 0) {
		tree_xattrs_free(x);
		return 0;
	}
	if (!extra_get(inode)) {
		tree_xattrs_free(x);
		return -ENOMEM;
	}
	inode->extra->xattrs = *x;
	inode->extra->xattrs.id = 0xffffffffu;
	*x = (struct pack_xattrs){ 0 };
	return 0;
}

int tree_xattr_add(struct pack_inode *inode, const char *name, const void *value, size_t len)
{
	if (!extra_get(inode))
		return -ENOMEM;
	return tree_xattrs_add(&inode->extra->xattrs, name, value, len);
}

void tree_drop_xattrs(struct pack_inode *inode)
{
	if (inode->extra) {
		tree_xattrs_free(&inode->extra->xattrs);
		extra_trim(inode);
	}
}

int tree_blocks_new(struct pack_inode *file, uint32_t count)
{
	size_t pages = count / BLOCK_LIST_PAGE + 1;
	struct pack_extra *x;

	if (!extra_get(file))
		return -ENOMEM;
	x = realloc(file->extra, sizeof(*x) + pages * sizeof(x->pages[0]));
	if (!x)
		return -ENOMEM;
	memset(x->pages, 0, pages * sizeof(x->pages[0]));
	x->count = count;
	x->has_pages = true;
	file->extra = x;
	return 0;
}

static void blocks_free(struct pack_extra *b)
{
	for (uint32_t p = 0; b && b->has_pages && p <= b->count / BLOCK_LIST_PAGE; p++)
		free(b->pages[p]);
}

static void drop_lookups(struct pack_tree *t, struct pack_inode *dir)
{
	lookup_forget(t, dir);
	for (size_t i = 0; i < dir->u.dir.count; i++) {
		spill_tick(t->spill, &dir->u.dir.children[i]);
		if (tree_is_dir(tree_child_inode(dir->u.dir.children[i])))
			drop_lookups(t, tree_child_inode(dir->u.dir.children[i]));
	}
}

void tree_drop_index(struct pack_tree *t)
{
	drop_lookups(t, t->root);
}

void tree_inode_put(struct pack_tree *t, struct pack_inode *inode)
{
	if (!inode || --inode->refs > 0)
		return;
	if (t)
		spill_tick(t->spill, inode);
	if (tree_is_dir(inode)) {
		/* The dirents are the arena's. */
		for (size_t i = 0; i < inode->u.dir.count; i++)
			tree_inode_put(t, tree_child_inode(inode->u.dir.children[i]));
		spill_free(t ? t->spill : NULL, inode->u.dir.children);
		lookup_forget(t, inode);
		free(inode->u.dir.index);
	} else if (tree_is_reg(inode)) {
		blocks_free(inode->extra);
	} else if (tree_is_symlink(inode)) {
		free(inode->u.symlink.target);
	}
	if (inode->extra)
		tree_xattrs_free(&inode->extra->xattrs);
	free(inode->extra);
	inode->extra = NULL;
}

void tree_free(struct pack_tree *t)
{
	tree_release(t);
}

/*
 * A chunk's link is read, not faulted in: under --memory each fault maps
 * 16 pages of a paged-out tree around it (21 MB at once at 5,000,000
 * entries), and the file's chunks need no freeing.
 */
static void arenas_free(struct pack_tree *t, struct tree_arena *a)
{
	while (a) {
		struct tree_arena *next;

		spill_peek(t->spill, &a->next, &next, sizeof(next));
		spill_free(t->spill, a);
		a = next;
	}
}

void tree_release(struct pack_tree *t)
{
	tree_inode_put(t, t->root);
	t->root = NULL;
	arenas_free(t, t->arena);
	arenas_free(t, t->dir_arena);
	t->arena = t->dir_arena = NULL;
	while (t->srcdirs) {
		struct pack_srcdir *d = t->srcdirs;

		t->srcdirs = d->next;
		if (d->root_fd >= 0)
			close(d->root_fd);
		free(d->path);
		free(d->file_devs);
		free(d);
	}
	free(t->srcdir_table);
	t->srcdir_table = NULL;
	t->srcdir_count = t->srcdir_cap = 0;
	free(t->ids);
	free(t->id_slots);
	t->ids = t->id_slots = NULL;
	t->id_count = t->id_slot_count = 0;
}

struct pack_srcdir *tree_srcdir_add(struct pack_tree *t, struct pack_srcdir *parent, const char *name,
				    const char *path, dev_t dev, ino_t ino, int root_fd)
{
	size_t len = strlen(name);
	struct pack_srcdir *d;

	if (t->srcdir_count == UINT32_MAX - 1)
		return NULL;
	if (t->srcdir_count == t->srcdir_cap) {
		uint32_t cap = t->srcdir_cap ? 2 * t->srcdir_cap : 64;
		void *p = realloc(t->srcdir_table, cap * sizeof(*t->srcdir_table));

		if (!p)
			return NULL;
		t->srcdir_table = p;
		t->srcdir_cap = cap;
	}
	d = malloc(sizeof(*d) + len + 1);
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return NULL;
	}
	t->srcdir_table[t->srcdir_count++] = d;
	d->index = t->srcdir_count;
	d->parent = parent;
	d->root_fd = root_fd;
	d->dev = dev;
	d->ino = ino;
	d->file_devs = NULL;
	d->file_dev_count = 0;
	memcpy(d->name, name, len + 1);
	d->next = t->srcdirs;
	t->srcdirs = d;
	return d;
}

static int child_add(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len,
		     struct pack_inode *inode)
{
	pack_child c;

	if (dir->u.dir.count >= TREE_DIR_ENTRIES_MAX)
		return -ENOMEM;
	if (dir->u.dir.count == dir->u.dir.cap) {
		size_t cap = dir->u.dir.cap ? dir->u.dir.cap * 2 : 8;
		void *p = spill_realloc(t->spill, dir->u.dir.children, dir->u.dir.cap * sizeof(*dir->u.dir.children),
					cap * sizeof(*dir->u.dir.children));

		if (!p)
			return -ENOMEM;
		dir->u.dir.children = p;
		dir->u.dir.cap = cap;
	}
	if (child_new(t, name, len, inode, &c) < 0)
		return -ENOMEM;
	inode->refs++;
	dir->u.dir.children[dir->u.dir.count++] = c;
	if (dir->u.dir.lookup) {
		if (2 * dir->u.dir.count + 2 > dir->u.dir.lookup_size)
			lookup_forget(t, dir);     /* the next lookup builds one twice the size */
		else
			lookup_put(dir, (uint32_t)dir->u.dir.count - 1);
	}
	return 0;
}

/*
 * Owners: a table of every id met and an open-addressed index of it, at
 * most half full.  A tree of one owner holds one id.
 */
#define TREE_ID_SLOTS_MIN 64u

static uint32_t id_slot(uint32_t id, uint32_t slots)
{
	return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (slots - 1);
}

static int ids_grow(struct pack_tree *t)
{
	uint32_t slots = t->id_slot_count ? 2 * t->id_slot_count : TREE_ID_SLOTS_MIN;
	uint32_t *index = calloc(slots, sizeof(*index));
	uint32_t *ids = realloc(t->ids, slots / 2 * sizeof(*ids));

	if (!index || !ids) {
		free(index);
		if (ids)
			t->ids = ids;
		return -ENOMEM;
	}
	t->ids = ids;
	for (uint32_t i = 0; i < t->id_count; i++) {
		uint32_t s = id_slot(ids[i], slots);

		while (index[s])
			s = (s + 1) & (slots - 1);
		index[s] = i + 1;
	}
	free(t->id_slots);
	t->id_slots = index;
	t->id_slot_count = slots;
	return 0;
}

int tree_id(struct pack_tree *t, uint32_t id, uint16_t *index)
{
	uint32_t s;

	if (2 * (t->id_count + 1) > t->id_slot_count && t->id_count < TREE_IDS_MAX && ids_grow(t) < 0)
		return -ENOMEM;
	for (s = id_slot(id, t->id_slot_count); t->id_slots[s]; s = (s + 1) & (t->id_slot_count - 1)) {
		if (t->ids[t->id_slots[s] - 1] == id) {
			*index = (uint16_t)(t->id_slots[s] - 1);
			return 0;
		}
	}
	if (t->id_count == TREE_IDS_MAX) {
		pack_error("id %u: more than %u distinct owners and groups (a squashfs image holds %u)", id,
			   TREE_IDS_MAX, TREE_IDS_MAX);
		return -E2BIG;
	}
	t->ids[t->id_count] = id;
	t->id_slots[s] = ++t->id_count;
	*index = (uint16_t)(t->id_count - 1);
	return 0;
}

int tree_set_owner(struct pack_tree *t, struct pack_inode *inode, uint32_t uid, uint32_t gid)
{
	int err;

	if (!inode->stored && t->forced_uid >= 0)
		uid = (uint32_t)t->forced_uid;
	if (!inode->stored && t->forced_gid >= 0)
		gid = (uint32_t)t->forced_gid;
	err = tree_id(t, uid, &inode->uid);

	return err ? err : tree_id(t, gid, &inode->gid);
}

void tree_take_metadata(struct pack_inode *old, struct pack_inode *inode)
{
	old->mode = inode->mode;
	old->uid = inode->uid;
	old->gid = inode->gid;
	old->mtime = inode->mtime;
	/* Directories both: their extra part is their xattrs alone. */
	tree_drop_xattrs(old);
	free(old->extra);
	old->extra = inode->extra;
	inode->extra = NULL;
}

struct pack_inode *tree_insert(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len,
			       struct pack_inode *inode)
{
	ssize_t i = lookup_index(t, dir, name, len);
	struct pack_inode *old = i < 0 ? NULL : tree_child_inode(dir->u.dir.children[i]);

	if (!old) {
		if (child_add(t, dir, name, len, inode) == 0)
			return inode;
		inode->refs++;
		tree_inode_put(t, inode);
		return NULL;
	}
	if (tree_is_dir(old) && tree_is_dir(inode)) {
		tree_take_metadata(old, inode);
		inode->refs++;
		tree_inode_put(t, inode);
		return old;
	}
	inode->refs++;
	if (child_retarget(t, dir, (size_t)i, inode) < 0) {
		tree_inode_put(t, inode);
		return NULL;
	}
	return inode;
}

int tree_rename(struct pack_tree *t, struct pack_inode *dir, pack_child c, const char *name, size_t len)
{
	pack_child renamed;

	if (child_new(t, name, len, tree_child_inode(c), &renamed) < 0)    /* c may hold the old name */
		return -ENOMEM;
	for (size_t i = 0; i < dir->u.dir.count; i++)
		if (dir->u.dir.children[i].bits == c.bits)
			dir->u.dir.children[i] = renamed;
	lookup_forget(t, dir);
	return 0;
}

int tree_link(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len,
	      struct pack_inode *inode)
{
	ssize_t i = lookup_index(t, dir, name, len);

	if (i >= 0) {
		if (tree_child_inode(dir->u.dir.children[i]) == inode)
			return 0;
		inode->refs++;
		if (child_retarget(t, dir, (size_t)i, inode) < 0) {
			inode->refs--;
			return -ENOMEM;
		}
		return 0;
	}
	return child_add(t, dir, name, len, inode);
}

struct pack_inode *tree_walk_parent(struct pack_tree *t, const char *path, const struct pack_meta *implicit,
				    const char **leaf, size_t *leaf_len)
{
	struct pack_inode *dir = t->root;
	unsigned depth = 0;

	for (;;) {
		const char *slash = strchr(path, '/');
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
		sub = tree_lookup(t, dir, path, len);
		if (sub && tree_is_dir(sub)) {
			dir = sub;
		} else {
			sub = tree_inode_new(t, implicit->mode);
			if (!sub)
				return NULL;
			sub->mtime = implicit->mtime;
			if (tree_set_owner(t, sub, implicit->uid, implicit->gid) < 0) {
				sub->refs = 1;
				tree_inode_put(t, sub);
				return NULL;
			}
			dir = tree_insert(t, dir, path, len, sub);
			if (!dir)
				return NULL;
		}
		path = slash + 1;
	}
}

/* Bytewise, as squashfs orders names (and strcmp() would, NUL being the end of both). */
int tree_child_cmp(const void *a, const void *b)
{
	return strcmp(tree_child_name(*(const pack_child *)a), tree_child_name(*(const pack_child *)b));
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
		for (uint32_t k = 0; k < tree_xattrs(inode)->count; k++) {
			if (strcmp(tree_xattrs(inode)->list[k].name, a->name) == 0) {
				pack_error("-xattrs-add %s: a file has that xattr already (as mksquashfs, refused)",
					   a->name);
				return -EEXIST;
			}
		}
		err = tree_xattr_add(inode, a->name, a->value, a->len);
	}
	if (!err && tree_xattrs_mut(inode))
		tree_xattrs_normalize(tree_xattrs_mut(inode));
	return err;
}

/* The owner overrides, and mksquashfs's -force-file-mode and -force-dir-mode. */
static int force_owner_mode(struct pack_tree *t, struct pack_inode *inode, const struct pack_overrides *o)
{
	const struct mode_spec *forced;
	int err = 0;

	if (o->all_root)
		err = tree_set_owner(t, inode, 0, 0);
	if (!err && o->uid >= 0)
		err = tree_id(t, (uint32_t)o->uid, &inode->uid);
	if (!err && o->gid >= 0)
		err = tree_id(t, (uint32_t)o->gid, &inode->gid);
	if (!err && (forced = tree_is_dir(inode) ? o->dir_mode : o->file_mode) != NULL)
		inode->mode = mode_apply(forced, inode->mode);
	return err;
}

static int apply_overrides(struct pack_tree *t, struct pack_inode *inode, const struct pack_overrides *o)
{
	int err;

	if (inode->stored)
		return 0;   /* appended to: kept as the image has it, as mksquashfs keeps it */
	if (o->mode >= 0)
		inode->mode = (inode->mode & 0170000) | ((uint32_t)o->mode & 07777);
	err = force_owner_mode(t, inode, o);
	if (err)
		return err;
	if (o->mtime >= 0)
		inode->mtime = tree_time(o->mtime);
	else if (o->mtime_max >= 0 && inode->mtime > o->mtime_max)
		inode->mtime = tree_time(o->mtime_max);
	if (tree_xattrs_mut(inode) && !o->no_xattrs)
		tree_xattrs_filter(tree_xattrs_mut(inode), o->xattrs_include, o->xattrs_exclude);
	if (o->no_xattrs || tree_xattrs(inode)->count == 0)
		tree_drop_xattrs(inode);
	return o->no_xattrs ? 0 : add_xattrs(inode, o);
}

/* First sight of an inode in the final tree: count it once. */
static int count_inode(struct pack_tree *t, struct pack_inode *inode, const struct pack_overrides *o)
{
	int err;

	spill_tick(t->spill, inode);
	err = apply_overrides(t, inode, o);

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
		qsort(dir->u.dir.children, dir->u.dir.count, sizeof(*dir->u.dir.children), tree_child_cmp);
	lookup_forget(t, dir);         /* its indices are the unsorted order's */
	for (size_t i = 0; !err && i < dir->u.dir.count; i++) {
		struct pack_inode *inode = tree_child_inode(dir->u.dir.children[i]);

		if (tree_is_dir(inode)) {
			subdirs++;
			err = count_inode(t, inode, o);
			if (!err)
				err = finish_dir(t, inode, o);
		} else if (!inode->counted) {
			inode->counted = true;
			t->hardlinked += inode->refs > 1;
			err = count_inode(t, inode, o);
		}
	}
	dir->u.dir.nlink = 2 + subdirs;
	return err;
}

struct pack_inode *tree_find_path(struct pack_tree *t, const char *path)
{
	struct pack_inode *dir = t->root;

	for (;;) {
		size_t n = strcspn(path, "/");
		struct pack_inode *inode = tree_lookup(t, dir, path, n);

		if (!inode)
			return NULL;
		if (!path[n])
			return inode;
		if (!tree_is_dir(inode))
			return NULL;
		dir = inode;
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

struct force_walk {
	struct pack_tree *tree;
	const struct pack_overrides *o;
	bool mark;                  /* the pass: apply and set 'counted', or clear it */
};

/*
 * A hard link is met once a name: 'counted' (free until tree_finish())
 * keeps a second meeting from changing its mode again, for a mode change
 * such as "o=u,u=g" is not the same done twice.
 */
static int force_one(struct pack_inode *inode, void *arg)
{
	struct force_walk *w = arg;

	if (!w->mark) {
		inode->counted = false;
		return 0;
	}
	if (inode->counted || inode->stored)
		return 0;
	inode->counted = true;
	return force_owner_mode(w->tree, inode, w->o);
}

int tree_force_owners_modes(struct pack_tree *t, const struct pack_overrides *o)
{
	struct force_walk w = { .tree = t, .o = o, .mark = true };
	int err = force_one(t->root, &w);

	if (!err)
		err = tree_walk_files(t->root, force_one, &w);
	w.mark = false;
	force_one(t->root, &w);
	tree_walk_files(t->root, force_one, &w);
	return err;
}

static int walk(struct pack_inode *dir, tree_visit_fn fn, void *arg)
{
	for (size_t i = 0; i < dir->u.dir.count; i++) {
		struct pack_inode *inode = tree_child_inode(dir->u.dir.children[i]);
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

uint32_t *blocks_slot(struct pack_extra *b, uint32_t i)
{
	uint32_t **page = &b->pages[i / BLOCK_LIST_PAGE];

	if (!*page && !(*page = calloc(BLOCK_LIST_PAGE, sizeof(**page))))
		return NULL;
	return &(*page)[i % BLOCK_LIST_PAGE];
}
