/*
 * catalog.c - the model behind `quash mount --catalog SOURCE MOUNTPOINT`:
 * the names the source lists, the images behind them and their versions.
 *
 * A listing (a walk of a local directory, or qs_source_list() of an
 * http(s):// index or an s3:// prefix) gives each image a key; its name is
 * the key less its extension, and '/' in keys makes catalog directories.
 * A local symlink named like an image whose target is one of the
 * catalog's images (resolved by catalog_alias.c at each listing) is an
 * alias: a symlink entry of slot 0 to the target's name.
 * Nothing of an image is read until a request inside its directory pins it
 * (qc_pin): that opens the image, through the catalog's one block cache,
 * and a watcher thread closes it again once nobody has used it for idle=
 * seconds (or when more than open_max are open).  The watcher also lists
 * the source again: on inotify events for a local directory, every
 * refresh= seconds, on `quash catalog refresh`, and (from a lookup) when a
 * name is not found.  A listing that shows an image with another identity
 * (size, mtime, inode, ETag) gives it a new version with a new slot: new
 * lookups see it, while files open on the old version read on from the old
 * image, which closes for good once the last of them is closed.
 *
 * Locks: c->lock (a rwlock) guards the names and directories; each image
 * version has its own mutex for its state and counters, taken after
 * c->lock when both are held, and never held across I/O: an image being
 * opened is marked so, and its other readers wait on its own condition
 * variable, so a slow server costs only that image's readers.  c->slot_lock
 * guards handing slots out and taking them back, never held with I/O
 * either.  Request threads never list: listings are the watcher's, at most
 * once every QC_LIST_MIN_MS whatever asks for them.  The kernel is told of
 * changed names by the watcher, never by a request's thread: invalidating
 * an entry takes the directory's lock, which a lookup in flight holds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <stddef.h>
#include <xxhash.h>

#include "catalog.h"
#include "catalog_model.h"
#include "log.h"
#include "squashfs_fs.h"

#define QC_SHADOWED_SHOWN 8         /* keys without a name the status text names */
#define QC_TICK_MS 1000             /* the watcher's clock: idle checks, refreshes */
#define QC_SETTLE_MS 100            /* inotify events are gathered this long before a listing */
#define QC_NOTIFY_MAX 65536         /* invalidations queued for the watcher; more: a full flush */

/* Extensions that make a file an image; anything else needs the squashfs magic (local only). */
static const char *const image_exts[] = { ".sqfs", ".squashfs", ".img", ".sif" };

struct qc_node {                    /* a name in the catalog: a directory or an image */
	char *name;
	struct qc_node *parent;
	bool is_dir;
	bool is_alias;              /* a symlink entry to an image of the catalog (catalog_alias.c) */
	bool seen;                  /* by the listing being merged */
	uint32_t dir_index;         /* directories and aliases: node id - 1 */
	char *target;               /* aliases: the symlink's text, the target's name relative to it */
	struct qc_node **kids;      /* directories: sorted by name */
	uint32_t nkids, kids_cap;
	struct qc_image *cur;       /* images: the version new lookups get */
	uint32_t versions;          /* images: versions the name has had */
};

struct qc_image {                   /* one version of one image: a slot */
	uint32_t slot;
	uint32_t version;           /* the name's 1st, 2nd, ... version: what `quash catalog ls` shows */
	uint64_t serial;            /* unique over the mount's life: a reused slot's new version differs */
	struct qm_catalog *cat;
	char *key;                  /* as listed: the path below the source */
	char *display;              /* the source and key, no secrets, for messages: made at first open */
	uint64_t size, dev, ino;
	int64_t mtime;
	char *etag;                 /* NULL: none */
	uint32_t mode, uid, gid;    /* a local image file's: its NAME directory's access */

	pthread_mutex_t lock;
	pthread_cond_t opened;      /* an open under way ended */
	struct qm_view view;        /* view.img NULL: closed */
	atomic_bool open;           /* view.img is set: the idle sweep's quick look */
	bool opening;               /* a request is opening it, without the lock */
	unsigned users;             /* requests in flight */
	atomic_int opens;           /* open files and listings (view.opens) */
	_Atomic uint64_t lookups;   /* node ids the kernel holds (view.lookups); never below 0 if all are counted */
	int64_t last_used;
	atomic_bool superseded;     /* a newer version has the name, or the name is gone */
	bool gone;                  /* closed for good: its bytes cannot be found again */
	struct qc_image *lru_prev, *lru_next;   /* on c's list of open images, most recently opened first */
	int error;                  /* of the last failed open */
	char *reason;               /* its message, for `quash catalog ls` */
	int64_t failed_at;
	bool logged;                /* its failure has had its one line */
	uint64_t open_total;        /* times opened */
	_Atomic uint64_t bytes_read, reads;     /* from its source */
};

struct notice {                     /* an entry the kernel must forget */
	fuse_ino_t parent;
	char *name;
};

struct qm_catalog {
	struct qm_fs *fs;
	const char *spec;           /* SOURCE as given */
	bool remote;
	int root_fd;                /* a local catalog's directory */
	char *root_abs;             /* its absolute path: what an absolute alias target must start with */
	char *base;                 /* a remote catalog: what keys are appended to */
	struct qs_cache *cache;     /* the one block cache of every image */
	struct qs_memory_budget remote_memory;  /* the one bound on remote images' chunks in memory */
	unsigned idle, refresh, open_max;

	bool file_modes;            /* allow_other: an image is served to those its file is readable by */
	struct qc_ctl *ctl;         /* the control files' opens and shared status text */

	pthread_rwlock_t lock;
	struct qc_node root;
	struct qc_node **dirs;      /* by index; NULL once removed */
	uint32_t ndirs, dirs_cap;
	size_t nimages;
	_Atomic(struct qc_image *) *slots;  /* QC_SLOTS_MAX + 1, calloc'd: untouched pages cost nothing */
	atomic_uint nslots;         /* slots ever handed out; slot 0 is the catalog itself */
	int64_t changed;            /* when a name last came or went: the directories' mtime */

	pthread_mutex_t slot_lock;  /* handing out and taking back slots */
	struct freed { uint32_t slot; int64_t at; } *freed;     /* a FIFO of slots taken back */
	size_t freed_head, freed_n, freed_cap;
	uint64_t next_serial;
	size_t slots_short;         /* changed images the last listing left at their old version */
	size_t nshadowed;           /* listed keys without a name of their own (under c->lock) */
	char shadowed[QC_SHADOWED_SHOWN][QC_KEY_MAX + 48];
	size_t naliases;            /* alias entries (under c->lock) */
	size_t nunserved;           /* symlinks named as images that are no alias, and why */
	char unserved[QC_SHADOWED_SHOWN][QC_KEY_MAX + 64];
	uint64_t *was_unserved, *now_unserved;  /* each line's hash, the last merge's sorted: logged once */
	size_t nwas_unserved, nnow_unserved, was_cap, now_cap;
	size_t nnewly;              /* lines the last merge had not: the first few kept to be logged */
	char newly[QC_SHADOWED_SHOWN][QC_KEY_MAX + 64];

	pthread_mutex_t open_lock;  /* the list of open images */
	struct qc_image *lru_head, *lru_tail;
	unsigned nopen, nopen_old;
	_Atomic int64_t emfile_logged;

	_Atomic uint64_t bytes_read;    /* from every image's source */
	atomic_uint epoch;          /* bumped by anything the status shows but counters */

	pthread_mutex_t list_lock;  /* one listing at a time */
	int64_t listed_at;
	_Atomic int64_t listed_at_ms;   /* when the last listing ended, for the rate limit */
	_Atomic uint64_t gen_started, gen_done; /* listings begun; listings merged and told to the kernel */
	_Atomic uint64_t gen_wanted;    /* the listing a refresh asked for */
	_Atomic int64_t miss_at;    /* when a lookup's miss last asked for a listing */
	_Atomic uint64_t last_hash; /* of the last listing merged: an equal one changes nothing */
	char list_error[256];       /* under nlock */
	int *wds;                   /* the inotify watches of the last listing, sorted */
	size_t nwds, wds_cap;
	unsigned dirs_walked;
	bool watches_full, dirs_full;

