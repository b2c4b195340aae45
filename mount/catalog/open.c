/*
 * open.c - a version's image opened on first use (qc_pin) through a
 * counting source and the catalog's one block cache, and the open images:
 * at most open_max, the least recently opened closed first, the idle ones
 * closed by the watcher's sweep.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_int.h"
#include "mount_int.h"
#include "verity/verity.h"

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

/* Longest NAME.roothash file read: a hex digest of sha512 and a line end, with room to spare. */
#define QC_ROOTHASH_MAX 256

/*
 * NAME.roothash beside image file NAME.EXT in directory dfd: its one word,
 * the root hash the image is verified against (lib/verity/), into root, or
 * "" when there is no such file.  0, or -EINVAL with a message when there
 * is one that is not a regular file or holds no word: an image meant to be
 * verified is never opened without it.
 */
static int read_roothash(int dfd, const char *file, char root[QC_ROOTHASH_MAX + 1])
{
	char name[QC_KEY_MAX + sizeof(".roothash")], buf[QC_ROOTHASH_MAX + 1], *w;
	struct stat st;
	ssize_t n = -1;
	int fd;

	root[0] = '\0';
	snprintf(name, sizeof(name), "%s", file);
	qc_strip_ext(name);
	strcat(name, ".roothash");
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		n = read(fd, buf, QC_ROOTHASH_MAX);
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return qs_set_error(-EINVAL, "%s: not a regular file", name);
	buf[n] = '\0';
	w = buf + strspn(buf, " \t\r\n");
	w[strcspn(w, " \t\r\n")] = '\0';
	if (!*w)
		return qs_set_error(-EINVAL, "%s: no root hash in it", name);
	snprintf(root, QC_ROOTHASH_MAX + 1, "%s", w);
	return 0;
}

/*
 * With -o verity_cert=, the root hash of image file NAME.EXT (in dfd) must
 * be there and be signed: NAME.roothash.p7s beside it, read as
 * NAME.roothash is, a PKCS#7 signature of it by one of the catalog's
 * certificates.  Otherwise an image is served unverified, or verified
 * against a hash whoever may write the directory chose.  0, or -EINVAL
 * with one line naming the file and the problem.
 */
static int check_signed_root(struct qm_catalog *c, int dfd, const char *file, const char *root)
{
	char name[QC_KEY_MAX + sizeof(".roothash.p7s")];
	uint8_t digest[QS_VERITY_MAX_DIGEST], *sig = NULL;
	size_t sig_len = 0;
	int len, ret;

	snprintf(name, sizeof(name), "%s", file);
	qc_strip_ext(name);
	if (!root[0])
		return qs_set_error(-EINVAL, "no %s.roothash: with -o verity_cert= every image needs a signed "
				    "root hash", name);
	len = qs_verity_parse_hex(root, digest, sizeof(digest));
	if (len <= 0)
		return qs_set_error(-EINVAL, "%s.roothash: '%.140s' is not a root hash in hex", name, root);
	strcat(name, ".roothash.p7s");
	ret = qs_verity_read_signature(dfd, name, true, &sig, &sig_len);
	if (ret == -ENOENT)
		return qs_set_error(-EINVAL, "no %s: with -o verity_cert= every image's root hash must be signed",
				    name);
	if (ret == 0)
		ret = qs_verity_check_signature(c->certs, digest, (size_t)len, sig, sig_len, name);
	free(sig);
	return ret < 0 ? -EINVAL : 0;
}

/*
 * A local image: its key walked from the catalog's directory one name at a
 * time with O_NOFOLLOW, and the file found checked against the listing (a
 * replaced file is another version); NAME.roothash beside it read into
 * root, and its signature checked when the catalog has certificates.
 * Returns a descriptor or -errno.
 */
