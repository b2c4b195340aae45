/*
 * catalog.c - the model behind `quash mount --catalog SOURCE MOUNTPOINT`:
 * the names the source lists, the images behind them and their versions.
 *
 * A listing (a walk of a local directory, or qs_source_list() of an
 * http(s):// index or an s3:// prefix) gives each image a key; its name is
 * the key less its extension, and '/' in keys makes catalog directories.
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
 * version has its own mutex for opening, closing and its counters, taken
 * after c->lock when both are held.  The slot table is written once per
 * slot and read without a lock.  The kernel is told of changed names by
 * the watcher, never by a request's thread: invalidating an entry takes the
 * directory's lock, which a lookup in flight holds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include "catalog.h"
#include "squashfs_fs.h"

#define QC_KEY_MAX 1024             /* bytes of a key (a path below the catalog) */
#define QC_TICK_MS 1000             /* the watcher's clock: idle checks, refreshes */
#define QC_SETTLE_MS 100            /* inotify events are gathered this long before a listing */
#define QC_NOTIFY_MAX 65536         /* invalidations queued for the watcher; more: a full flush */
#define QC_NOTICE_WAIT_MS 1000      /* a refresh waits this long for the kernel to be told */
#define QC_CTL_REFRESH_MS 1000      /* `quash catalog refresh` lists at most this often */
#define QC_LIST_WAIT_S 30           /* `quash catalog refresh` waits this long for a listing under way */

/* Extensions that make a file an image; anything else needs the squashfs magic (local only). */
static const char *const image_exts[] = { ".sqfs", ".squashfs", ".img", ".sif" };

struct qc_node {                    /* a name in the catalog: a directory or an image */
	char *name;
	struct qc_node *parent;
	bool is_dir;
	bool seen;                  /* by the listing being merged */
	uint32_t dir_index;         /* directories: node id - 1 */
	struct qc_node **kids;      /* directories: sorted by name */
	uint32_t nkids, kids_cap;
	struct qc_image *cur;       /* images: the version new lookups get */
};

struct qc_image {                   /* one version of one image: a slot */
	uint32_t slot;
	struct qm_catalog *cat;
	char *key;                  /* as listed: the path below the source */
	char *display;              /* the source and key, no secrets, for messages: made at first open */
	uint64_t size, dev, ino;
	int64_t mtime;
	char *etag;                 /* NULL: none */

	pthread_mutex_t lock;
	struct qm_view view;        /* view.img NULL: closed */
	atomic_bool open;           /* view.img is set: the idle sweep's quick look */
	unsigned users;             /* requests in flight */
	atomic_int opens;           /* open files and listings (view.opens) */
	int64_t last_used;
	bool superseded;            /* a newer version has the name, or the name is gone */
	bool gone;                  /* closed for good: its bytes cannot be found again */
	int error;                  /* of the last failed open */
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
	char *base;                 /* a remote catalog: what keys are appended to */
	struct qs_cache *cache;     /* the one block cache of every image */
	struct qs_memory_budget remote_memory;  /* the one bound on remote images' chunks in memory */
	unsigned idle, refresh, open_max;

	pthread_rwlock_t lock;
	struct qc_node root;
	struct qc_node **dirs;      /* by index; NULL once removed */
	uint32_t ndirs, dirs_cap;
	size_t nimages;
	_Atomic(struct qc_image *) *slots;  /* QC_SLOTS_MAX + 1, calloc'd: untouched pages cost nothing */
	atomic_uint nslots;         /* slots handed out; slot 0 is the catalog itself */
	int64_t changed;            /* when a name last came or went: the directories' mtime */

	pthread_mutex_t list_lock;  /* one listing at a time */
	int64_t listed_at;
	_Atomic int64_t listed_at_ms;   /* the same, to the millisecond, for the refresh rate */
	char list_error[256];

