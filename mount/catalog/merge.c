/*
 * merge.c - a listing merged into the names (c->lock held for writing):
 * new and changed images get a new version, names the listing no longer
 * has go, clashes are settled (a directory wins over an image, the first
 * key over the next) and aliases join once every image has its name.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "mount_int.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The same key too: a file renamed to another extension keeps its inode, size and time, not its key. */
static bool same_identity(const struct qc_image *im, const struct item *x)
{
	return strcmp(im->key, x->key) == 0 && im->size == x->size && im->mtime == x->mtime && im->dev == x->dev && im->ino == x->ino &&
	       qc_etag_eq(im->etag, x->etag) && qc_etag_eq(im->root_hash, x->root_hash);
}

static void supersede(struct qm_catalog *c, struct qc_image *im)
{
	atomic_store(&im->superseded, true);
	atomic_fetch_add(&c->epoch, 1);
}

int qc_cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->key, ((const struct item *)b)->key);
}

/* Is 'key' in the listing (sorted by key)? */
static bool listed(const struct items *all, const char *key)
{
	struct item probe = { .key = (char *)key };
	const struct item *x = all ? bsearch(&probe, all->v, all->n, sizeof(*all->v), qc_cmp_item) : NULL;

	return x && !x->is_link;
}

/*
 * A listed key that gets no name: the same name is a directory, or another
 * key listed first (a.sqfs and a.img).  The first QC_SHADOWED_SHOWN are
 * kept for the status text; all are counted, and logged once the count
 * changes.
 */
static void shadow(struct qm_catalog *c, const char *key, const char *by)
{
	if (c->nshadowed < QC_SHADOWED_SHOWN)
		snprintf(c->shadowed[c->nshadowed], sizeof(c->shadowed[0]), "%s (by %s)", key, by);
	c->nshadowed++;
}

/* The catalog directory a key's directories name, made as needed; NULL: too deep or no memory. */
static struct qc_node *key_dir(struct qm_catalog *c, char *key, char **last, int *err, const struct items *all)
{
	char *comp, *next, *save = NULL;
	struct qc_node *dir = &c->root, *n;
	unsigned depth = 0;

	*err = 0;
	for (comp = strtok_r(key, "/", &save); comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!next)
			break;
		if (++depth > QC_DEPTH_MAX || strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
			return NULL;
		n = qc_find_kid(dir, comp);
		if (n && n->is_alias) {
			qc_remove_kid(c, n);       /* a directory wins over an alias too */
			n = NULL;
		} else if (n && !n->is_dir) {
			/* a directory wins over an image of its name, whichever the listing gave first */
			if (listed(all, n->cur->key))
				shadow(c, n->cur->key, "a directory of the same name");
			supersede(c, n->cur);
			c->nimages--;
			qc_remove_kid(c, n);
			n = NULL;
		}
		if (!n) {
			n = qc_add_kid(c, dir, comp, true);
			if (!n) {
				*err = -ENOMEM;
				return NULL;
			}
			qc_journal_dir(c, n);
			qc_queue_notice(c, dir, comp);
			c->changed = time(NULL);
		}
		n->seen = true;
		dir = n;
	}
	*last = comp;
	return comp ? dir : NULL;
}

/* A version's access bits changed with no new bytes (chmod): new lookups get the new ones. */
static void update_access(struct qm_catalog *c, struct qc_node *dir, struct qc_node *n, const struct item *x)
{
	struct qc_image *im = n->cur;

	if (im->mode == x->mode && im->uid == x->uid && im->gid == x->gid)
		return;
	im->mode = x->mode;
	im->uid = x->uid;
	im->gid = x->gid;
	qc_journal_slot(c, im);
	qc_queue_notice(c, dir, n->name);
	atomic_fetch_add(&c->epoch, 1);
}

/*
 * One listed image into the tree (c->lock held for writing).  When no slot
 * is free for a changed image, it keeps its old version (counted in
 * c->slots_short) and the rest of the listing still merges.
 */
/*
 * The directory a listed key goes in, its own name in *comp (inside key,
 * the extension dropped): NULL with *err, 0 when the name is none an image
 * may take.
 */