	pthread_mutex_t nlock;      /* the notices, and the last listing's result */
	char result[300];           /* for qc_refresh_state: "done N images" or "failed ERROR" */
	struct notice *notices;
	size_t nnotices, notices_cap;
	bool flush_all;

	int inotify_fd;
	int wake[2];                /* a pipe: refresh now, notices waiting, stop */
	atomic_bool refresh_wanted, stop;
	pthread_t watcher;
	bool watching;
};

static int64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake(struct qm_catalog *c)
{
	char b = 1;

	if (write(c->wake[1], &b, 1) < 0 && errno != EAGAIN)
		qm_log(c->fs, "catalog: wake: %s", strerror(errno));
}

/* ---- names ---------------------------------------------------------------- */

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

static struct qc_node *find_kid(const struct qc_node *dir, const char *name)
{
	bool found;
	int i = kid_index(dir, name, &found);

	return found ? dir->kids[i] : NULL;
}

static fuse_ino_t dir_nodeid(const struct qc_node *dir)
{
	return (fuse_ino_t)dir->dir_index + 1;
}

static void queue_notice(struct qm_catalog *c, const struct qc_node *parent, const char *name)
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
		c->notices[c->nnotices].parent = dir_nodeid(parent);
		c->notices[c->nnotices].name = strdup(name);
		if (c->notices[c->nnotices].name)
			c->nnotices++;
		else
			c->flush_all = true;
	}
	pthread_mutex_unlock(&c->nlock);
}

static struct qc_node *add_kid(struct qm_catalog *c, struct qc_node *dir, const char *name, bool is_dir)
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
	if (is_dir && c->ndirs == c->dirs_cap) {
		uint32_t cap = c->dirs_cap * 2;
		void *p = realloc(c->dirs, cap * sizeof(*c->dirs));

		if (!p)
			return NULL;
		c->dirs = p;
		c->dirs_cap = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	n->parent = dir;
	n->is_dir = is_dir;
	if (is_dir) {
		n->dir_index = c->ndirs;
		c->dirs[c->ndirs++] = n;
	}
	memmove(dir->kids + i + 1, dir->kids + i, (dir->nkids - (uint32_t)i) * sizeof(*dir->kids));
	dir->kids[i] = n;
	dir->nkids++;
	return n;
}

static void free_node(struct qm_catalog *c, struct qc_node *n)
{
	for (uint32_t i = 0; i < n->nkids; i++)
		free_node(c, n->kids[i]);
	if ((n->is_dir || n->is_alias) && n != &c->root)
		c->dirs[n->dir_index] = NULL;
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
static struct qc_node *add_alias(struct qm_catalog *c, struct qc_node *dir, const char *name, const char *target)
{
	char *t = strdup(target);
	struct qc_node *n = t ? add_kid(c, dir, name, true) : NULL;

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
static void remove_kid(struct qm_catalog *c, struct qc_node *n)
{
	struct qc_node *dir = n->parent;
	bool found;
	int i = kid_index(dir, n->name, &found);

	if (found) {
		memmove(dir->kids + i, dir->kids + i + 1, (dir->nkids - (uint32_t)i - 1) * sizeof(*dir->kids));
		dir->nkids--;
	}
	queue_notice(c, dir, n->name);
	free_node(c, n);
}

/* ---- image versions ----------------------------------------------------- */

static void image_free(struct qc_image *im)
{
	if (!im)
		return;
	if (im->view.img)
		qs_image_close(im->view.img);
	pthread_mutex_destroy(&im->lock);
	pthread_cond_destroy(&im->opened);
	free(im->key);
	free(im->reason);
	free(im->display);
	free(im->etag);
	free(im);
}

/* An ETag kept only when there is one: most catalogs (local ones) have none, and strdup("") costs 32 bytes. */
static char *etag_dup(const char *etag, bool *failed)
{
	char *e = etag && *etag ? strdup(etag) : NULL;

	if (etag && *etag && !e)
		*failed = true;
	return e;
}

static bool etag_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/*
 * The name messages give a version: the source (no secrets) and its key.
 * Made when the image is first opened, not for every entry listed: 10,000
 * never-opened entries must stay small.
 */
static const char *display_of(struct qc_image *im)
{
	struct qm_catalog *c = im->cat;
	char *base, *d;
	size_t len;

	if (im->display)
		return im->display;
	base = c->remote ? qs_source_display_name(c->base) : strdup(c->spec);
	if (!base)
		return im->key;
	len = strlen(base) + strlen(im->key) + 2;
	d = malloc(len);
	if (d)
		snprintf(d, len, "%s%s%s", base, base[0] && base[strlen(base) - 1] == '/' ? "" : "/", im->key);
	free(base);
	im->display = d;
	return d ? d : im->key;
}

/* A slot for a new version: one taken back over QC_SLOT_QUARANTINE_S ago, or a new one; 0: none left. */
static uint32_t take_slot(struct qm_catalog *c)
{
	uint32_t slot = 0;

	pthread_mutex_lock(&c->slot_lock);
	if (c->freed_n && now_s() - c->freed[c->freed_head].at >= QC_SLOT_QUARANTINE_S) {
		slot = c->freed[c->freed_head].slot;
		c->freed_head = (c->freed_head + 1) % c->freed_cap;
		c->freed_n--;
	} else if (atomic_load(&c->nslots) <= QC_SLOTS_MAX) {
		slot = atomic_fetch_add(&c->nslots, 1);
	}
	pthread_mutex_unlock(&c->slot_lock);
	return slot;
}

/* NULL with *err: -ENOSPC when every slot holds a version the kernel or a reader still uses. */
static struct qc_image *new_version(struct qm_catalog *c, const char *key, const char *etag, int *err)
{
	struct qc_image *im = calloc(1, sizeof(*im));
	bool failed = false;

	*err = -ENOMEM;
	if (!im)
		return NULL;
	im->key = strdup(key);
	im->etag = etag_dup(etag, &failed);
	if (!im->key || failed || !(im->slot = take_slot(c))) {
		if (im->key && !failed)
			*err = -ENOSPC;
		free(im->key);
		free(im->etag);
		free(im);
		return NULL;
	}
	im->cat = c;
	im->serial = ++c->next_serial;      /* under c->lock, held for writing by every merge */
	pthread_mutex_init(&im->lock, NULL);
	pthread_cond_init(&im->opened, NULL);
	atomic_init(&im->opens, 0);
	atomic_init(&im->lookups, 0);
	im->last_used = now_s();
	atomic_store_explicit(&c->slots[im->slot], im, memory_order_release);
	return im;
}

/*
 * Take a superseded version's slot back once nothing can name it: closed,
 * no request, file or listing on it, and every node id forgotten by the
 * kernel.  The watcher's alone, so no two run at once.
 */
static bool reclaim(struct qm_catalog *c, struct qc_image *im)
{
	bool free_it;

	pthread_mutex_lock(&c->slot_lock);
	pthread_mutex_lock(&im->lock);
	free_it = atomic_load(&im->superseded) && !im->view.img && !im->opening && im->users == 0 &&
		  atomic_load(&im->opens) == 0 && atomic_load(&im->lookups) == 0;
	if (free_it && c->freed_n == c->freed_cap) {
		size_t cap = c->freed_cap ? c->freed_cap * 2 : 256;
		struct freed *p = malloc(cap * sizeof(*p));

		if (p) {
			for (size_t i = 0; i < c->freed_n; i++)
				p[i] = c->freed[(c->freed_head + i) % c->freed_cap];
			free(c->freed);
			c->freed = p;
			c->freed_head = 0;
			c->freed_cap = cap;
		} else {
			free_it = false;        /* kept for the next sweep */
		}
	}
	if (free_it) {
		c->freed[(c->freed_head + c->freed_n) % c->freed_cap] = (struct freed){ im->slot, now_s() };
		c->freed_n++;
		atomic_store_explicit(&c->slots[im->slot], NULL, memory_order_release);
	}
	pthread_mutex_unlock(&im->lock);
	pthread_mutex_unlock(&c->slot_lock);
	if (free_it)
		image_free(im);
	return free_it;
}

struct qc_image *qc_slot(struct qm_catalog *c, uint32_t slot)
{
	if (slot == 0 || slot >= atomic_load(&c->nslots))
		return NULL;
	return atomic_load_explicit(&c->slots[slot], memory_order_acquire);
}

void qc_forget(struct qm_catalog *c, fuse_ino_t nodeid, uint64_t n)
{
	struct qc_image *im = qc_slot(c, qc_slot_of(nodeid));

	/* the last access: once at zero, the watcher may take the slot back */
	if (im)
		atomic_fetch_sub(&im->lookups, n);
}

/* ---- the counting source: what each image read, for the status and tests ---- */

struct counted {
	struct qs_source *base;
	struct qc_image *im;
};

static int counted_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct counted *k = src->priv;

	atomic_fetch_add_explicit(&k->im->bytes_read, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&k->im->reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&k->im->cat->bytes_read, len, memory_order_relaxed);
	return qs_source_pread(k->base, buf, len, off);
}

static int counted_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	return qs_source_prefetch(((struct counted *)src->priv)->base, off, len);
}