	pthread_mutex_t nlock;      /* the notices */
	pthread_cond_t nsent;
	struct notice *notices;
	size_t nnotices, notices_cap;
	bool flush_all;
	uint64_t notice_batches_taken, notice_batches_sent;

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
	if (n->is_dir && n != &c->root)
		c->dirs[n->dir_index] = NULL;
	free(n->kids);
	if (n != &c->root) {
		free(n->name);
		free(n);
	}
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
	free(im->key);
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

static struct qc_image *new_version(struct qm_catalog *c, const char *key, const char *etag)
{
	unsigned slot = atomic_load(&c->nslots);
	struct qc_image *im;
	bool failed = false;

	if (slot > QC_SLOTS_MAX) {
		qm_log(c->fs, "catalog: %s: no version slots left (%u over this mount's life); remount",
		       key, QC_SLOTS_MAX);
		return NULL;
	}
	im = calloc(1, sizeof(*im));
	if (!im)
		return NULL;
	im->slot = slot;
	im->cat = c;
	im->key = strdup(key);
	im->etag = etag_dup(etag, &failed);
	if (!im->key || failed) {
		free(im->key);
		free(im->etag);
		free(im);
		return NULL;
	}
	pthread_mutex_init(&im->lock, NULL);
	atomic_init(&im->opens, 0);
	im->last_used = now_s();
	atomic_store_explicit(&c->slots[slot], im, memory_order_release);
	atomic_store(&c->nslots, slot + 1);
	return im;
}

struct qc_image *qc_slot(struct qm_catalog *c, uint32_t slot)
{
	if (slot == 0 || slot >= atomic_load(&c->nslots))
		return NULL;
	return atomic_load_explicit(&c->slots[slot], memory_order_acquire);
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
	if ((uint64_t)st.st_dev != im->dev || (uint64_t)st.st_ino != im->ino || (uint64_t)st.st_size != im->size ||
	    st.st_mtime != im->mtime) {
		if (im->open_total || im->superseded) {
			close(fd);
			return qs_set_error(-ESTALE, "replaced since it was listed");
		}
		/*
		 * Nobody has read this version yet (the listing caught the
		 * file being written, or just before a rename): it becomes
		 * what is there now, and keeps its node ids.
		 */
		im->dev = (uint64_t)st.st_dev;
		im->ino = (uint64_t)st.st_ino;
		im->size = (uint64_t)st.st_size;
		im->mtime = st.st_mtime;
	}
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
	im->open_total++;
	atomic_store(&im->open, true);
	if (src->notice)
		qm_info(c->fs, "%s: %s", display_of(im), src->notice);
	return 0;
}

static void close_image(struct qc_image *im)
{
	qs_image_close(im->view.img);
	im->view.img = NULL;
	atomic_store(&im->open, false);
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
	*err = 0;
	if (!im->view.img) {
		bool tried = false;

		if (im->gone) {
			*err = -ESTALE;
		} else if (im->error && now - im->failed_at < QC_RETRY_S) {
			*err = im->error;       /* failed a moment ago: not tried again before QC_RETRY_S */
		} else {
			*err = open_image(c, im);
			tried = true;
		}
		if (*err && tried) {
			bool stale = *err == -ESTALE;

			if (!im->logged || stale)
				qm_log(c->fs, "%s: %s", display_of(im), qs_last_error());
			im->logged = true;
			im->failed_at = now;
			if (stale) {
				/* the file changed behind the listing: list again, this version is over */
				im->gone = true;
				atomic_store(&c->refresh_wanted, true);
				wake(c);
			} else if (*err != -ENOMEM) {
				*err = -EIO;
			}
			im->error = *err;
		}
	}
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
 * on), the rest after c->idle seconds, and the least recently used beyond
 * c->open_max.  Never an image with a request in flight or a file open.
 */
static void sweep_idle(struct qm_catalog *c)
{
	unsigned n = atomic_load(&c->nslots), open = 0;
	int64_t now = now_s();

	for (unsigned s = 1; s < n; s++) {
		struct qc_image *im = c->slots[s];

		if (!im || !atomic_load(&im->open) || pthread_mutex_trylock(&im->lock) != 0)
			continue;
		if (im->view.img && im->users == 0 && atomic_load(&im->opens) == 0 &&
		    (im->superseded || now - im->last_used >= (int64_t)c->idle)) {
			close_image(im);
			if (im->superseded)
				im->gone = true;
		}
		open += im->view.img != NULL;
		pthread_mutex_unlock(&im->lock);
	}
	while (open > c->open_max) {
		struct qc_image *oldest = NULL;

		for (unsigned s = 1; s < n; s++) {
			struct qc_image *im = c->slots[s];

			if (im && atomic_load(&im->open) && im->users == 0 && atomic_load(&im->opens) == 0 &&
			    (!oldest || im->last_used < oldest->last_used))
				oldest = im;
		}
		if (!oldest)
			break;
		pthread_mutex_lock(&oldest->lock);
		if (oldest->view.img && oldest->users == 0 && atomic_load(&oldest->opens) == 0) {
			close_image(oldest);
			open--;
		}
		pthread_mutex_unlock(&oldest->lock);
		if (oldest->view.img)
			break;
	}
}

/* ---- listing the source ------------------------------------------------- */

struct item {                       /* one image as a listing gives it */
	char *key;
	uint64_t size, dev, ino;
	int64_t mtime;
	char *etag;
};

struct items {
	struct item *v;
	size_t n, cap;
	bool too_many;
};

static int items_add(struct items *it, const char *key, uint64_t size, int64_t mtime, const char *etag,
		     uint64_t dev, uint64_t ino)
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
	x->key = strdup(key);
	x->etag = etag_dup(etag, &failed);
	if (!x->key || failed) {
		free(x->key);
		free(x->etag);
		return -ENOMEM;
	}
	x->size = size;
	x->mtime = mtime;
	x->dev = dev;
	x->ino = ino;
	it->n++;
	return 0;
}

