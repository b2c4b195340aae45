/*
 * ops.c - the FUSE operations of a catalog mount: the catalog's own
 * directories and control files are answered here, everything inside an
 * image by the plain mount's operations (mount/ops.c) with that image's view,
 * the image held open (qc_pin) for the length of the request.
 *
 * An image's directory (NAME) is answered from the catalog alone: lookup,
 * getattr, the xattr calls `ls -l` makes, and the catalog directory's
 * listing never open the image, as autofs's --ghost directories do not
 * mount it.  Its attributes are therefore the catalog's (mode 0555, the
 * image file's mtime), not those of the image's root.  The first request
 * inside it (a lookup, opendir, ...) opens the image.
 *
 * Timeouts: entries and attributes of images are cached for ever, as in a
 * plain mount, since a changed image gets new node ids and the watcher
 * tells the kernel to forget its name; a name not found is cached for
 * QC_NEGATIVE_TIMEOUT only, so that a new image is found soon without a
 * listing per miss.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "ctl.h"
#include "log.h"

#define QC_NEGATIVE_TIMEOUT 1.0     /* s a missing name stays missing in the kernel */
#define QC_DIR_ATTR_TIMEOUT 1.0     /* s a catalog directory's attributes (nlink, mtime) hold */

static inline struct qm_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void catalog_stat(const struct qm_fs *fs, const struct qc_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = (a->is_alias ? S_IFLNK : S_IFDIR) | a->mode;
	st->st_size = (off_t)a->size;
	st->st_nlink = a->nlink;
	st->st_uid = fs->opt->uid_set ? fs->opt->uid : a->own ? a->uid : getuid();
	st->st_gid = fs->opt->gid_set ? fs->opt->gid : a->own ? a->gid : getgid();
	st->st_blksize = 1024;
	st->st_atime = st->st_mtime = st->st_ctime = a->mtime;
}

static void ctl_stat(const struct qm_fs *fs, fuse_ino_t nodeid, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = nodeid;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_uid = fs->opt->uid_set ? fs->opt->uid : getuid();
	st->st_gid = fs->opt->gid_set ? fs->opt->gid : getgid();
}

static bool is_ctl(fuse_ino_t nodeid)
{
	return nodeid == QC_CTL_STATUS || nodeid == QC_CTL_REFRESH;
}

/* The image behind a node id, held for this request; on failure the request is answered. */
static struct qc_image *pin(fuse_req_t req, fuse_ino_t nodeid)
{
	int err;
	struct qc_image *im = qc_pin(fs_of(req)->catalog, qc_slot_of(nodeid), &err);

	if (!im)
		fuse_reply_err(req, -err);
	return im;
}

