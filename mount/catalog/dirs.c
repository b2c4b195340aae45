/*
 * dirs.c - the catalog's own directories and aliases as the operations
 * (ops.c) ask for them: attributes, lookups (a local name not listed yet
 * is looked at alone) and snapshots of a directory for readdir.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_int.h"
#include "mount_int.h"

/*
 * An image's NAME directory.  With file_modes (allow_other), it is the
 * image file's owner's and group's, and each of the file's read bits gives
 * r-x: the kernel (default_permissions) then lets in exactly those who
 * could read the file, groups and all, cached dentries or not.
 */
static void image_attr(const struct qm_catalog *c, const struct qc_image *im, struct qc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->nodeid = (uint64_t)im->slot << QC_SLOT_SHIFT | 1;
	a->ino = (uint64_t)im->slot << 32;
	a->mtime = im->mtime;
	a->nlink = 2;
	a->mode = 0555;
	if (c->file_modes && !c->remote) {
		a->mode = (im->mode & 0444) | (im->mode & 0444) >> 2;
		a->own = true;
		a->uid = im->uid;
		a->gid = im->gid;
	}
}

static void node_attr(const struct qm_catalog *c, const struct qc_node *n, struct qc_attr *a)
{
	if (n->is_alias) {
		memset(a, 0, sizeof(*a));
		a->is_alias = true;
		a->nodeid = qc_dir_nodeid(n);
		a->ino = a->nodeid;
		a->mtime = c->changed;
		a->nlink = 1;
		a->mode = 0777;
		a->size = strlen(n->target);
		return;
	}
	if (!n->is_dir) {
		image_attr(c, n->cur, a);
		return;
	}
	memset(a, 0, sizeof(*a));
	a->is_dir = true;
	a->nodeid = qc_dir_nodeid(n);
	a->ino = a->nodeid;
	a->mtime = c->changed;
	a->nlink = 2;
	a->mode = 0555;
	for (uint32_t i = 0; i < n->nkids; i++)
		a->nlink += n->kids[i]->is_dir;
}

/* The directory or alias a node id of slot 0 names. */
static struct qc_node *node_of(struct qm_catalog *c, uint64_t nodeid)
{
	if (nodeid == 0 || nodeid > c->ndirs)
		return NULL;
	return c->dirs[nodeid - 1];
}

static struct qc_node *dir_of(struct qm_catalog *c, uint64_t nodeid)
{
	struct qc_node *n = node_of(c, nodeid);

	return n && n->is_dir ? n : NULL;
}