static void items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free(it->v[i].key);
		free(it->v[i].etag);
	}
	free(it->v);
}

static bool has_image_ext(const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(image_exts) / sizeof(image_exts[0]); i++) {
		size_t e = strlen(image_exts[i]);

		if (len > e && strcmp(name + len - e, image_exts[i]) == 0)
			return true;
	}
	return false;
}

/* Does the file start with the squashfs magic?  For local names without a known extension. */
static bool has_magic(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	unsigned char m[4];
	bool yes;

	if (fd < 0)
		return false;
	yes = pread(fd, m, 4, 0) == 4 && (m[0] | m[1] << 8 | m[2] << 16 | (uint32_t)m[3] << 24) == SQFS_MAGIC;
	close(fd);
	return yes;
}

static void watch_dir(struct qm_catalog *c, int dfd)
{
	char path[64];

	if (c->inotify_fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dfd);
	inotify_add_watch(c->inotify_fd, path, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
			  IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR);
}

/* Every image below directory 'dfd' (whose key prefix is 'prefix'), depth-first. */
static int scan_local(struct qm_catalog *c, int dfd, char *prefix, size_t plen, unsigned depth,
		      struct items *out)
{
	DIR *d;
	struct dirent *de;
	int fd = dup(dfd), err = 0;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(d);               /* a dup shares the offset: the last listing left it at the end */
	watch_dir(c, dfd);
	while (!err && (de = readdir(d))) {
		struct stat st;
		size_t nlen = strlen(de->d_name);

		if (de->d_name[0] == '.' || plen + nlen + 2 > QC_KEY_MAX)
			continue;       /* hidden names (and "." "..") are not images */
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		memcpy(prefix + plen, de->d_name, nlen + 1);
		if (S_ISDIR(st.st_mode) && depth < QC_DEPTH_MAX) {
			int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				prefix[plen + nlen] = '/';
				prefix[plen + nlen + 1] = '\0';
				err = scan_local(c, sub, prefix, plen + nlen + 1, depth + 1, out);
				close(sub);
			}
		} else if (S_ISREG(st.st_mode) && (has_image_ext(de->d_name) || has_magic(dfd, de->d_name))) {
			err = items_add(out, prefix, (uint64_t)st.st_size, st.st_mtime, "", (uint64_t)st.st_dev,
					(uint64_t)st.st_ino);
		}
		prefix[plen] = '\0';
	}
	closedir(d);
	return err;
}

