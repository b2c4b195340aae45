/*
 * names.c - the catalog's tree of names (directories, images, aliases),
 * kept sorted for lookups, and the rules for which file names give which
 * names.  Every change to a name queues a notice for the watcher, which
 * tells the kernel to forget the entry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"

#define QC_NOTIFY_MAX 65536         /* invalidations queued for the watcher; more: a full flush */

const char *const qc_image_exts[QC_NEXTS] = { ".sqfs", ".squashfs", ".img", ".sif" };

static int kid_index(const struct qc_node *dir, const char *name, bool *found)
{
	int lo = 0, hi = (int)dir->nkids;

	while (lo < hi) {
		int mid = (lo + hi) / 2, cmp = strcmp(dir->kids[mid]->name, name);

		if (cmp == 0) {
			*found = true;
			return mid;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

struct qc_node *qc_find_kid(const struct qc_node *dir, const char *name)
{
	bool found;
	int i = kid_index(dir, name, &found);

	return found ? dir->kids[i] : NULL;
}

void qc_queue_notice(struct qm_catalog *c, const struct qc_node *parent, const char *name)
{
	pthread_mutex_lock(&c->nlock);
	if (c->nnotices == c->notices_cap && !c->flush_all) {
		size_t cap = c->notices_cap ? c->notices_cap * 2 : 64;
		void *p = cap <= QC_NOTIFY_MAX ? realloc(c->notices, cap * sizeof(*c->notices)) : NULL;

		if (p) {
			c->notices = p;
			c->notices_cap = cap;
		} else {
			c->flush_all = true;
		}
	}
	if (!c->flush_all) {
		c->notices[c->nnotices].parent = qc_dir_nodeid(parent);
		c->notices[c->nnotices].name = strdup(name);
		if (c->notices[c->nnotices].name)
			c->nnotices++;
		else
			c->flush_all = true;
	}
	pthread_mutex_unlock(&c->nlock);
}

/* Room in c->dirs for index 'index'; new entries NULL. */
static bool dirs_room(struct qm_catalog *c, uint32_t index)
{
	uint32_t cap = c->dirs_cap;
	void *p;

	if (index < cap)
		return true;
	while (cap <= index)
		cap *= 2;
	if (!(p = realloc(c->dirs, cap * sizeof(*c->dirs))))
		return false;
	c->dirs = p;
	memset(c->dirs + c->dirs_cap, 0, (cap - c->dirs_cap) * sizeof(*c->dirs));
	c->dirs_cap = cap;
	return true;
}

struct qc_node *qc_add_kid(struct qm_catalog *c, struct qc_node *dir, const char *name, bool is_dir)
{
	return qc_add_kid_at(c, dir, name, is_dir, c->ndirs);
}

struct qc_node *qc_add_kid_at(struct qm_catalog *c, struct qc_node *dir, const char *name, bool is_dir,
			      uint32_t index)
{
	struct qc_node *n;
	bool found;
	int i = kid_index(dir, name, &found);

	if (dir->nkids == dir->kids_cap) {
		uint32_t cap = dir->kids_cap ? dir->kids_cap * 2 : 8;
		void *p = realloc(dir->kids, cap * sizeof(*dir->kids));

		if (!p)
			return NULL;
		dir->kids = p;
		dir->kids_cap = cap;
	}
	if (is_dir && !dirs_room(c, index))
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	n->parent = dir;
	n->is_dir = is_dir;
	if (is_dir) {
		n->dir_index = index;
		c->dirs[index] = n;
		if (index >= c->ndirs)
			c->ndirs = index + 1;
	}
	memmove(dir->kids + i + 1, dir->kids + i, (dir->nkids - (uint32_t)i) * sizeof(*dir->kids));
	dir->kids[i] = n;
	dir->nkids++;
	return n;
}

void qc_free_node(struct qm_catalog *c, struct qc_node *n)
{
	for (uint32_t i = 0; i < n->nkids; i++)
		qc_free_node(c, n->kids[i]);
	if ((n->is_dir || n->is_alias) && n != &c->root) {
		c->dirs[n->dir_index] = NULL;
		qc_journal_gone(c, false, n->dir_index);
	}
	if (n->is_alias)
		c->naliases--;
	free(n->kids);
	free(n->target);
	if (n != &c->root) {
		free(n->name);
		free(n);
	}
}

/*
 * An alias entry: a node id of slot 0 like a directory's, never reused, so
 * that a changed target is a new symlink to the kernel, which caches the
 * text of each.
 */
struct qc_node *qc_add_alias(struct qm_catalog *c, struct qc_node *dir, const char *name, const char *target)
{
	struct qc_node *n = qc_add_alias_at(c, dir, name, target, c->ndirs);

	if (n)
		qc_journal_dir(c, n);
	return n;
}

struct qc_node *qc_add_alias_at(struct qm_catalog *c, struct qc_node *dir, const char *name, const char *target,
				uint32_t index)
{
	char *t = strdup(target);
	struct qc_node *n = t ? qc_add_kid_at(c, dir, name, true, index) : NULL;

	if (!n) {
		free(t);
		return NULL;
	}
	n->is_dir = false;
	n->is_alias = true;
	n->target = t;
	c->naliases++;
	return n;
}

/* Take 'n' out of its parent; its image versions stay in their slots. */
void qc_remove_kid(struct qm_catalog *c, struct qc_node *n)
{
	struct qc_node *dir = n->parent;
	bool found;
	int i = kid_index(dir, n->name, &found);

	if (found) {
		memmove(dir->kids + i, dir->kids + i + 1, (dir->nkids - (uint32_t)i - 1) * sizeof(*dir->kids));
		dir->nkids--;
	}
	qc_queue_notice(c, dir, n->name);
	qc_free_node(c, n);
}

bool qc_has_image_ext(const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(qc_image_exts) / sizeof(qc_image_exts[0]); i++) {
		size_t e = strlen(qc_image_exts[i]);

		if (len > e && strcmp(name + len - e, qc_image_exts[i]) == 0)
			return true;
	}
	return false;
}

/* Control characters make names that forge lines in the status text and reach terminals. */
bool qc_has_control(const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return true;
	return false;
}

bool qc_entry_listed(const char *name)
{
	return name[0] != '.' && !qc_has_control(name);
}

/* The name an image's key gives its last component: the extension dropped. */
void qc_strip_ext(char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(qc_image_exts) / sizeof(qc_image_exts[0]); i++) {
		size_t e = strlen(qc_image_exts[i]);

		if (len > e && strcmp(name + len - e, qc_image_exts[i]) == 0) {
			name[len - e] = '\0';
			return;
		}
	}
}

/* A name an image may take: checked after its extension is dropped ("..sqfs" is ".."). */
bool qc_image_name_ok(const char *name)
{
	return *name && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !qc_has_control(name) &&
	       strcmp(name, QC_CTL_STATUS_NAME) != 0 && strcmp(name, QC_CTL_REFRESH_NAME) != 0;
}