static struct qc_node *key_place(struct qm_catalog *c, const char *listed, char key[QC_KEY_MAX + 1], char **comp,
				 int *err, const struct items *all)
{
	struct qc_node *dir;

	snprintf(key, QC_KEY_MAX + 1, "%s", listed);
	dir = key_dir(c, key, comp, err, all);
	if (!dir)
		return NULL;
	qc_strip_ext(*comp);
	if (!qc_image_name_ok(*comp)) {
		*err = 0;
		return NULL;
	}
	return dir;
}

int qc_merge_item(struct qm_catalog *c, const struct item *x, const struct items *all)
{
	char key[QC_KEY_MAX + 1], *comp = NULL, *root_hash = NULL;
	struct qc_node *dir, *n;
	struct qc_image *im;
	int err;

	if (x->is_link)
		return 0;               /* merge_alias(), once every image has its name */
	dir = key_place(c, x->key, key, &comp, &err, all);
	if (!dir)
		return err;
	n = qc_find_kid(dir, comp);
	if (n && n->is_alias) {
		qc_remove_kid(c, n);       /* an image wins over an alias of its name */
		n = NULL;
	}
	/* of two keys of one name, the one that has it keeps it; else the first in key order */
	if (n && (n->is_dir || n->seen || (strcmp(n->cur->key, x->key) != 0 && listed(all, n->cur->key)))) {
		shadow(c, x->key, n->is_dir ? "a directory of the same name" : "another image of the same name");
		return 0;
	}
	if (n && same_identity(n->cur, x)) {
		n->seen = true;
		update_access(c, dir, n, x);
		return 0;
	}
	if (x->root_hash && !(root_hash = strdup(x->root_hash)))
		return -ENOMEM;
	im = qc_new_version(c, x->key, x->etag, &err);
	if (!im) {
		free(root_hash);
		if (err != -ENOSPC)
			return err;
		c->slots_short++;
		if (n)
			n->seen = true;
		return 0;
	}
	im->root_hash = root_hash;
	im->size = x->size;
	im->mtime = x->mtime;
	im->dev = x->dev;
	im->ino = x->ino;
	im->mode = x->mode;
	im->uid = x->uid;
	im->gid = x->gid;
	if (n) {
		supersede(c, n->cur);
	} else {
		n = qc_add_kid(c, dir, comp, false);
		if (!n) {
			atomic_store(&im->superseded, true);    /* never named: the sweep takes its slot back */
			return -ENOMEM;
		}
		c->nimages++;
	}
	im->version = ++n->versions;
	/* before the kernel can see its node id: a restart gives the slot the same meaning */
	qc_journal_slot(c, im);
	n->cur = im;
	n->seen = true;
	qc_queue_notice(c, dir, comp);
	c->changed = time(NULL);
	atomic_fetch_add(&c->epoch, 1);
	return 0;
}

/* A symlink named as an image that is no alias: the first few kept for the status, all hashed. */
static void unserved(struct qm_catalog *c, const char *key, const char *why)
{
	char line[sizeof(c->unserved[0])];
	uint64_t h;

	snprintf(line, sizeof(line), "%s: %s", key, why);
	if (c->nunserved < QC_SHADOWED_SHOWN)
		memcpy(c->unserved[c->nunserved], line, sizeof(line));
	c->nunserved++;
	h = XXH3_64bits(line, strlen(line));
	if (c->nnow_unserved == c->now_cap) {
		size_t cap = c->now_cap ? c->now_cap * 2 : 16;
		void *p = realloc(c->now_unserved, cap * sizeof(h));

		if (!p)
			return;         /* not remembered: logged again next time, no worse */
		c->now_unserved = p;
		c->now_cap = cap;
	}
	c->now_unserved[c->nnow_unserved++] = h;
	if (c->was_unserved && bsearch(&h, c->was_unserved, c->nwas_unserved, sizeof(h), cmp_u64))
		return;
	if (c->nnewly < QC_SHADOWED_SHOWN)
		memcpy(c->newly[c->nnewly], line, sizeof(line));
	c->nnewly++;
}