static int list_remote_entry(void *arg, const struct qs_list_entry *ent)
{
	struct items *out = arg;

	if (!has_image_ext(ent->key))
		return 0;
	return items_add(out, ent->key, ent->size, ent->mtime, ent->etag, 0, 0);
}

static int list_source(struct qm_catalog *c, struct items *out)
{
	char prefix[QC_KEY_MAX + 1] = "";

	if (c->remote)
		return qs_source_list(c->spec, &c->fs->opt->source, list_remote_entry, out);
	return scan_local(c, c->root_fd, prefix, 0, 0, out);
}

/* ---- merging a listing ---------------------------------------------------- */

/* The name an image's key gives its last component: the extension dropped. */
static void strip_ext(char *name)
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

static bool same_identity(const struct qc_image *im, const struct item *x)
{
	return im->size == x->size && im->mtime == x->mtime && im->dev == x->dev && im->ino == x->ino &&
	       etag_eq(im->etag, x->etag);
}

static void supersede(struct qc_image *im)
{
	pthread_mutex_lock(&im->lock);
	im->superseded = true;
	pthread_mutex_unlock(&im->lock);
}

/* One listed image into the tree (c->lock held for writing). */
static int merge_item(struct qm_catalog *c, const struct item *x)
{
	char key[QC_KEY_MAX + 1], *comp, *next, *save = NULL;
	struct qc_node *dir = &c->root, *n;
	unsigned depth = 0;
	struct qc_image *im;

	snprintf(key, sizeof(key), "%s", x->key);
	for (comp = strtok_r(key, "/", &save); comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!next)
			break;
		if (++depth > QC_DEPTH_MAX)
			return 0;
		n = find_kid(dir, comp);
		if (n && !n->is_dir)
			return 0;       /* an image has this name already; the key is shadowed */
		if (!n) {
			n = add_kid(c, dir, comp, true);
			if (!n)
				return -ENOMEM;
			queue_notice(c, dir, comp);
			c->changed = time(NULL);
		}
		n->seen = true;
		dir = n;
	}
	if (!comp)
		return 0;
	strip_ext(comp);
	if (!*comp || strcmp(comp, QC_CTL_STATUS_NAME) == 0 || strcmp(comp, QC_CTL_REFRESH_NAME) == 0)
		return 0;
	n = find_kid(dir, comp);
	if (n && (n->is_dir || n->seen))
		return 0;               /* a directory, or another key of the same name listed first */
	if (n && same_identity(n->cur, x)) {
		n->seen = true;
		return 0;
	}
	im = new_version(c, x->key, x->etag);
	if (!im)
		return -ENOMEM;
	im->size = x->size;
	im->mtime = x->mtime;
	im->dev = x->dev;
	im->ino = x->ino;
	if (n) {
		supersede(n->cur);
	} else {
		n = add_kid(c, dir, comp, false);
		if (!n)
			return -ENOMEM;
		c->nimages++;
	}
	n->cur = im;
	n->seen = true;
	queue_notice(c, dir, comp);
	c->changed = time(NULL);
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
		if (!n->is_dir) {
			supersede(n->cur);
			c->nimages--;
		}
		remove_kid(c, n);
		c->changed = time(NULL);
	}
}

/*
 * List the source and merge: 0, or -errno with c->list_error set (the tree
 * is kept as it was).  'wait' says how a listing already under way is met:
 * QC_LIST_WAIT waits for it, QC_LIST_BOUNDED for QC_LIST_WAIT_S at most,
 * QC_LIST_SKIP not at all (-EBUSY) — a lookup must not hang behind a slow
 * server's pages.
 */
