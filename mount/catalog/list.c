/*
 * list.c - listing the source: qs_source_list() of a remote index or
 * prefix, or a walk of a local directory that watches (inotify) the
 * directories that hold images or lead to some.  A listing is a hashed
 * list of items, so that an unchanged one merges nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_int.h"
#include "mount_int.h"
#include "format/squashfs_fs.h"

int qc_items_add(struct items *it, const char *key, const struct stat *st, const char *etag,
		     const struct qs_list_entry *ent)
{
	bool failed = false;
	struct item *x;

	if (it->n == QC_ENTRIES_MAX) {
		it->too_many = true;
		return 0;
	}
	if (it->n == it->cap) {
		size_t cap = it->cap ? it->cap * 2 : 256;
		void *p = realloc(it->v, cap * sizeof(*it->v));

		if (!p)
			return -ENOMEM;
		it->v = p;
		it->cap = cap;
	}
	x = &it->v[it->n];
	memset(x, 0, sizeof(*x));
	x->key = strdup(key);
	x->etag = qc_etag_dup(etag, &failed);
	x->root_hash = qc_etag_dup(ent ? ent->root_hash : NULL, &failed);
	if (!x->key || failed) {
		free(x->key);
		free(x->etag);
		free(x->root_hash);
		return -ENOMEM;
	}
	if (st) {
		x->size = (uint64_t)st->st_size;
		x->mtime = st->st_mtime;
		x->dev = (uint64_t)st->st_dev;
		x->ino = (uint64_t)st->st_ino;
		x->mode = st->st_mode & 07777;
		x->uid = st->st_uid;
		x->gid = st->st_gid;
	} else {
		x->size = ent->size;
		x->mtime = ent->mtime;
		x->mode = 0444;
	}
	XXH3_64bits_update(it->hash, key, strlen(key) + 1);
	XXH3_64bits_update(it->hash, &x->size, offsetof(struct item, etag) - offsetof(struct item, size));
	XXH3_64bits_update(it->hash, &x->mode, sizeof(x->mode) * 3);
	if (x->etag)
		XXH3_64bits_update(it->hash, x->etag, strlen(x->etag));
	if (x->root_hash)
		XXH3_64bits_update(it->hash, x->root_hash, strlen(x->root_hash) + 1);
	it->n++;
	return 0;
}

/* A symlink named as an image: its target's key, or NULL and why it is not served. */
static int items_add_link(struct items *it, const char *key, const char *target, const char *why)
{
	struct item *x;
	int err = qc_items_add(it, key, NULL, NULL, &(struct qs_list_entry){ 0 });

	if (err || it->too_many)
		return err;
	x = &it->v[it->n - 1];
	x->is_link = true;
	x->why = why;
	if (target && !(x->alias = strdup(target)))
		return -ENOMEM;
	/* a changed target, or a changed reason, is a changed listing */
	XXH3_64bits_update(it->hash, target ? target : why, strlen(target ? target : why) + 1);
	return 0;
}

void qc_items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free(it->v[i].alias);
		free(it->v[i].key);
		free(it->v[i].etag);
		free(it->v[i].root_hash);
	}
	free(it->v);
	if (it->hash)
		XXH3_freeState(it->hash);
}

/* Does the file start with the squashfs magic?  For local names without a known extension. */
static bool has_magic(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	unsigned char m[4];
	struct stat st;
	bool yes;

	if (fd < 0)
		return false;
	yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, m, 4, 0) == 4 &&
	      (m[0] | m[1] << 8 | m[2] << 16 | (uint32_t)m[3] << 24) == SQFS_MAGIC;
	close(fd);
	return yes;
}

/* Is this directory entry an image (a regular file with an extension or the magic)? */
bool qc_local_image(int dfd, const char *name, const struct stat *st)
{
	return S_ISREG(st->st_mode) && !qc_has_control(name) && (qc_has_image_ext(name) || has_magic(dfd, name));
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Watch directory 'dfd': it holds images, or leads to some.  Recorded for stale_watches(). */
static void watch_dir(struct qm_catalog *c, int dfd, int **wds, size_t *n, size_t *cap)
{
	char path[64];
	int wd;

	if (c->inotify_fd < 0)
		return;
	if (*n >= QC_WATCH_MAX) {
		c->watches_full = true;
		return;
	}
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		int *p = realloc(*wds, ncap * sizeof(*p));

		if (!p)
			return;
		*wds = p;
		*cap = ncap;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dfd);
	wd = inotify_add_watch(c->inotify_fd, path, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
			       IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR);
	if (wd >= 0)
		(*wds)[(*n)++] = wd;
}