static int open_local(struct qm_catalog *c, struct qc_image *im, char root[QC_ROOTHASH_MAX + 1])
{
	char key[QC_KEY_MAX + 1], *name, *save = NULL, *next;
	int dfd = c->root_fd, fd = -1;
	struct stat st;

	snprintf(key, sizeof(key), "%s", im->key);
	for (name = strtok_r(key, "/", &save); name; name = next) {
		next = strtok_r(NULL, "/", &save);
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
			    (next ? O_DIRECTORY : 0));
		if (!next && fd >= 0 && (read_roothash(dfd, name, root) < 0 ||
					 (c->certs && check_signed_root(c, dfd, name, root) < 0))) {
			close(fd);
			fd = -EINVAL;
		}
		if (dfd != c->root_fd)
			close(dfd);
		if (fd == -EINVAL)
			return -EINVAL;         /* said */
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
	char path[64], root[QC_ROOTHASH_MAX + 1], *spec;

	so.memory_budget = &c->remote_memory;
	/* the catalog checks each image's signature itself (check_signed_root), before opening it */
	so.verity_cert = NULL;
	/* no IMAGE.profile: a remote one would cost a request at every image's first use */
	so.prefetch_beside = false;
	int fd, err;

	if (!c->remote) {
		fd = open_local(c, im, root);
		if (fd < 0)
			return fd;
		/* NAME.roothash beside the image: it is verified against that root (docs/SECURITY.md). */
		if (root[0])
			so.verity_root = root;
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
	/* a root hash from the index: the image is verified against it (docs/SECURITY.md) */
	if (im->root_hash)
		so.verity_root = im->root_hash;
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
	im->view.name = qc_display_of(im);
	im->view.id_base = (uint64_t)im->slot << QC_SLOT_SHIFT;
	im->view.root_nodeid = im->view.id_base | 1;
	im->view.ino_base = (uint64_t)im->slot << 32;
	im->view.opens = &im->opens;
	im->view.lookups = &im->lookups;
	im->view.generation = im->serial;
	im->view.log_name = true;
	/* a held server's file handles name no memory: reads find their files by node id */
	if (c->fs->fh_tag && !(im->view.nodes = qm_nodes_create())) {
		qs_image_close(img);
		im->view.img = NULL;
		return qs_set_error(-ENOMEM, "out of memory");
	}
	if (src->notice)
		qm_info(c->fs, "%s: %s", qc_display_of(im), src->notice);
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

/* What closing a view leaves for close_detached(), once every lock is let go. */
struct detached {
	struct qs_image *img;
	struct qm_nodes *nodes;
};

static void forget_ahead(void *file, void *arg)
{
	qm_ahead_forget(arg, file);
}

/* The blocks loaded ahead for files of the node table end before their files and image close. */
static void close_detached(struct qm_catalog *c, struct detached d)
{
	if (d.nodes) {
		qm_nodes_each_file(d.nodes, forget_ahead, c->fs->ahead);
		qm_nodes_destroy(d.nodes);
	}
	if (d.img)
		qs_image_close(d.img);
}

/* Take an open image's view apart (im->lock held): its image and node table, for close_detached(). */
static struct detached take_view(struct qc_image *im)
{
	struct detached d = { im->view.img, im->view.nodes };

	im->view.img = NULL;
	im->view.nodes = NULL;
	return d;
}

/*
 * Close an open image nobody uses (im->lock held): it leaves the list, and
 * its image is returned for the caller to close once every lock is let go.
 */
static struct detached detach_image(struct qm_catalog *c, struct qc_image *im)
{
	struct detached d;

	pthread_mutex_lock(&c->open_lock);
	lru_unlink(c, im);
	pthread_mutex_unlock(&c->open_lock);
	d = take_view(im);
	atomic_store(&im->open, false);
	if (atomic_load(&im->superseded))
		im->gone = true;
	atomic_fetch_add(&im->cat->epoch, 1);
	return d;
}

/*
 * Room for one more open image: a place under open_max, if need be by
 * closing the least recently opened image nobody uses.  -EMFILE when every
 * open image has a file, a listing or a request on it.  The walk is at most
 * open_max long and takes no lock but the list's and, by trylock, images'.
 */
static int reserve_open(struct qm_catalog *c)
{
	struct detached victim = { 0 };
	int err = 0;

	pthread_mutex_lock(&c->open_lock);
	if (c->nopen >= c->open_max) {
		for (struct qc_image *im = c->lru_tail; im && !victim.img; im = im->lru_prev) {
			if (pthread_mutex_trylock(&im->lock) != 0)
				continue;
			if (closable(im)) {
				lru_unlink(c, im);
				victim = take_view(im);
				atomic_store(&im->open, false);
				if (atomic_load(&im->superseded))
					im->gone = true;
			}
			pthread_mutex_unlock(&im->lock);
		}
		err = victim.img ? 0 : -EMFILE;
	}
	if (!err)
		c->nopen++;         /* the caller's place, linked once open */
	pthread_mutex_unlock(&c->open_lock);
	if (victim.img) {
		atomic_fetch_add(&c->epoch, 1);
		close_detached(c, victim);
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
			       qc_display_of(im), c->open_max);
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
		qm_log(c->fs, "%s: %s", qc_display_of(im), qs_last_error());
	free(im->reason);
	im->reason = strdup(qs_last_error());
	im->logged = true;
	im->failed_at = now;
	atomic_fetch_add(&c->epoch, 1);
	if (err == -ESTALE) {
		/* the file changed behind the listing: list again, this version is over */
		im->gone = true;
		atomic_store(&c->refresh_wanted, true);
		qc_wake(c);
	} else if (err != -ENOMEM) {
		err = -EIO;
	}
	im->error = err;
	return err;
}

struct qc_image *qc_pin(struct qm_catalog *c, uint32_t slot, int *err)
{
	struct qc_image *im = qc_slot(c, slot);
	int64_t now = qc_now_s();

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
	im->last_used = qc_now_s();
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
void qc_sweep_idle(struct qm_catalog *c)
{
	unsigned n = atomic_load(&c->nslots), old = 0;
	int64_t now = qc_now_s();

	for (unsigned s = 1; s < n; s++) {
		struct qc_image *im = atomic_load_explicit(&c->slots[s], memory_order_acquire);
		struct detached d = { 0 };

		if (!im)
			continue;
		if (atomic_load(&im->open) && pthread_mutex_trylock(&im->lock) == 0) {
			if (closable(im) && (atomic_load(&im->superseded) || now - im->last_used >= (int64_t)c->idle))
				d = detach_image(c, im);
			pthread_mutex_unlock(&im->lock);
			close_detached(c, d);
		}
		if (atomic_load(&im->superseded) && !atomic_load(&im->open) && qc_reclaim(c, im))
			continue;
		old += atomic_load(&im->superseded) && atomic_load(&im->open);
	}
	pthread_mutex_lock(&c->open_lock);
	c->nopen_old = old;
	pthread_mutex_unlock(&c->open_lock);
}