enum { QC_LIST_WAIT, QC_LIST_BOUNDED, QC_LIST_SKIP };

static int refresh(struct qm_catalog *c, int wait)
{
	struct items items = { 0 };
	struct timespec until;
	int err;

	if (wait == QC_LIST_SKIP) {
		if (pthread_mutex_trylock(&c->list_lock) != 0)
			return -EBUSY;
	} else if (wait == QC_LIST_BOUNDED) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += QC_LIST_WAIT_S;
		if (pthread_mutex_timedlock(&c->list_lock, &until) != 0) {
			snprintf(c->list_error, sizeof(c->list_error), "a listing already under way takes over %d s",
				 QC_LIST_WAIT_S);
			return -EBUSY;
		}
	} else {
		pthread_mutex_lock(&c->list_lock);
	}
	err = list_source(c, &items);
	c->listed_at = now_s();
	atomic_store(&c->listed_at_ms, now_ms());
	if (err) {
		snprintf(c->list_error, sizeof(c->list_error), "%s", err == -ENOMEM ? "out of memory" :
			 c->remote ? qs_last_error() : strerror(-err));
		items_free(&items);
		pthread_mutex_unlock(&c->list_lock);
		return err;
	}
	c->list_error[0] = '\0';
	if (items.too_many)
		qm_log(c->fs, "catalog: more than %u images; the rest are left out", QC_ENTRIES_MAX);
	pthread_rwlock_wrlock(&c->lock);
	clear_seen(&c->root);
	for (size_t i = 0; !err && i < items.n; i++)
		err = merge_item(c, &items.v[i]);
	if (!err)
		drop_unseen(c, &c->root);
	pthread_rwlock_unlock(&c->lock);
	pthread_mutex_unlock(&c->list_lock);
	items_free(&items);
	/* the listing's copies are gone: give their pages back rather than keep them for the next one */
	malloc_trim(0);
	if (err)
		snprintf(c->list_error, sizeof(c->list_error), "out of memory");
	wake(c);                    /* the notices */
	return err;
}

/* ---- the watcher ---------------------------------------------------------- */

static void send_notices(struct qm_catalog *c)
{
	struct notice *v;
	size_t n;
	bool all;

	uint64_t batch;

	pthread_mutex_lock(&c->nlock);
	v = c->notices;
	n = c->nnotices;
	all = c->flush_all;
	c->notices = NULL;
	c->nnotices = c->notices_cap = 0;
	c->flush_all = false;
	batch = ++c->notice_batches_taken;
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
	pthread_mutex_lock(&c->nlock);
	c->notice_batches_sent = batch;
	pthread_cond_broadcast(&c->nsent);
	pthread_mutex_unlock(&c->nlock);
}

/*
 * Wait (QC_NOTICE_WAIT_MS at most) until the watcher has told the kernel
 * of what is queued now, so that `quash catalog refresh` returns with the
 * new names visible.  Bounded, since the watcher may itself wait on a
 * directory lock that the caller's own request holds.
 */
static void wait_notices(struct qm_catalog *c)
{
	struct timespec until;
	uint64_t want;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += QC_NOTICE_WAIT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&c->nlock);
	want = c->notice_batches_taken + 1;
	wake(c);
	while (c->watching && c->notice_batches_sent < want &&
	       pthread_cond_timedwait(&c->nsent, &c->nlock, &until) == 0)
		;
	pthread_mutex_unlock(&c->nlock);
}