struct walk {                       /* one local listing */
	struct items *out;
	int *wds;                   /* the directories watched, for stale_watches() */
	size_t nwds, wds_cap;
	unsigned dirs;
};

/*
 * Every image below directory 'dfd' (whose key prefix is 'prefix'),
 * depth-first; at most QC_DIRS_MAX directories.  Only directories that
 * hold images, or lead to some, are watched: a tree of empty directories
 * costs a walk, not the uid's inotify watches.  Returns 1 if it found an
 * image, 0 if not, or -errno.
 */
static int scan_local(struct qm_catalog *c, struct walk *w, int dfd, char *prefix, size_t plen, unsigned depth)
{
	DIR *d;
	struct dirent *de;
	int fd = dup(dfd), err = 0, found = 0;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(d);               /* a dup shares the offset: the last listing left it at the end */
	while (err >= 0 && (de = readdir(d))) {
		struct stat st;
		size_t nlen = strlen(de->d_name);

		err = 0;
		if (!qc_entry_listed(de->d_name) || plen + nlen + 2 > QC_KEY_MAX)
			continue;       /* hidden names (and "." ".."), and names that would forge lines */
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		memcpy(prefix + plen, de->d_name, nlen + 1);
		if (S_ISDIR(st.st_mode) && depth < QC_DEPTH_MAX) {
			int sub;

			if (++w->dirs > QC_DIRS_MAX) {
				c->dirs_full = true;
				continue;
			}
			sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				prefix[plen + nlen] = '/';
				prefix[plen + nlen + 1] = '\0';
				err = scan_local(c, w, sub, prefix, plen + nlen + 1, depth + 1);
				close(sub);
				found |= err > 0;
			}
		} else if (qc_local_image(dfd, de->d_name, &st)) {
			err = qc_items_add(w->out, prefix, &st, "", NULL);
			found = 1;
		} else if (S_ISLNK(st.st_mode) && qc_has_image_ext(de->d_name)) {
			char target[QC_KEY_MAX + 1];
			const char *why;

			/* resolved at every listing: a changed link or target changes the alias */
			err = qc_alias_resolve(c->root_fd, c->root_abs ? c->root_abs : "", prefix, target,
					       sizeof(target), &why);
			err = items_add_link(w->out, prefix, err ? NULL : target, err ? why : NULL);
			found = 1;
		}
		prefix[plen] = '\0';
	}
	closedir(d);
	if (err < 0)
		return err;
	if (found || depth == 0)
		watch_dir(c, dfd, &w->wds, &w->nwds, &w->wds_cap);
	return found;
}

/* Watches the last listing kept and this one did not: the directory lost its images. */
static void stale_watches(struct qm_catalog *c, struct walk *w)
{
	size_t j = 0;

	qsort(w->wds, w->nwds, sizeof(*w->wds), cmp_int);
	for (size_t i = 0; i < c->nwds; i++) {
		while (j < w->nwds && w->wds[j] < c->wds[i])
			j++;
		if (j == w->nwds || w->wds[j] != c->wds[i])
			inotify_rm_watch(c->inotify_fd, c->wds[i]);
	}
	free(c->wds);
	c->wds = w->wds;
	c->nwds = w->nwds;
	c->wds_cap = w->wds_cap;
	w->wds = NULL;
}

/* An index's "NAME -> TARGET" is an alias as a local symlink is; merge.c follows its chain. */
static int list_remote_entry(void *arg, const struct qs_list_entry *ent)
{
	struct items *out = arg;

	if (ent->target)
		return items_add_link(out, ent->key, ent->target, NULL);
	if (!qc_has_image_ext(ent->key))
		return 0;
	return qc_items_add(out, ent->key, NULL, ent->etag, ent);
}

int qc_list_source(struct qm_catalog *c, struct items *out)
{
	char prefix[QC_KEY_MAX + 1] = "";
	struct walk w = { .out = out };
	int err;

	if (c->remote)
		return qs_source_list(c->spec, &c->fs->opt->source, list_remote_entry, out);
	c->watches_full = c->dirs_full = false;
	err = scan_local(c, &w, c->root_fd, prefix, 0, 0);
	if (err >= 0)
		stale_watches(c, &w);
	free(w.wds);
	if (c->dirs_full)
		qm_log(c->fs, "catalog: %s: more than %u directories; the rest are left out", c->fs->name, QC_DIRS_MAX);
	if (c->watches_full)
		qm_log(c->fs, "catalog: %s: more than %u directories hold images; the rest are seen every refresh=, "
		       "not at once", c->fs->name, QC_WATCH_MAX);
	return err < 0 ? err : 0;
}