/* The symlinks this merge found unserved become the ones the next compares with; the new ones are logged. */
static void log_unserved(struct qm_catalog *c)
{
	uint64_t *p = c->was_unserved;
	size_t cap = c->was_cap;

	if (c->nnow_unserved)
		qsort(c->now_unserved, c->nnow_unserved, sizeof(*c->now_unserved), cmp_u64);
	c->was_unserved = c->now_unserved;
	c->nwas_unserved = c->nnow_unserved;
	c->was_cap = c->now_cap;
	c->now_unserved = p;
	c->now_cap = cap;
	c->nnow_unserved = 0;
	for (size_t i = 0; i < c->nnewly && i < QC_SHADOWED_SHOWN; i++)
		qm_log(c->fs, "catalog: %s: symlink not served: %s", c->fs->name, c->newly[i]);
	if (c->nnewly > QC_SHADOWED_SHOWN)
		qm_log(c->fs, "catalog: %s: %zu more symlinks not served", c->fs->name, c->nnewly - QC_SHADOWED_SHOWN);
	c->nnewly = 0;
}

/* The node of the image whose key is 'key', if that key has the name: NULL if not. */
static struct qc_node *image_node(struct qm_catalog *c, const char *key)
{
	char buf[QC_KEY_MAX + 1], *comp, *next, *save = NULL;
	struct qc_node *n = &c->root;

	snprintf(buf, sizeof(buf), "%s", key);
	for (comp = strtok_r(buf, "/", &save); comp && n; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!next)
			qc_strip_ext(comp);
		n = n->is_dir ? qc_find_kid(n, comp) : NULL;
	}
	return n && !n->is_dir && !n->is_alias && strcmp(n->cur->key, key) == 0 ? n : NULL;
}

/*
 * One listed symlink into the tree, after every image (c->lock held for
 * writing): an alias entry if its target is an image with a name of its
 * own, else a line of the status saying why not.  A name an image or a
 * directory has stays theirs.
 */
static int merge_alias(struct qm_catalog *c, const struct item *x, const struct items *all)
{
	char key[QC_KEY_MAX + 1], from[QC_KEY_MAX + 1], to[QC_KEY_MAX + 1], text[3 * QC_KEY_MAX + 1], *comp = NULL;
	struct qc_node *dir, *n;
	int err;

	const char *target = x->alias;

	if (!target) {
		unserved(c, x->key, x->why);
		return 0;
	}
	/* A remote index's alias may name another alias: the chain ends at an image, as a local one does. */
	for (unsigned hops = 1; !image_node(c, target); hops++) {
		struct item probe = { .key = (char *)target };
		const struct item *y = bsearch(&probe, all->v, all->n, sizeof(*all->v), qc_cmp_item);

		if (!y || !y->is_link || !y->alias) {
			unserved(c, x->key, "its target is no image this catalog serves");
			return 0;
		}
		if (hops == QC_ALIAS_HOPS) {
			unserved(c, x->key, "it takes more than 8 aliases to reach an image");
			return 0;
		}
		target = y->alias;
	}
	snprintf(from, sizeof(from), "%s", x->key);
	qc_strip_ext(from);
	snprintf(to, sizeof(to), "%s", target);
	qc_strip_ext(to);
	if (qc_alias_relative(from, to, text, sizeof(text)) != 0) {
		unserved(c, x->key, "its target's name is too long");
		return 0;
	}
	dir = key_place(c, x->key, key, &comp, &err, all);
	if (!dir)
		return err;
	n = qc_find_kid(dir, comp);
	if (n && (!n->is_alias || n->seen)) {
		shadow(c, x->key, n->is_dir ? "a directory of the same name" :
			  n->is_alias ? "another alias of the same name" : "an image of the same name");
		return 0;
	}
	if (n && strcmp(n->target, text) == 0) {
		n->seen = true;
		return 0;
	}
	if (n)
		qc_remove_kid(c, n);
	n = qc_add_alias(c, dir, comp, text);
	if (!n)
		return -ENOMEM;
	n->seen = true;
	qc_queue_notice(c, dir, comp);
	c->changed = time(NULL);
	atomic_fetch_add(&c->epoch, 1);
	return 0;
}

static void clear_seen(struct qc_node *dir)
{
	for (uint32_t i = 0; i < dir->nkids; i++) {
		dir->kids[i]->seen = false;
		if (dir->kids[i]->is_dir)
			clear_seen(dir->kids[i]);
	}
}