static int counted_willneed(struct qs_source *src, uint64_t off, uint64_t len)
{
	return qs_source_willneed(((struct counted *)src->priv)->base, off, len);
}

static int counted_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct qs_source *base = ((struct counted *)src->priv)->base;

	return base->ops->warm ? base->ops->warm(base, off, len) : 0;
}

static void counted_close(struct qs_source *src)
{
	struct counted *k = src->priv;

	qs_source_close(k->base);
	free(k);
}

static const struct qs_source_ops counted_ops = {
	.pread = counted_pread, .close = counted_close,
	.prefetch = counted_prefetch, .willneed = counted_willneed, .warm = counted_warm,
};

static int counted_open(struct qs_source *base, struct qc_image *im, struct qs_source **out)
{
	struct counted *k = calloc(1, sizeof(*k));

	if (!k) {
		qs_source_close(base);
		return -ENOMEM;
	}
	k->base = base;
	k->im = im;
	*out = qs_source_alloc(&counted_ops, base->name, base->identity, base->size, k);
	if (!*out) {
		counted_close(&(struct qs_source){ .priv = k });
		return -ENOMEM;
	}
	(*out)->notice = base->notice;
	return 0;
}

/* ---- opening ------------------------------------------------------------ */

/*
 * A local image: its key walked from the catalog's directory one name at a
 * time with O_NOFOLLOW, and the file found checked against the listing (a
 * replaced file is another version).  Returns a descriptor or -errno.
 */
static int open_local(struct qm_catalog *c, struct qc_image *im)
{
	char key[QC_KEY_MAX + 1], *name, *save = NULL, *next;
	int dfd = c->root_fd, fd = -1;
	struct stat st;

	snprintf(key, sizeof(key), "%s", im->key);
	for (name = strtok_r(key, "/", &save); name; name = next) {
		next = strtok_r(NULL, "/", &save);
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
			    (next ? O_DIRECTORY : 0));
		if (dfd != c->root_fd)
			close(dfd);
		/* gone or made a symlink since it was listed: this version is over */
		if (fd < 0)
			return qs_set_error(errno == ELOOP || errno == ENOENT || errno == ENOTDIR ? -ESTALE : -errno,
					    "%s", strerror(errno));
		dfd = fd;
	}
	if (fd < 0)
		return qs_set_error(-ENOENT, "empty key");
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return qs_set_error(-ESTALE, "no longer a regular file");
	}
	pthread_rwlock_wrlock(&c->lock);
	if ((uint64_t)st.st_dev != im->dev || (uint64_t)st.st_ino != im->ino || (uint64_t)st.st_size != im->size ||
	    st.st_mtime != im->mtime) {
		if (im->open_total || atomic_load(&im->superseded)) {
			pthread_rwlock_unlock(&c->lock);
			close(fd);
			return qs_set_error(-ESTALE, "replaced since it was listed");
		}
		/*
		 * Nobody has read this version yet (the listing caught the
		 * file being written, or just before a rename): it becomes
		 * what is there now, and keeps its node ids.  Under c->lock,
		 * which the merge compares identities under.
		 */
		im->dev = (uint64_t)st.st_dev;
		im->ino = (uint64_t)st.st_ino;
		im->size = (uint64_t)st.st_size;
		im->mtime = st.st_mtime;
	}
	pthread_rwlock_unlock(&c->lock);
	return fd;
}

static int open_source(struct qm_catalog *c, struct qc_image *im, struct qs_source **out)
{
	struct qs_source_options so = c->fs->opt->source;
	char path[64], *spec;

	so.memory_budget = &c->remote_memory;
	/* no IMAGE.profile: a remote one would cost a request at every image's first use */
	so.prefetch_beside = false;
	int fd, err;

	if (!c->remote) {
		fd = open_local(c, im);
		if (fd < 0)
			return fd;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		err = qs_source_open(path, &so, out);
		close(fd);
		return err;
	}
	spec = malloc(strlen(c->base) + strlen(im->key) + 1);
	if (!spec)
		return -ENOMEM;
	strcpy(spec, c->base);
	strcat(spec, im->key);
	err = qs_source_open(spec, &so, out);
	free(spec);
	return err;
}

/* Open the image of a version: its source, the image through the shared cache, its root. */
static int open_image(struct qm_catalog *c, struct qc_image *im)
{
	struct qs_image_options io = { .cache = c->cache };
	struct qs_source *src, *counted;
	const struct qs_info *info;
	struct qs_image *img;
	struct qs_inode root;
	int err;

	err = open_source(c, im, &src);
	if (!err)
		err = counted_open(src, im, &counted);
	if (!err)
		err = qs_image_open(counted, &io, &img);
	if (err)
		return err;
	info = qs_image_info(img);
	/* node ids keep 44 bits for references: an inode table of at most 256 MiB */
	if (info->directory_table_start - info->inode_table_start >= (UINT64_C(1) << (QC_SLOT_SHIFT - 16)) - 1)
		err = qs_set_error(-EFBIG, "inode table of %" PRIu64 " bytes is too large for a catalog "
				   "(mount it on its own)", info->directory_table_start - info->inode_table_start);
	if (!err)
		err = qs_inode_root(img, &root);
	if (!err && root.type != QS_DIR)
		err = qs_set_error(-EIO, "root inode is not a directory");
	if (err) {
		qs_image_close(img);
		return err;
	}
	qm_view_init(&im->view, img, root.ref, c->remote);
	im->view.name = display_of(im);
	im->view.id_base = (fuse_ino_t)im->slot << QC_SLOT_SHIFT;
	im->view.root_nodeid = im->view.id_base | 1;
	im->view.ino_base = (uint64_t)im->slot << 32;
	im->view.opens = &im->opens;
	im->view.lookups = &im->lookups;
	im->view.generation = im->serial;
	im->view.log_name = true;
	if (src->notice)
		qm_info(c->fs, "%s: %s", display_of(im), src->notice);
	return 0;
}

/* ---- the open images: at most open_max, the least recently opened closed first ---- */

static void lru_unlink(struct qm_catalog *c, struct qc_image *im)
{
	if (im->lru_prev)
		im->lru_prev->lru_next = im->lru_next;
	else
		c->lru_head = im->lru_next;
	if (im->lru_next)
		im->lru_next->lru_prev = im->lru_prev;
	else
		c->lru_tail = im->lru_prev;
	im->lru_prev = im->lru_next = NULL;
	c->nopen--;
}

static bool closable(struct qc_image *im)
{
	return im->view.img && !im->opening && im->users == 0 && atomic_load(&im->opens) == 0;
}

/*
 * Close an open image nobody uses (im->lock held): it leaves the list, and
 * its image is returned for the caller to close once every lock is let go.
 */