int qc_alias_text(struct qm_catalog *c, uint64_t nodeid, char *buf, size_t size)
{
	struct qc_node *n;
	int err = -EINVAL;

	pthread_rwlock_rdlock(&c->lock);
	n = node_of(c, nodeid);
	if (!n)
		err = -ENOENT;
	else if (n->is_alias && strlen(n->target) < size) {
		strcpy(buf, n->target);
		err = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return err;
}

int qc_dir_attr(struct qm_catalog *c, uint64_t nodeid, struct qc_attr *out)
{
	struct qc_node *d;

	pthread_rwlock_rdlock(&c->lock);
	d = node_of(c, nodeid);
	if (d)
		node_attr(c, d, out);
	pthread_rwlock_unlock(&c->lock);
	return d ? 0 : -ENOENT;
}

int qc_image_attr(struct qm_catalog *c, uint32_t slot, struct qc_attr *out)
{
	struct qc_image *im = qc_slot(c, slot);

	if (!im)
		return -ESTALE;
	pthread_rwlock_rdlock(&c->lock);        /* update_access() writes the bits under it */
	image_attr(c, im, out);
	pthread_rwlock_unlock(&c->lock);
	return 0;
}

/* 'name' in 'parent'; an image's lookup is counted while c->lock keeps its version current. */
static int lookup_locked(struct qm_catalog *c, uint64_t parent, const char *name, struct qc_attr *out)
{
	struct qc_node *d, *n;
	int err = -ENOENT;

	pthread_rwlock_rdlock(&c->lock);
	d = dir_of(c, parent);
	if (!d) {
		err = -ESTALE;
	} else if ((n = qc_find_kid(d, name))) {
		node_attr(c, n, out);
		if (!n->is_dir && !n->is_alias)
			atomic_fetch_add(&n->cur->lookups, 1);
		err = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return err;
}

bool qc_lookup_ref(struct qm_catalog *c, const struct qc_attr *a, uint64_t serial)
{
	struct qc_image *im;
	bool ok;

	if (a->is_dir || a->is_alias)
		return true;
	/* the slot lock keeps qc_reclaim() from taking the slot between the look and the count */
	pthread_mutex_lock(&c->slot_lock);
	im = qc_slot(c, qc_slot_of(a->nodeid));
	ok = im && im->serial == serial;
	if (ok)
		atomic_fetch_add(&im->lookups, 1);
	pthread_mutex_unlock(&c->slot_lock);
	return ok;
}

/* The key prefix of catalog directory 'parent' ("" for the root, else ending in '/'); false: gone or too long. */
static bool dir_key(struct qm_catalog *c, uint64_t parent, char *path, size_t size)
{
	char tmp[2 * QC_KEY_MAX + 2];
	struct qc_node *d;
	bool ok = true;

	path[0] = '\0';
	pthread_rwlock_rdlock(&c->lock);
	d = dir_of(c, parent);
	ok = d != NULL;
	for (; d && d->parent; d = d->parent) {
		size_t n = (size_t)snprintf(tmp, sizeof(tmp), "%s/%s", d->name, path);

		if (n >= size) {
			ok = false;
			break;
		}
		memcpy(path, tmp, n + 1);
	}
	pthread_rwlock_unlock(&c->lock);
	return ok;
}

/* The directory of key prefix 'path', walked one name at a time with O_NOFOLLOW; -errno if gone. */
static int open_key_dir(struct qm_catalog *c, const char *path)
{
	char buf[QC_KEY_MAX + 1], *name, *save = NULL;
	int dfd = c->root_fd;

	snprintf(buf, sizeof(buf), "%s", path);
	for (name = strtok_r(buf, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (dfd != c->root_fd)
			close(dfd);
		if (fd < 0)
			return -errno;
		dfd = fd;
	}
	return dfd;
}

/*
 * A file in a local catalog that would list as 'name' in 'parent', merged
 * alone: a name created a moment ago is found before inotify's listing,
 * with a few fstatat()s and one open at most, never a listing.  0 if it
 * was merged, else -ENOENT.
 */
static int probe_local(struct qm_catalog *c, uint64_t parent, const char *name)
{
	char path[QC_KEY_MAX + 1], key[2 * QC_KEY_MAX + 2], file[NAME_MAX + 1];
	struct items items = { .hash = XXH3_createState() };
	struct stat st;
	int dfd = -1, err = -ENOENT;

	/* hidden names are never images in a local catalog: the listing skips them too */
	if (name[0] == '.' || !qc_image_name_ok(name) || !items.hash || !dir_key(c, parent, path, sizeof(path)) ||
	    (dfd = open_key_dir(c, path)) < 0)
		goto out;
	XXH3_64bits_reset(items.hash);
	for (size_t i = 0; err && i <= sizeof(qc_image_exts) / sizeof(qc_image_exts[0]); i++) {
		const char *ext = i < sizeof(qc_image_exts) / sizeof(qc_image_exts[0]) ? qc_image_exts[i] : "";

		/* no extension: an image by its magic, whose name has no extension that would rename it */
		if ((!*ext && qc_has_image_ext(name)) ||
		    (size_t)snprintf(file, sizeof(file), "%s%s", name, ext) >= sizeof(file) ||
		    (size_t)snprintf(key, sizeof(key), "%s%s", path, file) > QC_KEY_MAX ||
		    fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) != 0 || !qc_local_image(dfd, file, &st))
			continue;
		err = qc_items_add(&items, key, &st, "", NULL) ? -ENOENT : 0;
	}
	if (err)
		goto out;
	/*
	 * Not under list_lock, which a listing holds across its I/O: a listing
	 * that began before the file came may drop the name again, and the
	 * file's inotify event lists once more.
	 */
	pthread_rwlock_wrlock(&c->lock);
	err = dir_of(c, parent) ? qc_merge_item(c, &items.v[0], NULL) : -ENOENT;
	pthread_rwlock_unlock(&c->lock);
	atomic_store(&c->last_hash, 0);         /* the next listing merges whatever it finds */
out:
	if (dfd >= 0 && dfd != c->root_fd)
		close(dfd);
	qc_items_free(&items);
	return err;
}

int qc_lookup(struct qm_catalog *c, uint64_t parent, const char *name, struct qc_attr *out)
{
	int err = lookup_locked(c, parent, name, out);
	int64_t now = qc_now_ms(), last = atomic_load(&c->miss_at);

	if (err != -ENOENT)
		return err;
	/* autofs mounts on first access; a name not listed yet may have just arrived */
	if (!c->remote && probe_local(c, parent, name) == 0)
		return lookup_locked(c, parent, name, out);
	if (now - last >= QC_MISS_REFRESH_S * 1000 && atomic_compare_exchange_strong(&c->miss_at, &last, now))
		qc_refresh_request(c);
	return -ENOENT;
}

void qc_listing_free(struct qc_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++)
		free(l->names[i]);
	free(l->names);
	free(l->attrs);
	free(l->serials);
	free(l);
}

int qc_list(struct qm_catalog *c, uint64_t nodeid, struct qc_listing **out)
{
	struct qc_listing *l = calloc(1, sizeof(*l));
	struct qc_node *d;
	int err = 0;

	if (!l)
		return -ENOMEM;
	pthread_rwlock_rdlock(&c->lock);
	d = dir_of(c, nodeid);
	if (!d) {
		err = -ESTALE;
		goto out;
	}
	l->self_ino = qc_dir_nodeid(d);
	l->parent_ino = d->parent ? qc_dir_nodeid(d->parent) : FUSE_ROOT_ID;
	l->attrs = calloc(d->nkids ? d->nkids : 1, sizeof(*l->attrs));
	l->serials = calloc(d->nkids ? d->nkids : 1, sizeof(*l->serials));
	l->names = calloc(d->nkids ? d->nkids : 1, sizeof(*l->names));
	if (!l->attrs || !l->names || !l->serials) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < d->nkids; i++) {
		if (!(l->names[i] = strdup(d->kids[i]->name))) {
			err = -ENOMEM;
			break;
		}
		node_attr(c, d->kids[i], &l->attrs[i]);
		l->serials[i] = d->kids[i]->is_dir || d->kids[i]->is_alias ? 0 : d->kids[i]->cur->serial;
		l->count++;
	}
out:
	pthread_rwlock_unlock(&c->lock);
	if (err) {
		qc_listing_free(l);
		return err;
	}
	*out = l;
	return 0;
}