/* Names the listing no longer has go (their versions close once unused); so do emptied directories. */
static void drop_unseen(struct qm_catalog *c, struct qc_node *dir)
{
	for (uint32_t i = dir->nkids; i-- > 0;) {
		struct qc_node *n = dir->kids[i];

		if (n->is_dir)
			drop_unseen(c, n);
		if (n->seen && !(n->is_dir && n->nkids == 0))
			continue;
		if (!n->is_dir && !n->is_alias) {
			supersede(c, n->cur);
			c->nimages--;
		}
		qc_remove_kid(c, n);
		c->changed = time(NULL);
	}
}

/* Under nlock: the status text reads it while a listing writes it. */
static void set_list_error(struct qm_catalog *c, const char *msg)
{
	pthread_mutex_lock(&c->nlock);
	snprintf(c->list_error, sizeof(c->list_error), "%s", msg);
	pthread_mutex_unlock(&c->nlock);
}

/* Merge a listing into the tree: 0 or -ENOMEM (what merged so far stays). */
int qc_merge(struct qm_catalog *c, struct items *items)
{
	int err = 0;

	size_t shadowed_before = c->nshadowed;

	c->slots_short = 0;
	pthread_rwlock_wrlock(&c->lock);
	c->nshadowed = 0;
	c->nunserved = 0;
	c->nnow_unserved = c->nnewly = 0;
	clear_seen(&c->root);
	for (size_t i = 0; !err && i < items->n; i++)
		err = qc_merge_item(c, &items->v[i], items);
	for (size_t i = 0; !err && i < items->n; i++)
		if (items->v[i].is_link)
			err = merge_alias(c, &items->v[i], items);
	if (!err)
		drop_unseen(c, &c->root);
	pthread_rwlock_unlock(&c->lock);
	if (!err)
		log_unserved(c);
	if (c->nshadowed && c->nshadowed != shadowed_before)
		qm_log(c->fs, "catalog: %s: %zu images have no name of their own, first %s; a directory wins over "
		       "an image, and the first key listed over the next", c->fs->name, c->nshadowed, c->shadowed[0]);
	if (c->slots_short)
		qm_log(c->fs, "catalog: %s: %zu changed images keep their old version: all %u version slots are "
		       "held by files open or names the kernel still caches", c->fs->name, c->slots_short,
		       QC_SLOTS_MAX);
	return err;
}

/*
 * List the source and merge: 0, or -errno with c->list_error set (the tree
 * is kept as it was).  The watcher's and qc_create()'s alone: a request
 * never lists.  A listing equal to the last merged one takes no write lock.
 */
int qc_refresh(struct qm_catalog *c)
{
	struct items items = { .hash = XXH3_createState() };
	uint64_t hash;
	int err;

	if (!items.hash)
		return -ENOMEM;
	XXH3_64bits_reset(items.hash);
	pthread_mutex_lock(&c->list_lock);
	err = qc_list_source(c, &items);
	c->listed_at = qc_now_s();
	atomic_store(&c->listed_at_ms, qc_now_ms());
	if (err) {
		set_list_error(c, err == -ENOMEM ? "out of memory" : c->remote ? qs_last_error() : strerror(-err));
		qc_items_free(&items);
		pthread_mutex_unlock(&c->list_lock);
		return err;
	}
	set_list_error(c, "");
	if (items.too_many)
		qm_log(c->fs, "catalog: more than %u images; the rest are left out", QC_ENTRIES_MAX);
	hash = XXH3_64bits_digest(items.hash);
	if (hash != atomic_load(&c->last_hash) || c->slots_short) {
		if (items.n)    /* an empty listing has no array to sort */
			qsort(items.v, items.n, sizeof(*items.v), qc_cmp_item);     /* names do not hang on listing order */
		atomic_store(&c->last_hash, hash);      /* before the merge: a probe during it clears it */
		err = qc_merge(c, &items);
		if (err)
			atomic_store(&c->last_hash, 0);
	}
	pthread_mutex_unlock(&c->list_lock);
	qc_items_free(&items);
	/* the listing's copies are gone: give their pages back rather than keep them for the next one */
	malloc_trim(0);
	if (err)
		set_list_error(c, "out of memory");
	return err;
}