static struct qs_image *detach_image(struct qm_catalog *c, struct qc_image *im)
{
	struct qs_image *img = im->view.img;

	pthread_mutex_lock(&c->open_lock);
	lru_unlink(c, im);
	pthread_mutex_unlock(&c->open_lock);
	im->view.img = NULL;
	atomic_store(&im->open, false);
	if (atomic_load(&im->superseded))
		im->gone = true;
	atomic_fetch_add(&im->cat->epoch, 1);
	return img;
}

/*
 * Room for one more open image: a place under open_max, if need be by
 * closing the least recently opened image nobody uses.  -EMFILE when every
 * open image has a file, a listing or a request on it.  The walk is at most
 * open_max long and takes no lock but the list's and, by trylock, images'.
 */
static int reserve_open(struct qm_catalog *c)
{
	struct qs_image *victim = NULL;
	int err = 0;

	pthread_mutex_lock(&c->open_lock);
	if (c->nopen >= c->open_max) {
		for (struct qc_image *im = c->lru_tail; im && !victim; im = im->lru_prev) {
			if (pthread_mutex_trylock(&im->lock) != 0)
				continue;
			if (closable(im)) {
				victim = im->view.img;
				lru_unlink(c, im);
				im->view.img = NULL;
				atomic_store(&im->open, false);
				if (atomic_load(&im->superseded))
					im->gone = true;
			}
			pthread_mutex_unlock(&im->lock);
		}
		err = victim ? 0 : -EMFILE;
	}
	if (!err)
		c->nopen++;         /* the caller's place, linked once open */
	pthread_mutex_unlock(&c->open_lock);
	if (victim) {
		atomic_fetch_add(&c->epoch, 1);
		qs_image_close(victim);
	}
	return err;
}

static void unreserve_open(struct qm_catalog *c)
{
	pthread_mutex_lock(&c->open_lock);
	c->nopen--;
	pthread_mutex_unlock(&c->open_lock);
}

/* The image just opened takes the place reserve_open() kept (im->lock held). */
static void link_open(struct qm_catalog *c, struct qc_image *im)
{
	pthread_mutex_lock(&c->open_lock);
	im->lru_prev = NULL;
	im->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = im;
	else
		c->lru_tail = im;
	c->lru_head = im;
	pthread_mutex_unlock(&c->open_lock);
	im->open_total++;
	atomic_store(&im->open, true);
	atomic_fetch_add(&c->epoch, 1);
}

/* Open a version for qc_pin (im->lock held on entry and exit, let go across the I/O). */
static int pin_open(struct qm_catalog *c, struct qc_image *im, int64_t now)
{
	int err;

	if (im->gone)
		return -ESTALE;
	if (im->error && now - im->failed_at < QC_RETRY_S)
		return im->error;       /* failed a moment ago: not tried again before QC_RETRY_S */
	err = reserve_open(c);
	if (err) {
		if (now != c->emfile_logged) {
			c->emfile_logged = now;
			qm_log(c->fs, "catalog: %s: open_max=%u images are open and in use; not opened",
			       display_of(im), c->open_max);
		}
		return err;
	}
	im->opening = true;
	pthread_mutex_unlock(&im->lock);
	err = open_image(c, im);
	pthread_mutex_lock(&im->lock);
	im->opening = false;
	pthread_cond_broadcast(&im->opened);
	if (!err) {
		link_open(c, im);
		return 0;
	}
	unreserve_open(c);
	if (!im->logged || err == -ESTALE)
		qm_log(c->fs, "%s: %s", display_of(im), qs_last_error());
	free(im->reason);
	im->reason = strdup(qs_last_error());
	im->logged = true;
	im->failed_at = now;
	atomic_fetch_add(&c->epoch, 1);
	if (err == -ESTALE) {
		/* the file changed behind the listing: list again, this version is over */
		im->gone = true;
		atomic_store(&c->refresh_wanted, true);
		wake(c);
	} else if (err != -ENOMEM) {
		err = -EIO;
	}
	im->error = err;
	return err;
}

struct qc_image *qc_pin(struct qm_catalog *c, uint32_t slot, int *err)
{
	struct qc_image *im = qc_slot(c, slot);
	int64_t now = now_s();

	if (!im) {
		*err = -ESTALE;
		return NULL;
	}
	pthread_mutex_lock(&im->lock);
	/* another request is opening it: this image's readers wait for it, nobody else does */
	while (im->opening)
		pthread_cond_wait(&im->opened, &im->lock);
	*err = im->view.img ? 0 : pin_open(c, im, now);
	if (*err) {
		pthread_mutex_unlock(&im->lock);
		return NULL;
	}
	im->error = 0;
	im->users++;
	im->last_used = now;
	pthread_mutex_unlock(&im->lock);
	return im;
}

void qc_unpin(struct qc_image *im)
{
	pthread_mutex_lock(&im->lock);
	im->users--;
	im->last_used = now_s();
	pthread_mutex_unlock(&im->lock);
}

struct qm_view *qc_view(struct qc_image *im)
{
	return &im->view;
}

/*
 * Close what nobody uses: superseded versions at once (their name has moved
 * on), the rest after c->idle seconds (open_max is kept by reserve_open),
 * and take back the slots of superseded versions nothing can name any more.
 * Never an image with a request in flight or a file open.
 */
static void sweep_idle(struct qm_catalog *c)
{
	unsigned n = atomic_load(&c->nslots), old = 0;
	int64_t now = now_s();

	for (unsigned s = 1; s < n; s++) {
		struct qc_image *im = atomic_load_explicit(&c->slots[s], memory_order_acquire);
		struct qs_image *img = NULL;

		if (!im)
			continue;
		if (atomic_load(&im->open) && pthread_mutex_trylock(&im->lock) == 0) {
			if (closable(im) && (atomic_load(&im->superseded) || now - im->last_used >= (int64_t)c->idle))
				img = detach_image(c, im);
			pthread_mutex_unlock(&im->lock);
			if (img)
				qs_image_close(img);
		}
		if (atomic_load(&im->superseded) && !atomic_load(&im->open) && reclaim(c, im))
			continue;
		old += atomic_load(&im->superseded) && atomic_load(&im->open);
	}
	pthread_mutex_lock(&c->open_lock);
	c->nopen_old = old;
	pthread_mutex_unlock(&c->open_lock);
}

/* ---- listing the source ------------------------------------------------- */

struct item {                       /* one image as a listing gives it */
	char *key;
	uint64_t size, dev, ino;
	int64_t mtime;
	char *etag;
	uint32_t mode, uid, gid;
	bool is_link;               /* a symlink named as an image: an alias, or why it is none */
	char *alias;                /* its target's key; NULL: not served, for 'why' */
	const char *why;
};

struct items {
	struct item *v;
	size_t n, cap;
	bool too_many;
	XXH3_state_t *hash;         /* of every item, in order: an unchanged listing merges nothing */
};

static int items_add(struct items *it, const char *key, const struct stat *st, const char *etag,
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
	x->etag = etag_dup(etag, &failed);
	if (!x->key || failed) {
		free(x->key);
		free(x->etag);
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
	it->n++;
	return 0;
}

/* A symlink named as an image: its target's key, or NULL and why it is not served. */
static int items_add_link(struct items *it, const char *key, const char *target, const char *why)
{
	struct item *x;
	int err = items_add(it, key, NULL, NULL, &(struct qs_list_entry){ 0 });

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

static void items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free(it->v[i].alias);
		free(it->v[i].key);
		free(it->v[i].etag);
	}
	free(it->v);
	if (it->hash)
		XXH3_freeState(it->hash);
}