static bool drain(int fd)
{
	char buf[4096];
	bool any = false;

	while (read(fd, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

static void *watcher(void *arg)
{
	struct qm_catalog *c = arg;
	int64_t last_tick = now_s();

	while (!atomic_load(&c->stop)) {
		struct pollfd p[2] = { { c->wake[0], POLLIN, 0 }, { c->inotify_fd, POLLIN, 0 } };
		bool changed = false;

		if (poll(p, c->inotify_fd >= 0 ? 2 : 1, QC_TICK_MS) > 0) {
			drain(c->wake[0]);
			if (c->inotify_fd >= 0 && (p[1].revents & POLLIN)) {
				struct timespec settle = { 0, QC_SETTLE_MS * 1000000L };

				nanosleep(&settle, NULL);
				changed = drain(c->inotify_fd);
			}
		}
		if (atomic_load(&c->stop))
			break;
		if (changed || atomic_exchange(&c->refresh_wanted, false) ||
		    now_s() - c->listed_at >= (int64_t)c->refresh) {
			if (refresh(c, QC_LIST_WAIT) != 0)
				qm_log(c->fs, "catalog: %s: %s; keeping the last listing", c->fs->name, c->list_error);
		}
		send_notices(c);
		if (now_s() != last_tick) {
			last_tick = now_s();
			sweep_idle(c);
		}
	}
	return NULL;
}

/* ---- the catalog's own directories ------------------------------------- */

static void node_attr(const struct qc_node *n, struct qc_attr *a, int64_t changed)
{
	memset(a, 0, sizeof(*a));
	a->is_dir = n->is_dir;
	if (n->is_dir) {
		a->nodeid = dir_nodeid(n);
		a->ino = a->nodeid;
		a->mtime = changed;
		a->nlink = 2;
		for (uint32_t i = 0; i < n->nkids; i++)
			a->nlink += n->kids[i]->is_dir;
	} else {
		a->nodeid = (fuse_ino_t)n->cur->slot << QC_SLOT_SHIFT | 1;
		a->ino = (uint64_t)n->cur->slot << 32;
		a->mtime = n->cur->mtime;
		a->nlink = 2;
	}
}

static struct qc_node *dir_of(struct qm_catalog *c, fuse_ino_t nodeid)
{
	if (nodeid == 0 || nodeid > c->ndirs)
		return NULL;
	return c->dirs[nodeid - 1];
}

int qc_dir_attr(struct qm_catalog *c, fuse_ino_t nodeid, struct qc_attr *out)
{
	struct qc_node *d;

	pthread_rwlock_rdlock(&c->lock);
	d = dir_of(c, nodeid);
	if (d)
		node_attr(d, out, c->changed);
	pthread_rwlock_unlock(&c->lock);
	return d ? 0 : -ENOENT;
}

int qc_image_attr(struct qm_catalog *c, uint32_t slot, struct qc_attr *out)
{
	struct qc_image *im = qc_slot(c, slot);

	if (!im)
		return -ESTALE;
	memset(out, 0, sizeof(*out));
	out->nodeid = (fuse_ino_t)slot << QC_SLOT_SHIFT | 1;
	out->ino = (uint64_t)slot << 32;
	out->mtime = im->mtime;
	out->nlink = 2;
	return 0;
}

static int lookup_locked(struct qm_catalog *c, fuse_ino_t parent, const char *name, struct qc_attr *out)
{
	struct qc_node *d, *n;
	int err = -ENOENT;

	pthread_rwlock_rdlock(&c->lock);
	d = dir_of(c, parent);
	if (!d) {
		err = -ESTALE;
	} else if ((n = find_kid(d, name))) {
		node_attr(n, out, c->changed);
		err = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return err;
}

/*
 * Is there a file in a local catalog that would list as 'name' in catalog
 * directory 'parent'?  One fstatat() per extension: a name created a moment
 * ago is found before inotify's listing, without listing on every miss.
 */
static bool local_candidate(struct qm_catalog *c, fuse_ino_t parent, const char *name)
{
	char path[QC_KEY_MAX + 1], tmp[2 * QC_KEY_MAX + 2];
	struct qc_node *d;
	struct stat st;
	bool yes = false;

	if (c->remote || name[0] == '.')
		return false;
	path[0] = '\0';
	pthread_rwlock_rdlock(&c->lock);
	for (d = dir_of(c, parent); d && d->parent; d = d->parent) {
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", d->name, path) >= sizeof(path))
			break;
		memcpy(path, tmp, sizeof(path));
	}
	pthread_rwlock_unlock(&c->lock);
	for (size_t i = 0; !yes && i <= sizeof(image_exts) / sizeof(image_exts[0]); i++) {
		const char *ext = i < sizeof(image_exts) / sizeof(image_exts[0]) ? image_exts[i] : "";

		if ((size_t)snprintf(tmp, sizeof(tmp), "%s%s%s", path, name, ext) < sizeof(tmp))
			yes = fstatat(c->root_fd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	}
	return yes;
}

int qc_lookup(struct qm_catalog *c, fuse_ino_t parent, const char *name, struct qc_attr *out)
{
	int err = lookup_locked(c, parent, name, out);

	/* autofs mounts on first access; a name not listed yet may have just arrived */
	if (err == -ENOENT && (now_s() - c->listed_at >= QC_MISS_REFRESH_S || local_candidate(c, parent, name)) &&
	    refresh(c, QC_LIST_SKIP) == 0)
		err = lookup_locked(c, parent, name, out);
	return err;
}

void qc_listing_free(struct qc_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++)
		free(l->names[i]);
	free(l->names);
	free(l->attrs);
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
	l->names = calloc(d->nkids ? d->nkids : 1, sizeof(*l->names));
	if (!l->attrs || !l->names) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < d->nkids; i++) {
		if (!(l->names[i] = strdup(d->kids[i]->name))) {
			err = -ENOMEM;
			break;
		}
		node_attr(d->kids[i], &l->attrs[i], c->changed);
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
		} else {
			struct qc_image *im = k->cur;
			const char *state;

			pthread_mutex_lock(&im->lock);
			state = im->view.img ? "open" : im->error ? "failed" : "closed";
			tprintf(t, "%s\t%s\t%u\t%" PRIu64 "\t%d\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t%s\n", path,
				state, im->slot, im->size, atomic_load(&im->opens), atomic_load(&im->reads),
				atomic_load(&im->bytes_read), im->open_total ? now - im->last_used : -1,
				im->etag ? im->etag : "-");
			pthread_mutex_unlock(&im->lock);
		}
		path[plen] = '\0';
	}
}

char *qc_status(struct qm_catalog *c, size_t *len)
{
	struct text t = { 0 };
	struct qs_cache_stats cs;
	char path[QC_KEY_MAX + 1] = "";
	unsigned n = atomic_load(&c->nslots), open = 0, old = 0;
	uint64_t bytes_read = 0;
	int64_t now = now_s();

	for (unsigned s = 1; s < n; s++) {
		struct qc_image *im = c->slots[s];

		if (!im)
			continue;
		open += atomic_load(&im->open);
		old += atomic_load(&im->open) && im->superseded;
		bytes_read += atomic_load(&im->bytes_read);
	}
	qs_cache_stats(c->cache, &cs);
	pthread_rwlock_rdlock(&c->lock);
	tprintf(&t, "# catalog %s: %zu images, %u open (%u old versions), listed %" PRId64 " s ago%s%s\n",
		c->fs->name, c->nimages, open, old, now - c->listed_at, c->list_error[0] ? "; last listing failed: " : "",
		c->list_error);
	tprintf(&t, "# block cache %" PRIu64 " of %" PRIu64 " bytes, %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
		" let go once in the page cache; remote chunks %" PRIu64 " of %" PRIu64 " bytes; %" PRIu64
		" bytes read from sources\n", cs.bytes, cs.limit, cs.hits, cs.misses, cs.drops,
		__atomic_load_n(&c->remote_memory.used, __ATOMIC_RELAXED),
		c->remote_memory.limit, bytes_read);
	tprintf(&t, "# name\tstate\tversion\tsize\topen_files\treads\tbytes_read\tidle_s\tetag\n");
	status_node(&t, &c->root, path, 0, now);
	pthread_rwlock_unlock(&c->lock);
	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf ? t.buf : strdup("");
}

char *qc_refresh_now(struct qm_catalog *c, size_t *len)
{
	struct text t = { 0 };
	int64_t wait_ms = atomic_load(&c->listed_at_ms) + QC_CTL_REFRESH_MS - now_ms();
	int err;

	/* anyone who can reach the mount may ask: it always lists, but a second after the last listing at most */
	if (wait_ms > 0) {
		struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	err = refresh(c, QC_LIST_BOUNDED);
	wait_notices(c);
	if (err)
		tprintf(&t, "quash: catalog refresh: %s: %s\n", c->fs->name, c->list_error);
	else
		tprintf(&t, "%zu images\n", c->nimages);
	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf;
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

int qc_create(struct qm_fs *fs, struct qm_catalog **out)
{
	struct qm_catalog *c = calloc(1, sizeof(*c));
	const struct qm_options *opt = fs->opt;
	int err;

	if (!c)
		return -ENOMEM;
	c->fs = fs;
	c->spec = opt->image;
	c->remote = qs_source_spec_is_remote(opt->image);
	c->root_fd = c->inotify_fd = c->wake[0] = c->wake[1] = -1;
	c->idle = opt->catalog_idle ? opt->catalog_idle : QC_DEFAULT_IDLE;
	c->refresh = opt->catalog_refresh ? opt->catalog_refresh : QC_DEFAULT_REFRESH;
	c->open_max = opt->catalog_open_max ? opt->catalog_open_max : QC_DEFAULT_OPEN_MAX;
	fit_descriptors(c);
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->list_lock, NULL);
	pthread_mutex_init(&c->nlock, NULL);
	pthread_cond_init(&c->nsent, NULL);
	c->root.is_dir = true;
	c->dirs_cap = 64;
	c->dirs = calloc(c->dirs_cap, sizeof(*c->dirs));
	c->slots = calloc((size_t)QC_SLOTS_MAX + 1, sizeof(*c->slots));
	c->cache = qs_cache_create(opt->cache_bytes ? opt->cache_bytes : QS_DEFAULT_CACHE_BYTES);
	qs_memory_budget_init(&c->remote_memory,
			      opt->source.memory_cache ? opt->source.memory_cache : QC_DEFAULT_REMOTE_MEMORY);
	atomic_init(&c->nslots, 1);
	c->changed = time(NULL);
	if (!c->dirs || !c->slots || !c->cache || pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		qc_destroy(c);
		fprintf(stderr, "%s: out of memory\n", opt->msgname);
		return -ENOMEM;
	}
	c->dirs[c->ndirs++] = &c->root;
	if (c->remote) {
		/* keys are relative to the prefix, or to the index file's directory */
		const char *slash = strrchr(c->spec, '/');
		size_t len = strlen(c->spec);
		bool s3 = strncmp(c->spec, "s3://", 5) == 0;

		if (s3 && c->spec[len - 1] != '/') {
			c->base = malloc(len + 2);
			if (c->base)
				snprintf(c->base, len + 2, "%s/", c->spec);
		} else {
			c->base = strndup(c->spec, (size_t)(slash - c->spec) + 1);
		}
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
		c->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	}
	err = refresh(c, QC_LIST_WAIT);
	if (err) {
		fprintf(stderr, "%s: catalog %s: %s\n", opt->msgname, fs->name, c->list_error);
		qc_destroy(c);
		return err;
	}
	*out = c;
	return 0;
}

int qc_start(struct qm_catalog *c)
{
	int err = -pthread_create(&c->watcher, NULL, watcher, c);

	c->watching = err == 0;
	return err;
}

void qc_destroy(struct qm_catalog *c)
{
	unsigned n;

	if (!c)
		return;
	if (c->watching) {
		atomic_store(&c->stop, true);
		wake(c);
		pthread_join(c->watcher, NULL);
	}
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
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->list_lock);
	pthread_mutex_destroy(&c->nlock);
	pthread_cond_destroy(&c->nsent);
	qs_memory_budget_destroy(&c->remote_memory);
	free(c);
}