static bool is_image_root(fuse_ino_t nodeid)
{
	return qc_slot_of(nodeid) != 0 && (nodeid & QC_LOCAL_MASK) == 1;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	qm_init_conn(userdata, conn, true);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct qm_fs *fs = fs_of(req);
	struct fuse_entry_param e = { 0 };
	struct qc_image *im;
	struct qc_attr a;
	int err;

	if (qc_slot_of(parent) != 0) {
		if ((im = pin(req, parent))) {
			qm_img_lookup(fs, qc_view(im), req, parent, name);
			qc_unpin(im);
		}
		return;
	}
	if (parent == FUSE_ROOT_ID && (strcmp(name, QC_CTL_STATUS_NAME) == 0 ||
				       strcmp(name, QC_CTL_REFRESH_NAME) == 0)) {
		e.ino = strcmp(name, QC_CTL_STATUS_NAME) == 0 ? QC_CTL_STATUS : QC_CTL_REFRESH;
		ctl_stat(fs, e.ino, &e.attr);
		fuse_reply_entry(req, &e);      /* timeouts 0: asked again each time */
		return;
	}
	err = qc_lookup(fs->catalog, parent, name, &a);
	if (err == -ENOENT) {
		e.entry_timeout = QC_NEGATIVE_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	e.ino = a.nodeid;
	e.entry_timeout = QM_CACHE_TIMEOUT;
	e.attr_timeout = a.is_dir ? QC_DIR_ATTR_TIMEOUT : QM_CACHE_TIMEOUT;
	catalog_stat(fs, &a, &e.attr);
	/* qc_lookup() counted an image's lookup; a reply the kernel never took is none */
	if (fuse_reply_entry(req, &e) != 0 && !a.is_dir && !a.is_alias)
		qc_forget(fs->catalog, a.nodeid, 1);
}

static void op_getattr(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	struct qm_fs *fs = fs_of(req);
	struct qc_image *im;
	struct qc_attr a;
	struct stat st;
	int err;

	(void)fi;
	if (is_ctl(nodeid)) {
		ctl_stat(fs, nodeid, &st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	if (qc_slot_of(nodeid) == 0 || is_image_root(nodeid)) {
		err = qc_slot_of(nodeid) == 0 ? qc_dir_attr(fs->catalog, nodeid, &a) :
						qc_image_attr(fs->catalog, qc_slot_of(nodeid), &a);
		if (err) {
			fuse_reply_err(req, -err);
			return;
		}
		catalog_stat(fs, &a, &st);
		fuse_reply_attr(req, &st, a.is_dir ? QC_DIR_ATTR_TIMEOUT : QM_CACHE_TIMEOUT);
		return;
	}
	if ((im = pin(req, nodeid))) {
		qm_img_getattr(fs, qc_view(im), req, nodeid);
		qc_unpin(im);
	}
}

static void op_readlink(fuse_req_t req, fuse_ino_t nodeid)
{
	struct qc_image *im;

	if (qc_slot_of(nodeid) == 0 && !is_ctl(nodeid)) {
		char text[4 * 1024];
		int err = qc_alias_text(fs_of(req)->catalog, nodeid, text, sizeof(text));

		if (err)
			fuse_reply_err(req, -err);
		else
			fuse_reply_readlink(req, text);
		return;
	}
	if (qc_slot_of(nodeid) == 0 || is_image_root(nodeid)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((im = pin(req, nodeid))) {
		qm_img_readlink(fs_of(req), qc_view(im), req, nodeid);
		qc_unpin(im);
	}
}

static void op_open(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	struct qc_image *im;

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (is_ctl(nodeid)) {
		qc_ctl_open(fs_of(req)->catalog, qc_ctl_of(fs_of(req)->catalog), req, nodeid, fi);
		return;
	}
	if (qc_slot_of(nodeid) == 0 || is_image_root(nodeid)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((im = pin(req, nodeid))) {
		qm_img_open(fs_of(req), qc_view(im), req, nodeid, fi);
		qc_unpin(im);
	}
}

static void op_release(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	struct qc_image *im;

	if (is_ctl(nodeid)) {
		qc_ctl_release(qc_ctl_of(fs_of(req)->catalog), fi);
		fuse_reply_err(req, 0);
		return;
	}
	/* not pinned: an image with files open is never closed, and this one is */
	im = qc_slot(fs_of(req)->catalog, qc_slot_of(nodeid));
	if (im)
		qm_img_release(fs_of(req), qc_view(im), req, fi);
	else
		fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct qc_image *im;

	if (is_ctl(nodeid)) {
		qc_ctl_read(fs_of(req)->catalog, req, nodeid, size, off, fi);
		return;
	}
	if ((im = pin(req, nodeid))) {
		qm_img_read(fs_of(req), qc_view(im), req, nodeid, size, off, fi);
		qc_unpin(im);
	}
}

static void op_opendir(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	struct qc_listing *l;
	struct qc_image *im;
	int err;

	if (qc_slot_of(nodeid) != 0) {
		if ((im = pin(req, nodeid))) {
			qm_img_opendir(fs_of(req), qc_view(im), req, nodeid, fi);
			qc_unpin(im);
		}
		return;
	}
	if (is_ctl(nodeid)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	err = qc_list(fs_of(req)->catalog, nodeid, &l);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	/* a snapshot: offsets hold while the catalog changes */
	fi->fh = qc_handle_add(&fs_of(req)->catalog->handles, l);
	if (!fi->fh) {
		qc_listing_free(l);
		fuse_reply_err(req, ENOMEM);
	} else if (fuse_reply_open(req, fi) != 0) {
		qc_listing_free(qc_handle_take(&fs_of(req)->catalog->handles, fi->fh));
	}
}

/*
 * The listing of an open catalog directory.  One opened under a server
 * before this one is listed again now, so its offsets count in the
 * catalog as it is, not as it was.
 */
static const struct qc_listing *listing_of(struct qm_catalog *c, fuse_ino_t nodeid, uint64_t fh, int *err)
{
	struct qc_listing *l = qc_handle_get(&c->handles, fh), *have;

	*err = 0;
	if (l)
		return l;
	if ((*err = qc_list(c, nodeid, &l)) != 0)
		return NULL;
	have = qc_handle_set(&c->handles, fh, l);
	if (have != l)
		qc_listing_free(l);
	if (!have)
		*err = -ENOMEM;
	return have;
}

static void op_releasedir(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	struct qc_image *im;

	if (qc_slot_of(nodeid) == 0) {
		qc_listing_free(qc_handle_take(&fs_of(req)->catalog->handles, fi->fh));
		fuse_reply_err(req, 0);
		return;
	}
	im = qc_slot(fs_of(req)->catalog, qc_slot_of(nodeid));
	if (im)
		qm_img_releasedir(fs_of(req), qc_view(im), req, fi);
	else
		fuse_reply_err(req, 0);
}

/*
 * Entry i of a catalog directory's listing into buf; 0 and nothing added
 * when it does not fit.  With plus, an image's node id goes out only if
 * its version is still the one listed, counted as a lookup (*counted).
 */
static size_t add_catalog_entry(fuse_req_t req, const struct qc_listing *l, size_t i, bool plus, char *buf,
				size_t room, fuse_ino_t *counted)
{
	struct fuse_entry_param e = { 0 };
	const struct qc_attr *a = NULL;
	const char *name;
	size_t need;

	*counted = 0;
	if (i < 2) {
		name = i == 0 ? "." : "..";
		e.attr.st_ino = i == 0 ? l->self_ino : l->parent_ino;
		e.attr.st_mode = S_IFDIR;
	} else {
		a = &l->attrs[i - 2];
		name = l->names[i - 2];
		catalog_stat(fs_of(req), a, &e.attr);
	}
	if (!plus) {
		need = fuse_add_direntry(req, NULL, 0, name, &e.attr, (off_t)(i + 1));
		return need > room ? 0 : fuse_add_direntry(req, buf, room, name, &e.attr, (off_t)(i + 1));
	}
	need = fuse_add_direntry_plus(req, NULL, 0, name, &e, (off_t)(i + 1));
	if (need > room)
		return 0;
	if (a && qc_lookup_ref(fs_of(req)->catalog, a, l->serials[i - 2])) {
		e.ino = a->nodeid;
		e.entry_timeout = QM_CACHE_TIMEOUT;
		e.attr_timeout = a->is_dir ? QC_DIR_ATTR_TIMEOUT : QM_CACHE_TIMEOUT;
		*counted = a->is_dir || a->is_alias ? 0 : a->nodeid;
	}
	return fuse_add_direntry_plus(req, buf, room, name, &e, (off_t)(i + 1));
}

static void do_readdir(fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off, struct fuse_file_info *fi,
		       bool plus)
{
	struct qm_catalog *c = fs_of(req)->catalog;
	const struct qc_listing *l;
	fuse_ino_t *counted = NULL;
	struct qc_image *im;
	size_t used = 0, ncounted = 0;
	char *buf;
	int err;

	if (qc_slot_of(nodeid) != 0) {
		if ((im = pin(req, nodeid))) {
			qm_img_readdir(fs_of(req), qc_view(im), req, nodeid, size, off, fi, plus);
			qc_unpin(im);
		}
		return;
	}
	if (!(l = listing_of(c, nodeid, fi->fh, &err))) {
		fuse_reply_err(req, -err);
		return;
	}
	buf = malloc(size);
	/* an entry is at least 24 bytes (plus: 152), so at most size / 24 of them */
	if (buf && plus)
		counted = malloc((size / 24 + 1) * sizeof(*counted));
	if (!buf || (plus && !counted)) {
		free(buf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = off < 0 ? 0 : (size_t)off; i < l->count + 2; i++) {
		fuse_ino_t id;
		size_t n = add_catalog_entry(req, l, i, plus, buf + used, size - used, &id);

		if (n == 0)
			break;
		used += n;
		if (id)
			counted[ncounted++] = id;
	}
	/* the kernel links or forgets every node id of a reply it takes; one it never took is none */
	if (fuse_reply_buf(req, buf, used) != 0)
		for (size_t k = 0; k < ncounted; k++)
			qc_forget(c, counted[k], 1);
	free(counted);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, nodeid, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, nodeid, size, off, fi, true);
}

static void op_statfs(fuse_req_t req, fuse_ino_t nodeid)
{
	struct statvfs st = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = 256 };
	struct qc_image *im;

	if (qc_slot_of(nodeid) == 0 || is_image_root(nodeid)) {
		fuse_reply_statfs(req, &st);
		return;
	}
	if ((im = pin(req, nodeid))) {
		qm_img_statfs(fs_of(req), qc_view(im), req);
		qc_unpin(im);
	}
}

/* The catalog's own nodes and image directories have none: `ls -l` must not open every image. */
static void op_getxattr(fuse_req_t req, fuse_ino_t nodeid, const char *name, size_t size)
{
	struct qc_image *im;

	if (qc_slot_of(nodeid) == 0 || is_image_root(nodeid)) {
		int err = qm_xattr_name_error(name);

		fuse_reply_err(req, err ? err : ENODATA);
		return;
	}
	if ((im = pin(req, nodeid))) {
		qm_img_getxattr(fs_of(req), qc_view(im), req, nodeid, name, size);
		qc_unpin(im);
	}
}

static void op_listxattr(fuse_req_t req, fuse_ino_t nodeid, size_t size)
{
	struct qc_image *im;

	if (qc_slot_of(nodeid) == 0 || is_image_root(nodeid)) {
		if (size == 0)
			fuse_reply_xattr(req, 0);
		else
			fuse_reply_buf(req, NULL, 0);
		return;
	}
	if ((im = pin(req, nodeid))) {
		qm_img_listxattr(fs_of(req), qc_view(im), req, nodeid, size);
		qc_unpin(im);
	}
}

/* Node ids of images are counted, so that a version's slot can be reused once all are forgotten. */
static void op_forget(fuse_req_t req, fuse_ino_t nodeid, uint64_t nlookup)
{
	if (qc_slot_of(nodeid) != 0)
		qc_forget(fs_of(req)->catalog, nodeid, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		if (qc_slot_of(forgets[i].ino) != 0)
			qc_forget(fs_of(req)->catalog, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static const struct fuse_lowlevel_ops catalog_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
};

/* The session is up: the watcher starts (idle close, new images, refreshes). */
static void started(struct qm_fs *fs)
{
	if (qc_start(fs->catalog) != 0)
		qm_log(fs, "catalog: cannot start its watcher: no idle close, no new images");
}

/* The watcher tells the kernel of changed names through the session: it stops first. */
static void stopping(struct qm_fs *fs)
{
	qc_stop(fs->catalog);
}

const struct qm_serve qc_serve = {
	.ops = &catalog_ops, .grow_workers = true, .started = started, .stopping = stopping,
};