bool qc_has_image_ext(const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(image_exts) / sizeof(image_exts[0]); i++) {
		size_t e = strlen(image_exts[i]);

		if (len > e && strcmp(name + len - e, image_exts[i]) == 0)
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
static bool local_image(int dfd, const char *name, const struct stat *st)
{
	return S_ISREG(st->st_mode) && !qc_has_control(name) && (qc_has_image_ext(name) || has_magic(dfd, name));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
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
		} else if (local_image(dfd, de->d_name, &st)) {
			err = items_add(w->out, prefix, &st, "", NULL);
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

static int list_remote_entry(void *arg, const struct qs_list_entry *ent)
{
	struct items *out = arg;

	if (!qc_has_image_ext(ent->key))
		return 0;
	return items_add(out, ent->key, NULL, ent->etag, ent);
}

static int list_source(struct qm_catalog *c, struct items *out)
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

/* ---- merging a listing ---------------------------------------------------- */

/* The name an image's key gives its last component: the extension dropped. */
void qc_strip_ext(char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(image_exts) / sizeof(image_exts[0]); i++) {
		size_t e = strlen(image_exts[i]);

		if (len > e && strcmp(name + len - e, image_exts[i]) == 0) {
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

/* The same key too: a file renamed to another extension keeps its inode, size and time, not its key. */
static bool same_identity(const struct qc_image *im, const struct item *x)
{
	return strcmp(im->key, x->key) == 0 && im->size == x->size && im->mtime == x->mtime && im->dev == x->dev && im->ino == x->ino &&
	       etag_eq(im->etag, x->etag);
}

static void supersede(struct qm_catalog *c, struct qc_image *im)
{
	atomic_store(&im->superseded, true);
	atomic_fetch_add(&c->epoch, 1);
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->key, ((const struct item *)b)->key);
}

/* Is 'key' in the listing (sorted by key)? */
static bool listed(const struct items *all, const char *key)
{
	struct item probe = { .key = (char *)key };
	const struct item *x = all ? bsearch(&probe, all->v, all->n, sizeof(*all->v), cmp_item) : NULL;

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
		n = find_kid(dir, comp);
		if (n && n->is_alias) {
			remove_kid(c, n);       /* a directory wins over an alias too */
			n = NULL;
		} else if (n && !n->is_dir) {
			/* a directory wins over an image of its name, whichever the listing gave first */
			if (listed(all, n->cur->key))
				shadow(c, n->cur->key, "a directory of the same name");
			supersede(c, n->cur);
			c->nimages--;
			remove_kid(c, n);
			n = NULL;
		}
		if (!n) {
			n = add_kid(c, dir, comp, true);
			if (!n) {
				*err = -ENOMEM;
				return NULL;
			}
			queue_notice(c, dir, comp);
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
	queue_notice(c, dir, n->name);
	atomic_fetch_add(&c->epoch, 1);
}

/*
 * One listed image into the tree (c->lock held for writing).  When no slot
 * is free for a changed image, it keeps its old version (counted in
 * c->slots_short) and the rest of the listing still merges.
 */
static int merge_item(struct qm_catalog *c, const struct item *x, const struct items *all)
{
	char key[QC_KEY_MAX + 1], *comp = NULL;
	struct qc_node *dir, *n;
	struct qc_image *im;
	int err;

	if (x->is_link)
		return 0;               /* merge_alias(), once every image has its name */
	snprintf(key, sizeof(key), "%s", x->key);
	dir = key_dir(c, key, &comp, &err, all);
	if (!dir)
		return err;
	qc_strip_ext(comp);
	if (!qc_image_name_ok(comp))
		return 0;
	n = find_kid(dir, comp);
	if (n && n->is_alias) {
		remove_kid(c, n);       /* an image wins over an alias of its name */
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
	im = new_version(c, x->key, x->etag, &err);
	if (!im) {
		if (err != -ENOSPC)
			return err;
		c->slots_short++;
		if (n)
			n->seen = true;
		return 0;
	}
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
		n = add_kid(c, dir, comp, false);
		if (!n) {
			atomic_store(&im->superseded, true);    /* never named: the sweep takes its slot back */
			return -ENOMEM;
		}
		c->nimages++;
	}
	im->version = ++n->versions;
	n->cur = im;
	n->seen = true;
	queue_notice(c, dir, comp);
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
		n = n->is_dir ? find_kid(n, comp) : NULL;
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

	if (!x->alias) {
		unserved(c, x->key, x->why);
		return 0;
	}
	if (!image_node(c, x->alias)) {
		unserved(c, x->key, "its target is no image this catalog serves");
		return 0;
	}
	snprintf(from, sizeof(from), "%s", x->key);
	qc_strip_ext(from);
	snprintf(to, sizeof(to), "%s", x->alias);
	qc_strip_ext(to);
	if (qc_alias_relative(from, to, text, sizeof(text)) != 0) {
		unserved(c, x->key, "its target's name is too long");
		return 0;
	}
	snprintf(key, sizeof(key), "%s", x->key);
	dir = key_dir(c, key, &comp, &err, all);
	if (!dir)
		return err;
	qc_strip_ext(comp);
	if (!qc_image_name_ok(comp))
		return 0;
	n = find_kid(dir, comp);
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
		remove_kid(c, n);
	n = add_alias(c, dir, comp, text);
	if (!n)
		return -ENOMEM;
	n->seen = true;
	queue_notice(c, dir, comp);
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
		remove_kid(c, n);
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
static int merge(struct qm_catalog *c, struct items *items)
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
		err = merge_item(c, &items->v[i], items);
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
static int refresh(struct qm_catalog *c)
{
	struct items items = { .hash = XXH3_createState() };
	uint64_t hash;
	int err;

	if (!items.hash)
		return -ENOMEM;
	XXH3_64bits_reset(items.hash);
	pthread_mutex_lock(&c->list_lock);
	err = list_source(c, &items);
	c->listed_at = now_s();
	atomic_store(&c->listed_at_ms, now_ms());
	if (err) {
		set_list_error(c, err == -ENOMEM ? "out of memory" : c->remote ? qs_last_error() : strerror(-err));
		items_free(&items);
		pthread_mutex_unlock(&c->list_lock);
		return err;
	}
	set_list_error(c, "");
	if (items.too_many)
		qm_log(c->fs, "catalog: more than %u images; the rest are left out", QC_ENTRIES_MAX);
	hash = XXH3_64bits_digest(items.hash);
	if (hash != atomic_load(&c->last_hash) || c->slots_short) {
		qsort(items.v, items.n, sizeof(*items.v), cmp_item);     /* names do not hang on listing order */
		atomic_store(&c->last_hash, hash);      /* before the merge: a probe during it clears it */
		err = merge(c, &items);
		if (err)
			atomic_store(&c->last_hash, 0);
	}
	pthread_mutex_unlock(&c->list_lock);
	items_free(&items);
	/* the listing's copies are gone: give their pages back rather than keep them for the next one */
	malloc_trim(0);
	if (err)
		set_list_error(c, "out of memory");
	return err;
}

/* ---- the watcher ---------------------------------------------------------- */

static void send_notices(struct qm_catalog *c)
{
	struct notice *v;
	size_t n;
	bool all;

	pthread_mutex_lock(&c->nlock);
	v = c->notices;
	n = c->nnotices;
	all = c->flush_all;
	c->notices = NULL;
	c->nnotices = c->notices_cap = 0;
	c->flush_all = false;
	pthread_mutex_unlock(&c->nlock);
	for (size_t i = 0; i < n; i++) {
		/* -ENOENT: the kernel had nothing cached under that name */
		if (c->fs->se && c->fs->ready)
			fuse_lowlevel_notify_inval_entry(c->fs->se, v[i].parent, v[i].name, strlen(v[i].name));
		free(v[i].name);
	}
	free(v);
	if (all && c->fs->se && c->fs->ready) {
		/* too many to name: every catalog directory forgets its entries */
		pthread_rwlock_rdlock(&c->lock);
		for (uint32_t d = 0; d < c->ndirs; d++)
			if (c->dirs[d])
				fuse_lowlevel_notify_inval_inode(c->fs->se, (fuse_ino_t)d + 1, -1, 0);
		pthread_rwlock_unlock(&c->lock);
	}
}

static bool drain(int fd)
{
	char buf[4096];
	bool any = false;

	while (read(fd, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

/*
 * Whether to list now.  Inotify, `quash catalog refresh`, lookups of names
 * not found and the refresh= period all ask; none lists sooner than
 * QC_LIST_MIN_MS after the last listing ended, so a flood of any of them
 * costs one listing a second.  *wait_ms: how long until a pending ask may
 * be served.
 */
static bool list_due(struct qm_catalog *c, bool *pending, int *wait_ms)
{
	int64_t since = now_ms() - atomic_load(&c->listed_at_ms);

	if (!*pending && atomic_exchange(&c->refresh_wanted, false))
		*pending = true;
	if (!*pending && now_s() - c->listed_at >= (int64_t)c->refresh)
		*pending = true;
	if (*pending && since < QC_LIST_MIN_MS) {
		*wait_ms = (int)(QC_LIST_MIN_MS - since);
		return false;
	}
	return *pending;
}

static void *watcher(void *arg)
{
	struct qm_catalog *c = arg;
	int64_t last_tick = now_s();
	bool pending = false;
	int wait_ms = QC_TICK_MS;

	while (!atomic_load(&c->stop)) {
		struct pollfd p[2] = { { c->wake[0], POLLIN, 0 }, { c->inotify_fd, POLLIN, 0 } };

		if (poll(p, c->inotify_fd >= 0 ? 2 : 1, wait_ms) > 0) {
			drain(c->wake[0]);
			if (c->inotify_fd >= 0 && (p[1].revents & POLLIN)) {
				struct timespec settle = { 0, QC_SETTLE_MS * 1000000L };

				nanosleep(&settle, NULL);
				pending |= drain(c->inotify_fd);
			}
		}
		if (atomic_load(&c->stop))
			break;
		wait_ms = QC_TICK_MS;
		if (list_due(c, &pending, &wait_ms)) {
			uint64_t gen = atomic_fetch_add(&c->gen_started, 1) + 1;

			pending = false;
			int err = refresh(c);

			if (err)
				qm_log(c->fs, "catalog: %s: %s; keeping the last listing", c->fs->name, c->list_error);
			send_notices(c);
			pthread_mutex_lock(&c->nlock);
			if (err)
				snprintf(c->result, sizeof(c->result), "failed %s\n", c->list_error);
			else
				snprintf(c->result, sizeof(c->result), "done %zu images\n", c->nimages);
			pthread_mutex_unlock(&c->nlock);
			atomic_store(&c->gen_done, gen);
		} else {
			send_notices(c);
		}
		if (now_s() != last_tick) {
			last_tick = now_s();
			sweep_idle(c);
		}
	}
	return NULL;
}

uint64_t qc_refresh_request(struct qm_catalog *c)
{
	/* a listing under way may have read the directory before the change: the next one */
	uint64_t want = atomic_load(&c->gen_started) + 1;

	atomic_store(&c->refresh_wanted, true);
	wake(c);
	return want;
}

int qc_refresh_state(struct qm_catalog *c, uint64_t gen, char *buf, size_t size)
{
	if (!c->watching)
		return snprintf(buf, size, "failed the catalog's watcher is not running\n");
	if (atomic_load(&c->gen_done) < gen)
		return snprintf(buf, size, "pending\n");
	pthread_mutex_lock(&c->nlock);
	snprintf(buf, size, "%s", c->result);
	pthread_mutex_unlock(&c->nlock);
	return (int)strlen(buf);
}

/* ---- the catalog's own directories ------------------------------------- */

/*
 * An image's NAME directory.  With file_modes (allow_other), it is the
 * image file's owner's and group's, and each of the file's read bits gives
 * r-x: the kernel (default_permissions) then lets in exactly those who
 * could read the file, groups and all, cached dentries or not.
 */
static void image_attr(const struct qm_catalog *c, const struct qc_image *im, struct qc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->nodeid = (fuse_ino_t)im->slot << QC_SLOT_SHIFT | 1;
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
		a->nodeid = dir_nodeid(n);
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
	a->nodeid = dir_nodeid(n);
	a->ino = a->nodeid;
	a->mtime = c->changed;
	a->nlink = 2;
	a->mode = 0555;
	for (uint32_t i = 0; i < n->nkids; i++)
		a->nlink += n->kids[i]->is_dir;
}

/* The directory or alias a node id of slot 0 names. */
static struct qc_node *node_of(struct qm_catalog *c, fuse_ino_t nodeid)
{
	if (nodeid == 0 || nodeid > c->ndirs)
		return NULL;
	return c->dirs[nodeid - 1];
}

static struct qc_node *dir_of(struct qm_catalog *c, fuse_ino_t nodeid)
{
	struct qc_node *n = node_of(c, nodeid);

	return n && n->is_dir ? n : NULL;
}

int qc_alias_text(struct qm_catalog *c, fuse_ino_t nodeid, char *buf, size_t size)
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

int qc_dir_attr(struct qm_catalog *c, fuse_ino_t nodeid, struct qc_attr *out)
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
static int lookup_locked(struct qm_catalog *c, fuse_ino_t parent, const char *name, struct qc_attr *out)
{
	struct qc_node *d, *n;
	int err = -ENOENT;

	pthread_rwlock_rdlock(&c->lock);
	d = dir_of(c, parent);
	if (!d) {
		err = -ESTALE;
	} else if ((n = find_kid(d, name))) {
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
	/* the slot lock keeps reclaim() from taking the slot between the look and the count */
	pthread_mutex_lock(&c->slot_lock);
	im = qc_slot(c, qc_slot_of(a->nodeid));
	ok = im && im->serial == serial;
	if (ok)
		atomic_fetch_add(&im->lookups, 1);
	pthread_mutex_unlock(&c->slot_lock);
	return ok;
}

/* The key prefix of catalog directory 'parent' ("" for the root, else ending in '/'); false: gone or too long. */
static bool dir_key(struct qm_catalog *c, fuse_ino_t parent, char *path, size_t size)
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
static int probe_local(struct qm_catalog *c, fuse_ino_t parent, const char *name)
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
	for (size_t i = 0; err && i <= sizeof(image_exts) / sizeof(image_exts[0]); i++) {
		const char *ext = i < sizeof(image_exts) / sizeof(image_exts[0]) ? image_exts[i] : "";

		/* no extension: an image by its magic, whose name has no extension that would rename it */
		if ((!*ext && qc_has_image_ext(name)) ||
		    (size_t)snprintf(file, sizeof(file), "%s%s", name, ext) >= sizeof(file) ||
		    (size_t)snprintf(key, sizeof(key), "%s%s", path, file) > QC_KEY_MAX ||
		    fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) != 0 || !local_image(dfd, file, &st))
			continue;
		err = items_add(&items, key, &st, "", NULL) ? -ENOENT : 0;
	}
	if (err)
		goto out;
	/*
	 * Not under list_lock, which a listing holds across its I/O: a listing
	 * that began before the file came may drop the name again, and the
	 * file's inotify event lists once more.
	 */
	pthread_rwlock_wrlock(&c->lock);
	err = dir_of(c, parent) ? merge_item(c, &items.v[0], NULL) : -ENOENT;
	pthread_rwlock_unlock(&c->lock);
	atomic_store(&c->last_hash, 0);         /* the next listing merges whatever it finds */
out:
	if (dfd >= 0 && dfd != c->root_fd)
		close(dfd);
	items_free(&items);
	return err;
}

int qc_lookup(struct qm_catalog *c, fuse_ino_t parent, const char *name, struct qc_attr *out)
{
	int err = lookup_locked(c, parent, name, out);
	int64_t now = now_ms(), last = atomic_load(&c->miss_at);

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

int qc_list(struct qm_catalog *c, fuse_ino_t nodeid, struct qc_listing **out)
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
	l->self_ino = dir_nodeid(d);
	l->parent_ino = d->parent ? dir_nodeid(d->parent) : FUSE_ROOT_ID;
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

/* ---- control: `quash catalog ls` and `quash catalog refresh` ------------- */

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void tprintf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if (t->buf && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap * 2 : 4096;

		while (cap < t->len + (size_t)n + 1)
			cap *= 2;
		char *p = realloc(t->buf, cap);

		if (!p) {
			t->failed = true;
			return;
		}
		t->buf = p;
		t->cap = cap;
	}
}

/* 's' with bytes below 0x20, 0x7f and '\\' as \xHH: no name or ETag can forge a line or reach a terminal raw. */
static void tescape(struct text *t, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= 0x20 && ch != 0x7f && ch != '\\')
			continue;
		tprintf(t, "%.*s\\x%02x", (int)(s - run), run, ch);
		run = s + 1;
	}
	tprintf(t, "%s", run);
}

static void status_node(struct text *t, const struct qc_node *n, char *path, size_t plen, int64_t now)
{
	for (uint32_t i = 0; i < n->nkids; i++) {
		const struct qc_node *k = n->kids[i];
		size_t len = strlen(k->name);

		if (plen + len + 2 > QC_KEY_MAX)
			continue;
		memcpy(path + plen, k->name, len + 1);
		if (k->is_dir) {
			path[plen + len] = '/';
			path[plen + len + 1] = '\0';
			status_node(t, k, path, plen + len + 1, now);
		} else if (k->is_alias) {
			/* shown before the column names, by status_aliases() */
		} else {
			struct qc_image *im = k->cur;
			const char *state;

			pthread_mutex_lock(&im->lock);
			state = im->view.img ? "open" : im->error ? "failed" : "closed";
			tescape(t, path);
			tprintf(t, "\t%s\t%u\t%" PRIu64 "\t%d\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t", state,
				im->version, im->size, atomic_load(&im->opens), atomic_load(&im->reads),
				atomic_load(&im->bytes_read), im->open_total ? now - im->last_used : -1);
			tescape(t, im->etag ? im->etag : "-");
			tprintf(t, "\t");
			tescape(t, im->error && im->reason ? im->reason : "-");
			tprintf(t, "\n");
			pthread_mutex_unlock(&im->lock);
		}
		path[plen] = '\0';
	}
}

/* "# alias NAME -> TARGET" for each alias, as readlink gives TARGET. */
static void status_aliases(struct text *t, const struct qc_node *n, char *path, size_t plen)
{
	for (uint32_t i = 0; i < n->nkids; i++) {
		const struct qc_node *k = n->kids[i];
		size_t len = strlen(k->name);

		if (plen + len + 2 > QC_KEY_MAX || (!k->is_dir && !k->is_alias))
			continue;
		memcpy(path + plen, k->name, len + 1);
		if (k->is_dir) {
			path[plen + len] = '/';
			path[plen + len + 1] = '\0';
			status_aliases(t, k, path, plen + len + 1);
		} else {
			tprintf(t, "# alias ");
			tescape(t, path);
			tprintf(t, " -> ");
			tescape(t, k->target);
			tprintf(t, "\n");
		}
		path[plen] = '\0';
	}
}

uint64_t qc_status_epoch(struct qm_catalog *c)
{
	struct qs_cache_stats cs;

	qs_cache_stats(c->cache, &cs);
	return XXH3_64bits_withSeed(&cs, sizeof(cs), atomic_load(&c->epoch) ^
				    atomic_load(&c->bytes_read) << 20 ^
				    __atomic_load_n(&c->remote_memory.used, __ATOMIC_RELAXED) << 40);
}

char *qc_status(struct qm_catalog *c, size_t *len)
{
	struct text t = { 0 };
	struct qs_cache_stats cs;
	char path[QC_KEY_MAX + 1] = "", err[sizeof(c->list_error)];
	unsigned open, old;
	int64_t now = now_s();

	pthread_mutex_lock(&c->open_lock);
	open = c->nopen;
	old = c->nopen_old;
	pthread_mutex_unlock(&c->open_lock);
	qs_cache_stats(c->cache, &cs);
	pthread_mutex_lock(&c->nlock);
	snprintf(err, sizeof(err), "%s", c->list_error);
	pthread_mutex_unlock(&c->nlock);
	pthread_rwlock_rdlock(&c->lock);
	tprintf(&t, "# catalog %s: %zu images, %u open (%u old versions), listed %" PRId64 " s ago%s",
		c->fs->name, c->nimages, open, old, now - c->listed_at, err[0] ? "; last listing failed: " : "");
	tescape(&t, err);
	tprintf(&t, "\n");
	tprintf(&t, "# block cache %" PRIu64 " of %" PRIu64 " bytes, %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
		" let go once in the page cache; remote chunks %" PRIu64 " of %" PRIu64 " bytes; %" PRIu64
		" bytes read from sources\n", cs.bytes, cs.limit, cs.hits, cs.misses, cs.drops,
		__atomic_load_n(&c->remote_memory.used, __ATOMIC_RELAXED),
		c->remote_memory.limit, atomic_load(&c->bytes_read));
	for (size_t i = 0; i < c->nshadowed && i < QC_SHADOWED_SHOWN; i++) {
		tprintf(&t, "# no name of its own: ");
		tescape(&t, c->shadowed[i]);
		tprintf(&t, "\n");
	}
	if (c->nshadowed > QC_SHADOWED_SHOWN)
		tprintf(&t, "# no name of their own: %zu more\n", c->nshadowed - QC_SHADOWED_SHOWN);
	for (size_t i = 0; i < c->nunserved && i < QC_SHADOWED_SHOWN; i++) {
		tprintf(&t, "# not served: ");
		tescape(&t, c->unserved[i]);
		tprintf(&t, "\n");
	}
	if (c->nunserved > QC_SHADOWED_SHOWN)
		tprintf(&t, "# not served: %zu more\n", c->nunserved - QC_SHADOWED_SHOWN);
	if (c->naliases)
		status_aliases(&t, &c->root, path, 0);
	tprintf(&t, "# name\tstate\tversion\tsize\topen_files\treads\tbytes_read\tidle_s\tetag\terror\n");
	status_node(&t, &c->root, path, 0, now);
	pthread_rwlock_unlock(&c->lock);
	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf ? t.buf : strdup("");
}

/* ---- life ----------------------------------------------------------------- */

static int open_root(struct qm_catalog *c)
{
	struct stat st;

	c->root_fd = open(c->spec, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->root_fd < 0 || fstat(c->root_fd, &st) != 0) {
		int err = errno;

		fprintf(stderr, "%s: catalog %s: %s\n", c->fs->opt->msgname, c->spec,
			err == ENOTDIR ? "not a directory (a catalog is a directory of images, "
			"an http(s):// index or an s3:// prefix)" : strerror(err));
		return -err;
	}
	return 0;
}

/*
 * Each open image holds a descriptor: raise the soft limit to the hard one
 * (1,024 by default, often 524,288 hard) and keep open_max below it.
 */
static void fit_descriptors(struct qm_catalog *c)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)c->open_max + QC_FD_RESERVE) {
		unsigned fit = rl.rlim_cur > 2 * QC_FD_RESERVE ? (unsigned)(rl.rlim_cur - QC_FD_RESERVE) : QC_FD_RESERVE;

		if (c->fs->opt->catalog_open_max)
			fprintf(stderr, "%s: -o open_max=%u: only %llu descriptors; keeping %u images open at most\n",
				c->fs->opt->msgname, c->open_max, (unsigned long long)rl.rlim_cur, fit);
		c->open_max = fit;
	}
}

/*
 * What a remote catalog's keys are appended to: "s3://BUCKET/PREFIX/", or
 * the http(s) URL's scheme and authority and the directory of its path
 * ("/" when it has none), its query and fragment dropped.  The authority
 * is found before any key is seen, so no key can choose the host.
 */
static char *remote_base(const char *spec)
{
	size_t len = strlen(spec), path, end, dir;
	const char *sep = strstr(spec, "://");
	char *base;

	if (strncmp(spec, "s3://", 5) == 0) {
		base = malloc(len + 2);
		if (base)
			snprintf(base, len + 2, "%s%s", spec, spec[len - 1] == '/' ? "" : "/");
		return base;
	}
	path = sep ? (size_t)(sep - spec) + 3 : 0;
	path += strcspn(spec + path, "/?#");
	end = path + strcspn(spec + path, "?#");
	dir = end;
	while (dir > path && spec[dir - 1] != '/')
		dir--;
	if (dir == path) {          /* no path: the server's root */
		base = malloc(path + 2);
		if (base)
			snprintf(base, path + 2, "%.*s/", (int)path, spec);
		return base;
	}
	return strndup(spec, dir);
}

/*
 * A catalog with no listing yet, its settings from 'opt': the state the
 * daemon's qc_create() and the unit tests' qc_model_new() share.  NULL when
 * out of memory.
 */
static struct qm_catalog *catalog_new(struct qm_fs *fs, const struct qm_options *opt)
{
	struct qm_catalog *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fs = fs;
	c->spec = opt->image;
	c->remote = qs_source_spec_is_remote(opt->image);
	c->root_fd = c->inotify_fd = c->wake[0] = c->wake[1] = -1;
	c->idle = opt->catalog_idle ? opt->catalog_idle : QC_DEFAULT_IDLE;
	c->refresh = opt->catalog_refresh ? opt->catalog_refresh : QC_DEFAULT_REFRESH;
	c->open_max = opt->catalog_open_max ? opt->catalog_open_max : QC_DEFAULT_OPEN_MAX;
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->list_lock, NULL);
	pthread_mutex_init(&c->nlock, NULL);
	pthread_mutex_init(&c->slot_lock, NULL);
	pthread_mutex_init(&c->open_lock, NULL);
	qs_memory_budget_init(&c->remote_memory,
			      opt->source.memory_cache ? opt->source.memory_cache : QC_DEFAULT_REMOTE_MEMORY);
	c->root.is_dir = true;
	c->dirs_cap = 64;
	c->dirs = calloc(c->dirs_cap, sizeof(*c->dirs));
	c->slots = calloc((size_t)QC_SLOTS_MAX + 1, sizeof(*c->slots));
	atomic_init(&c->nslots, 1);
	c->changed = time(NULL);
	if (!c->dirs || !c->slots) {
		qc_destroy(c);
		return NULL;
	}
	c->dirs[c->ndirs++] = &c->root;
	return c;
}

int qc_create(struct qm_fs *fs, struct qm_catalog **out)
{
	const struct qm_options *opt = fs->opt;
	struct qm_catalog *c = catalog_new(fs, opt);
	int err;

	if (!c) {
		fprintf(stderr, "%s: out of memory\n", opt->msgname);
		return -ENOMEM;
	}
	fit_descriptors(c);
	c->file_modes = qm_has_kernel_opt(opt, "allow_other") && !opt->catalog_any_reader;
	c->cache = qs_cache_create(opt->cache_bytes ? opt->cache_bytes : QS_DEFAULT_CACHE_BYTES);
	c->ctl = qc_ctl_create();
	if (!c->cache || !c->ctl || pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		qc_destroy(c);
		fprintf(stderr, "%s: out of memory\n", opt->msgname);
		return -ENOMEM;
	}
	if (c->remote) {
		c->base = remote_base(c->spec);
		if (!c->base) {
			qc_destroy(c);
			return -ENOMEM;
		}
	} else {
		err = open_root(c);
		if (err) {
			qc_destroy(c);
			return err;
		}
		c->root_abs = realpath(c->spec, NULL);  /* NULL: absolute alias targets are refused */
		c->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	}
	err = refresh(c);
	if (err) {
		fprintf(stderr, "%s: catalog %s: %s\n", opt->msgname, fs->name, c->list_error);
		qc_destroy(c);
		return err;
	}
	*out = c;
	return 0;
}

struct qc_ctl *qc_ctl_of(struct qm_catalog *c)
{
	return c->ctl;
}

int qc_start(struct qm_catalog *c)
{
	int err = -pthread_create(&c->watcher, NULL, watcher, c);

	c->watching = err == 0;
	return err;
}

void qc_stop(struct qm_catalog *c)
{
	if (!c || !c->watching)
		return;
	atomic_store(&c->stop, true);
	wake(c);
	pthread_join(c->watcher, NULL);
	c->watching = false;
}

void qc_destroy(struct qm_catalog *c)
{
	unsigned n;

	if (!c)
		return;
	qc_stop(c);
	n = c->slots ? atomic_load(&c->nslots) : 0;
	for (unsigned s = 1; s < n; s++)
		image_free(c->slots[s]);
	free(c->slots);
	if (c->dirs && c->ndirs)
		free_node(c, &c->root);
	free(c->dirs);
	for (size_t i = 0; i < c->nnotices; i++)
		free(c->notices[i].name);
	free(c->notices);
	if (c->cache)
		qs_cache_destroy(c->cache);
	if (c->root_fd >= 0)
		close(c->root_fd);
	if (c->inotify_fd >= 0)
		close(c->inotify_fd);
	if (c->wake[0] >= 0) {
		close(c->wake[0]);
		close(c->wake[1]);
	}
	free(c->base);
	free(c->root_abs);
	free(c->was_unserved);
	free(c->now_unserved);
	qc_ctl_destroy(c->ctl);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->list_lock);
	pthread_mutex_destroy(&c->nlock);
	pthread_mutex_destroy(&c->slot_lock);
	pthread_mutex_destroy(&c->open_lock);
	free(c->freed);
	free(c->wds);
	qs_memory_budget_destroy(&c->remote_memory);
	free(c);
}


/* ---- the model without a session: for tests/unit/test_catalog.c (catalog_model.h) ---- */

static const struct qm_options model_opt = { .msgname = "quash mount", .image = "model" };
static struct qm_fs model_fs = { .opt = &model_opt, .name = (char *)"model", .log_fd = -1 };

struct qm_catalog *qc_model_new(void)
{
	return catalog_new(&model_fs, &model_opt);
}

void qc_model_free(struct qm_catalog *c)
{
	qc_destroy(c);
}

int qc_model_merge(struct qm_catalog *c, const struct qc_listed *v, size_t n)
{
	struct items items = { .v = calloc(n ? n : 1, sizeof(struct item)), .n = n };
	int err;

	if (!items.v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		items.v[i].key = (char *)v[i].key;
		items.v[i].size = v[i].size;
		items.v[i].mtime = v[i].mtime;
		items.v[i].etag = v[i].etag && *v[i].etag ? (char *)v[i].etag : NULL;
		items.v[i].mode = 0444;
	}
	qsort(items.v, items.n, sizeof(*items.v), cmp_item);
	err = merge(c, &items);
	free(items.v);
	return err;
}

int qc_model_find(struct qm_catalog *c, const char *path, const char **key, uint32_t *version, uint32_t *slot)
{
	char buf[QC_KEY_MAX + 1], *comp, *save = NULL;
	struct qc_node *n = &c->root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (comp = strtok_r(buf, "/", &save); comp && n; comp = strtok_r(NULL, "/", &save))
		n = n->is_dir ? find_kid(n, comp) : NULL;
	if (!n)
		return 0;
	if (n->is_dir)
		return 1;
	if (n->is_alias)
		return 0;
	*key = n->cur->key;
	*version = n->cur->version;
	*slot = n->cur->slot;
	return 2;
}

size_t qc_model_shadowed(struct qm_catalog *c)
{
	return c->nshadowed;
}

void qc_model_lookups(struct qm_catalog *c, uint32_t slot, int64_t n)
{
	struct qc_image *im = qc_slot(c, slot);

	if (im)
		atomic_fetch_add(&im->lookups, (uint64_t)n);
}

size_t qc_model_sweep(struct qm_catalog *c, int64_t age_s)
{
	unsigned n = atomic_load(&c->nslots);
	size_t taken = 0;

	for (unsigned s = 1; s < n; s++) {
		struct qc_image *im = atomic_load(&c->slots[s]);

		if (im && atomic_load(&im->superseded) && !atomic_load(&im->open) && reclaim(c, im))
			taken++;
	}
	for (size_t i = 0; i < c->freed_n; i++)
		c->freed[(c->freed_head + i) % c->freed_cap].at -= age_s;
	return taken;
}
