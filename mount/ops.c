/*
 * ops.c - the FUSE low-level operations, each a thin layer over libquash.
 *
 * Node ids: FUSE_ROOT_ID stands for the root inode (or the subdir= one);
 * every other node id is the inode reference plus QM_NODEID_BIAS, so a
 * request names its inode with no table, lock or forget bookkeeping.
 * Unless timeout= needs to count open files, OPEN and OPENDIR are declined
 * (the kernel then opens without asking) and reads find their file by node
 * id (nodes.c).  Hard
 * links share one reference, hence one kernel inode, as on the kernel's own
 * squashfs; st_ino is the squashfs inode number, as the kernel reports it.
 *
 * The image never changes, so every reply lets the kernel cache it for
 * QM_CACHE_TIMEOUT: attributes, entries, negative lookups (node id 0),
 * symlink targets, directory listings and file pages.  A read decompresses
 * whole blocks; the reply takes the bytes asked for and the block goes to
 * the page-cache filler (fill.c), so the kernel has the rest of the block
 * without asking again; a file read sequentially has its next blocks
 * decompressed ahead on the other cores (ahead.c).  No lock is taken here: per-open state lives in
 * fi->fh and the library locks its caches per shard.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "mount_int.h"
#include "format/squashfs_fs.h"

/* The kernel's squashfs reports its device block size, SQUASHFS_DEVBLK_SIZE. */
#define QM_STAT_BLKSIZE 1024

/* A read request is at most max_pages (256) pages; blocks are at least 4 KiB. */
#define QM_READ_BLOCKS_MAX (256 * 4096 / (1 << SQFS_BLOCK_LOG_MIN) + 2)

/* The kernel's squashfs reports SQUASHFS_NAME_LEN in statfs. */
#define QM_NAME_MAX 256

/* linux/capability.h's bit for CAP_SYS_ADMIN in /proc/PID/status CapEff. */
#define QM_CAP_SYS_ADMIN 21

static inline struct qm_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void touch(struct qm_fs *fs)
{
	if (fs->opt->idle_timeout)
		atomic_store_explicit(&fs->last_access, (int64_t)time(NULL), memory_order_relaxed);
}

static void count_open(struct qm_fs *fs, const struct qm_view *v, int delta)
{
	if (v->opens)
		atomic_fetch_add(v->opens, delta);
	if (fs->opt->idle_timeout) {
		atomic_fetch_add(&fs->open_count, delta);
		touch(fs);
	}
}

/*
 * A held mount's server (holder.h) gives the kernel no pointer as a file
 * handle, since a later server could not follow it: the handle is its tag
 * (odd, so never a pointer), and reads find the file by node id (nodes.c).
 * Only a release of its own tag uncounts an open.
 */
static bool handle_is_held(uint64_t fh)
{
	return fh & 1;
}

/* The file handle's object (NULL: find it by node id). */
static void *handle_obj(uint64_t fh)
{
	return handle_is_held(fh) ? NULL : (void *)(uintptr_t)fh;
}

/* A held server's OPEN or OPENDIR: the handle is its tag, counted as an open. */
static void reply_held_open(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, struct fuse_file_info *fi)
{
	fi->fh = fs->fh_tag;
	fi->keep_cache = 1;
	count_open(fs, v, 1);
	if (fuse_reply_open(req, fi) != 0)
		count_open(fs, v, -1);
}

/* Answer a failed request; corruption and I/O errors get a line in the log. */
static void reply_failure(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, int err, const char *what,
			  fuse_ino_t nodeid)
{
	if (err != -ENOENT && err != -ENODATA && err != -ERANGE && err != -ENOTDIR && err != -EINTR) {
		if (v->log_name)
			qm_log(fs, "%s: %s of inode reference 0x%llx: %s", v->name, what,
			       (unsigned long long)qm_ref_of(v, nodeid), qs_last_error());
		else
			qm_log(fs, "%s of inode reference 0x%llx: %s", what,
			       (unsigned long long)qm_ref_of(v, nodeid), qs_last_error());
	}
	fuse_reply_err(req, err < 0 ? -err : EIO);
}

static mode_t type_mode(unsigned type)
{
	switch (type) {
	case QS_DIR: return S_IFDIR;
	case QS_FILE: return S_IFREG;
	case QS_SYMLINK: return S_IFLNK;
	case QS_BLKDEV: return S_IFBLK;
	case QS_CHRDEV: return S_IFCHR;
	case QS_FIFO: return S_IFIFO;
	case QS_SOCKET: return S_IFSOCK;
	}
	return 0;
}

/* What stat(2) shows on the kernel's squashfs for this inode. */
static void fill_stat(const struct qm_fs *fs, const struct qm_view *v, const struct qs_inode *in, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = v->ino_base + in->ino;
	st->st_mode = in->mode;
	st->st_nlink = in->nlink;
	st->st_uid = fs->opt->uid_set ? fs->opt->uid : in->uid;
	st->st_gid = fs->opt->gid_set ? fs->opt->gid : in->gid;
	if (in->type == QS_FILE || in->type == QS_DIR || in->type == QS_SYMLINK)
		st->st_size = (off_t)in->size;
	if (in->type == QS_BLKDEV || in->type == QS_CHRDEV) {
		/* new_decode_dev() of the stored 32-bit number */
		unsigned major = (in->rdev & 0xfff00) >> 8;
		unsigned minor = (in->rdev & 0xff) | ((in->rdev >> 12) & 0xfff00);

		st->st_rdev = makedev(major, minor);
	}
	st->st_blocks = (blkcnt_t)qs_inode_blocks512(in);
	st->st_blksize = QM_STAT_BLKSIZE;
	st->st_atime = st->st_mtime = st->st_ctime = in->mtime;
}

static int read_node(const struct qm_view *v, fuse_ino_t nodeid, struct qs_inode *in)
{
	return qs_inode_read(v->img, qm_ref_of(v, nodeid), in);
}

void qm_view_init(struct qm_view *v, struct qs_image *img, qs_ref root_ref, bool remote)
{
	const struct qs_info *info = qs_image_info(img);

	v->img = img;
	v->root_ref = root_ref;
	v->root_nodeid = FUSE_ROOT_ID;
	v->id_base = 0;
	v->ino_base = 0;
	v->block_size = info->block_size;
	v->bytes_used = info->bytes_used;
	v->inode_count = info->inode_count;
	v->has_xattrs = info->xattr_id_table_start != SQFS_INVALID_TABLE && info->xattr_id_count > 0;
	v->remote = remote;
	v->log_name = false;
	v->labels = NULL;
}

/* What the mount asks of the kernel at INIT; plain mounts and catalogs alike. */
void qm_init_conn(struct qm_fs *fs, struct fuse_conn_info *conn, bool count_opens)
{
	conn->want |= FUSE_CAP_ASYNC_READ;
	/* libfuse insists that init() agrees with -o max_read= (it passes that to the kernel). */
	if (fs->opt->max_read)
		conn->max_read = fs->opt->max_read;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/*
	 * Always plus, never the kernel's guess: a tree walker (find, md5sum of
	 * every file) would otherwise list each directory twice, plain then plus,
	 * and look names up one by one; attributes cost us nothing extra.
	 */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* nothing changes behind the kernel's back: no invalidation on attribute replies */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	/*
	 * A remote image's O_DIRECT reads go one synchronous request at a time:
	 * the kernel sends INTERRUPT only for those, so a reader signalled while
	 * a server stalls is let go at once instead of waiting out the deadline.
	 */
	if (qs_source_spec_is_remote(fs->opt->image))
		conn->want &= ~FUSE_CAP_ASYNC_DIO;
	/*
	 * timeout= and a catalog (count_opens) count open files, so they need
	 * OPEN and RELEASE; allow_root needs them too, since libfuse refuses
	 * other users only on the requests it sees, and a cached entry asks
	 * nothing before READ.
	 */
	if (!fs->opt->idle_timeout && !count_opens && !qm_has_kernel_opt(fs->opt, "allow_root") &&
	    (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) &&
	    (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)) {
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT | FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_open = true;
	}
	conn->time_gran = 1000000000;
	conn->max_background = 64;
	conn->congestion_threshold = 48;

	pthread_mutex_lock(&fs->ready_lock);
	fs->ready = true;
	pthread_cond_broadcast(&fs->ready_cond);
	pthread_mutex_unlock(&fs->ready_lock);
}

void qm_img_lookup(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .attr_timeout = QM_CACHE_TIMEOUT, .entry_timeout = QM_CACHE_TIMEOUT };
	struct qs_inode dir, child;
	int err;

	touch(fs);
	err = read_node(v, parent, &dir);
	if (!err)
		err = qs_lookup(v->img, &dir, name, strlen(name), &child);
	if (err == -ENOENT) {
		fuse_reply_entry(req, &e);      /* node id 0: the kernel caches the absence */
		return;
	}
	if (err) {
		reply_failure(fs, v, req, err, "lookup", parent);
		return;
	}
	e.ino = qm_nodeid_of(v, child.ref);
	e.generation = v->generation;
	fill_stat(fs, v, &child, &e.attr);
	/* counted before the reply: the kernel may forget the node before this thread runs again */
	if (v->lookups)
		atomic_fetch_add(v->lookups, 1);
	if (fuse_reply_entry(req, &e) != 0 && v->lookups)
		atomic_fetch_sub(v->lookups, 1);
}

void qm_img_getattr(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid)
{
	struct qs_inode in;
	struct stat st;
	int err;

	touch(fs);
	err = read_node(v, nodeid, &in);
	if (err) {
		reply_failure(fs, v, req, err, "getattr", nodeid);
		return;
	}
	fill_stat(fs, v, &in, &st);
	fuse_reply_attr(req, &st, QM_CACHE_TIMEOUT);
}

void qm_img_readlink(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid)
{
	struct qs_inode in;
	char *target = NULL;
	int err;

	touch(fs);
	err = read_node(v, nodeid, &in);
	if (!err && in.type != QS_SYMLINK)
		err = -EINVAL;
	if (!err && in.size > QS_SYMLINK_MAX)
		err = qs_set_error(-EIO, "symlink target of %llu bytes", (unsigned long long)in.size);
	if (!err && !(target = malloc(in.size + 1)))
		err = -ENOMEM;
	if (!err)
		err = qs_readlink(v->img, &in, target, in.size + 1);
	if (err < 0)
		reply_failure(fs, v, req, err, "readlink", nodeid);
	else
		fuse_reply_readlink(req, target);
	free(target);
}

void qm_img_open(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
		 struct fuse_file_info *fi)
{
	struct qs_inode in;
	struct qs_file *file;
	int err;

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);    /* from now on the kernel opens by itself */
		return;
	}
	err = read_node(v, nodeid, &in);
	if (!err && fs->fh_tag) {
		fi->noflush = 1;
		reply_held_open(fs, v, req, fi);
		return;
	}
	if (!err)
		err = qs_file_open(v->img, &in, &file);
	if (err) {
		reply_failure(fs, v, req, err, "open", nodeid);
		return;
	}
	fi->fh = (uintptr_t)file;
	fi->keep_cache = 1;
	fi->noflush = 1;
	count_open(fs, v, 1);
	if (fuse_reply_open(req, fi) != 0) {
		qs_file_close(file);
		count_open(fs, v, -1);
	}
}

void qm_img_release(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, struct fuse_file_info *fi)
{
	if (fi->fh && !handle_is_held(fi->fh)) {
		/* the blocks loaded ahead use the file (and its image) until they are done */
		qm_ahead_forget(fs->ahead, (struct qs_file *)(uintptr_t)fi->fh);
		qs_file_close((struct qs_file *)(uintptr_t)fi->fh);
	}
	if (fi->fh && (!handle_is_held(fi->fh) || fi->fh == fs->fh_tag))
		count_open(fs, v, -1);
	fuse_reply_err(req, 0);
}

static void release_blocks(struct qs_block **blocks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		qs_block_release(NULL, blocks[i]);
}

/*
 * Reply with [off, off + size) straight from the cached blocks, then hand
 * each block the reply did not cover whole to the page-cache filler.
 */
static void read_file(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
		      struct qs_file *file, struct qm_node *node, size_t size, off_t off)
{
	uint64_t file_size = qs_file_inode(file)->size, bs = v->block_size, end;
	struct qs_block *blocks[QM_READ_BLOCKS_MAX];
	const void *data[QM_READ_BLOCKS_MAX];
	size_t lens[QM_READ_BLOCKS_MAX];
	struct iovec iov[QM_READ_BLOCKS_MAX];
	uint64_t first, count;
	int err = 0;

	if ((uint64_t)off >= file_size || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	end = (uint64_t)off + size < file_size ? (uint64_t)off + size : file_size;
	first = (uint64_t)off / bs;
	count = (end - 1) / bs - first + 1;
	if (count > QM_READ_BLOCKS_MAX) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/*
	 * Not for a remote image: its chunk cache fetches a stream ahead
	 * itself, and a block loaded ahead that waits on a slow server would
	 * hold up the file's close (qm_ahead_forget) without an interrupt.
	 */
	if (!v->remote)
		qm_ahead_read(fs->ahead, file, node, first, count, (size_t)bs);
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start = (first + i) * bs;
		uint64_t from = i == 0 ? (uint64_t)off - start : 0;
		uint64_t to = end - start < bs ? end - start : bs;

		err = qs_file_block(file, first + i, &blocks[i], &data[i], &lens[i]);
		if (!err && lens[i] < to) {
			qs_block_release(NULL, blocks[i]);
			err = qs_set_error(-EIO, "block %llu holds %zu bytes, expected %llu",
					   (unsigned long long)(first + i), lens[i], (unsigned long long)to);
		}
		if (err) {
			release_blocks(blocks, i);
			reply_failure(fs, v, req, err, "read", nodeid);
			return;
		}
		iov[i].iov_base = (char *)data[i] + from;
		iov[i].iov_len = to - from;
	}
	/* the tail's fragment block is at hand: the files after it, queued before the reply that lets the reader on */
	if (first + count - 1 == qs_file_inode(file)->u.file.block_count)
		qm_siblings_push(fs, v, qs_file_inode(file));
	fuse_reply_iov(req, iov, (int)count);

	for (uint64_t i = 0; i < count; i++) {
		bool whole = iov[i].iov_base == data[i] && iov[i].iov_len == lens[i];

		if (fs->fill && !whole)
			qm_fill_push(fs->fill, nodeid, first + i, (off_t)((first + i) * bs), blocks[i], data[i], lens[i]);
		else
			qs_block_release_passed(NULL, blocks[i], iov[i].iov_base, iov[i].iov_len);
	}
}

/*
 * A worker's "interrupted" flag, for reads of a remote image: the kernel
 * sends INTERRUPT when the reader gets a signal, libfuse calls us from the
 * thread that received it, and the library's requests made by this
 * worker end at once (qs_source_set_interrupt).  A reader killed while a
 * server drips would otherwise stay in D state until the request's
 * deadline.  Per thread rather than per request: the callback may run
 * just after the reply, when a request's stack is gone; a worker lives as
 * long as the session, and its flag is cleared before each read.
 */
static __thread bool read_interrupted;

static void on_interrupt(fuse_req_t req, void *flag)
{
	(void)req;
	__atomic_store_n((bool *)flag, true, __ATOMIC_RELAXED);
}

void qm_img_read(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid, size_t size,
		 off_t off, struct fuse_file_info *fi)
{
	struct qs_file *file = handle_obj(fi->fh);
	struct qm_node *node = NULL;
	int err;

	touch(fs);
	if (!file) {
		err = qm_nodes_get(v, nodeid, false, &node);
		if (err) {
			reply_failure(fs, v, req, err, "open", nodeid);
			return;
		}
		file = qm_node_obj(node);
	}
	if (v->remote) {
		__atomic_store_n(&read_interrupted, false, __ATOMIC_RELAXED);
		qs_source_set_interrupt(&read_interrupted);
		fuse_req_interrupt_func(req, on_interrupt, &read_interrupted);
	}
	read_file(fs, v, req, nodeid, file, node, size, off);
	if (v->remote)
		qs_source_set_interrupt(NULL);
	if (node)
		qm_nodes_put(node);
}

void qm_img_opendir(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
		    struct fuse_file_info *fi)
{
	struct qs_inode in;
	struct qm_dir *d;
	int err;

	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	err = read_node(v, nodeid, &in);
	if (!err && in.type != QS_DIR)
		err = -ENOTDIR;
	if (!err && fs->fh_tag) {
		fi->cache_readdir = 1;
		reply_held_open(fs, v, req, fi);
		return;
	}
	if (!err)
		err = qm_dir_load(v->img, &in, &d);
	if (err) {
		reply_failure(fs, v, req, err, "opendir", nodeid);
		return;
	}
	fi->fh = (uintptr_t)d;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	count_open(fs, v, 1);
	if (fuse_reply_open(req, fi) != 0) {
		qm_dir_free(d);
		count_open(fs, v, -1);
	}
}

void qm_img_releasedir(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, struct fuse_file_info *fi)
{
	if (fi->fh && !handle_is_held(fi->fh))
		qm_dir_free((struct qm_dir *)(uintptr_t)fi->fh);
	if (fi->fh && (!handle_is_held(fi->fh) || fi->fh == fs->fh_tag))
		count_open(fs, v, -1);
	fuse_reply_err(req, 0);
}

/*
 * Entry i of the listing as the kernel's squashfs orders it: ".", "..",
 * then the directory's entries.  The offset of entry i is i + 1.
 */
static size_t add_entry(fuse_req_t req, struct qm_fs *fs, const struct qm_view *v, fuse_ino_t dir,
			const struct qm_dir *d, size_t i, bool plus, char *buf, size_t room, bool *handed)
{
	struct fuse_entry_param e = { .attr_timeout = QM_CACHE_TIMEOUT, .entry_timeout = QM_CACHE_TIMEOUT };
	const char *name;
	struct qs_inode in;

	if (i < 2) {
		name = i == 0 ? "." : "..";
		e.attr.st_ino = v->ino_base + (i == 0 ? d->self_ino : d->parent_ino);
		e.attr.st_mode = S_IFDIR;
	} else {
		const struct qm_dirent *ent = &d->ents[i - 2];

		name = d->names + ent->name_off;
		e.attr.st_ino = v->ino_base + ent->ino;
		e.attr.st_mode = type_mode(ent->type);
		if (plus) {
			int err = qs_inode_read(v->img, ent->ref, &in);

			if (err) {
				/* listed without attributes; a lookup will report the damage */
				qm_log(fs, "readdirplus of inode reference 0x%llx: %s",
				       (unsigned long long)ent->ref, qs_last_error());
			} else {
				e.ino = qm_nodeid_of(v, ent->ref);
				e.generation = v->generation;
				fill_stat(fs, v, &in, &e.attr);
				qm_siblings_note(fs, v, dir, &in);
			}
		}
	}
	*handed = e.ino != 0;
	if (plus)
		return fuse_add_direntry_plus(req, buf, room, name, &e, (off_t)(i + 1));
	return fuse_add_direntry(req, buf, room, name, &e.attr, (off_t)(i + 1));
}

void qm_img_readdir(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid, size_t size,
		    off_t off, struct fuse_file_info *fi, bool plus)
{
	const struct qm_dir *d = handle_obj(fi->fh);
	struct qm_node *node = NULL;
	size_t used = 0, total;
	uint64_t handed = 0;
	char *buf;
	int err;

	touch(fs);
	if (!d) {
		err = qm_nodes_get(v, nodeid, true, &node);
		if (err) {
			reply_failure(fs, v, req, err, "opendir", nodeid);
			return;
		}
		d = qm_node_obj(node);
	}
	total = d->count + 2;
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		if (node)
			qm_nodes_put(node);
		return;
	}
	for (size_t i = off < 0 ? 0 : (size_t)off; i < total; i++) {
		bool has_id;
		size_t n = add_entry(req, fs, v, nodeid, d, i, plus, buf + used, size - used, &has_id);

		if (n > size - used)
			break;
		used += n;
		handed += has_id;
	}
	/* the kernel links or forgets every node id of a readdirplus reply it takes */
	if (v->lookups && handed)
		atomic_fetch_add(v->lookups, handed);
	if (fuse_reply_buf(req, buf, used) != 0 && v->lookups && handed)
		atomic_fetch_sub(v->lookups, handed);
	free(buf);
	if (node)
		qm_nodes_put(node);
}

/* Like the kernel's squashfs_statfs(); f_type is FUSE's own, the kernel sets it. */
void qm_img_statfs(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req)
{
	struct statvfs st = {
		.f_bsize = v->block_size,
		.f_frsize = v->block_size,
		.f_blocks = v->bytes_used ? (v->bytes_used - 1) / v->block_size + 1 : 0,
		.f_files = v->inode_count,
		.f_namemax = QM_NAME_MAX,
	};

	touch(fs);
	fuse_reply_statfs(req, &st);
}

static int load_xattrs(const struct qm_view *v, fuse_ino_t nodeid, struct qs_xattr **xs, size_t *count)
{
	struct qs_inode in;
	int err;

	*xs = NULL;
	*count = 0;
	if (!v->has_xattrs)
		return 0;
	err = read_node(v, nodeid, &in);
	if (err || in.xattr == QS_NO_XATTR)
		return err;
	return qs_xattr_list(v->img, &in, xs, count);
}

/*
 * The error the kernel's squashfs gives for NAME whatever the inode: it has
 * handlers for user., trusted. and security. only, so any other name is
 * EOPNOTSUPP (xattr_resolve_name), system.posix_acl_* too (squashfs never
 * sets SB_POSIXACL, and mksquashfs stores no ACLs), and a bare prefix is
 * EINVAL.  0: the answer depends on the inode.  FUSE sends the ACL names
 * here through its get_acl; gnulib's file_has_acl takes EOPNOTSUPP as "no
 * ACL support", so `ls -l` asks the device once instead of once a file.
 */
int qm_xattr_name_error(const char *name)
{
	static const char *const prefixes[] = { "user.", "trusted.", "security." };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);

		if (strncmp(name, prefixes[i], n) == 0)
			return name[n] ? 0 : EINVAL;
	}
	return EOPNOTSUPP;
}

/*
 * What the search for a label may read: sets of xattrs, and bytes of their
 * names and values.  Past either, the image counts as labelled, so that a
 * hostile id table cannot make the first `ls -l` read gigabytes.
 */
#define QM_LABEL_SCAN_SETS 16384u
#define QM_LABEL_SCAN_BYTES (4u << 20)

/*
 * Does an inode of the image carry security.selinux?  Each xattr id is a set
 * that inodes share, so the id table lists every set there is.  A set that
 * cannot be read, or a table past the bounds above, counts as yes: then
 * every query gets the kernel's own answer.
 */
static bool image_has_label(const struct qm_view *v)
{
	uint32_t sets = qs_image_info(v->img)->xattr_id_count;
	int known = atomic_load(v->labels);
	bool found = false;
	size_t bytes = 0;

	if (known)
		return known == 2;
	if (v->has_xattrs && sets > QM_LABEL_SCAN_SETS)
		found = true;
	for (uint32_t id = 0; v->has_xattrs && id < sets && !found; id++) {
		struct qs_inode in = { .xattr = id };
		struct qs_xattr *xs;
		size_t count;

		if (qs_xattr_list(v->img, &in, &xs, &count) != 0) {
			found = true;
			break;
		}
		for (size_t i = 0; i < count && !found; i++) {
			found = strcmp(xs[i].name, "security.selinux") == 0;
			bytes += strlen(xs[i].name) + xs[i].value_len;
		}
		qs_xattr_free(xs, count);
		if (bytes > QM_LABEL_SCAN_BYTES)
			found = true;
	}
	atomic_store(v->labels, found ? 2 : 1);
	return found;
}

void qm_img_getxattr(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
		     const char *name, size_t size)
{
	struct qs_xattr *xs;
	size_t count, i;
	int err;

	touch(fs);
	err = qm_xattr_name_error(name);
	/*
	 * The kernel's squashfs says ENODATA to a security.selinux that no
	 * inode carries; EOPNOTSUPP tells `ls -l` (libselinux's lgetfilecon
	 * through coreutils' getfilecon_cache) to stop asking this device, one
	 * round trip instead of one a file.  A catalog's images share one
	 * device, and another image may carry labels: their views have no
	 * v->labels, and answer as the kernel.
	 */
	if (!err && v->labels && strcmp(name, "security.selinux") == 0 && !image_has_label(v))
		err = EOPNOTSUPP;
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	err = load_xattrs(v, nodeid, &xs, &count);
	if (err) {
		reply_failure(fs, v, req, err, "getxattr", nodeid);
		return;
	}
	for (i = 0; i < count && strcmp(xs[i].name, name) != 0; i++)
		;
	if (i == count)
		fuse_reply_err(req, ENODATA);
	else if (size == 0)
		fuse_reply_xattr(req, xs[i].value_len);
	else if (size < xs[i].value_len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, xs[i].value, xs[i].value_len);
	qs_xattr_free(xs, count);
}

/*
 * The kernel's squashfs on an image without an xattr table: directories,
 * symlinks and extended regular files have no listxattr (EOPNOTSUPP, seen on
 * Linux 6.18), other inodes list nothing.
 */
static void listxattr_without_table(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
				    size_t size)
{
	struct qs_inode in;
	int err = read_node(v, nodeid, &in);

	if (err)
		reply_failure(fs, v, req, err, "listxattr", nodeid);
	else if (in.type == QS_DIR || in.type == QS_SYMLINK || (in.type == QS_FILE && in.extended))
		fuse_reply_err(req, EOPNOTSUPP);
	else if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

/*
 * May the caller see trusted.* names?  The kernel's squashfs lists them
 * only to CAP_SYS_ADMIN (squashfs_trusted_xattr_handler_list), and the VFS
 * already answers ENODATA to anyone else's getxattr of one before asking
 * us (xattr_permission), so only listxattr needs this.  The request holds
 * the caller's uid and pid: root in this daemon's user namespace (root of
 * a container maps to another uid) whose effective set, read from
 * /proc/PID/status, has CAP_SYS_ADMIN.  Anything unreadable (a pid of 0
 * from another pid namespace, a caller gone) counts as unprivileged.
 */
static bool caller_is_admin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[64], buf[2048];
	unsigned long long caps;
	const char *line;
	ssize_t n;
	int fd;

	if (ctx->uid != 0 || ctx->pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	line = strstr(buf, "\nCapEff:");
	return line && sscanf(line, "\nCapEff: %llx", &caps) == 1 && (caps >> QM_CAP_SYS_ADMIN & 1);
}

static bool hidden_xattr(const char *name, int *admin, fuse_req_t req)
{
	if (strncmp(name, "trusted.", 8) != 0)
		return false;
	if (*admin < 0)
		*admin = caller_is_admin(req);
	return !*admin;
}

void qm_img_listxattr(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid, size_t size)
{
	struct qs_xattr *xs;
	size_t count, total = 0;
	char *list, *p;
	int admin = -1;     /* not asked yet */
	int err;

	touch(fs);
	if (!v->has_xattrs) {
		listxattr_without_table(fs, v, req, nodeid, size);
		return;
	}
	err = load_xattrs(v, nodeid, &xs, &count);
	if (err) {
		reply_failure(fs, v, req, err, "listxattr", nodeid);
		return;
	}
	for (size_t i = 0; i < count; i++)
		if (!hidden_xattr(xs[i].name, &admin, req))
			total += strlen(xs[i].name) + 1;
	if (size == 0) {
		fuse_reply_xattr(req, total);
	} else if (size < total) {
		fuse_reply_err(req, ERANGE);
	} else if (!(list = malloc(total ? total : 1))) {
		fuse_reply_err(req, ENOMEM);
	} else {
		p = list;
		for (size_t i = 0; i < count; i++) {
			size_t n = strlen(xs[i].name) + 1;

			if (hidden_xattr(xs[i].name, &admin, req))
				continue;
			memcpy(p, xs[i].name, n);
			p += n;
		}
		fuse_reply_buf(req, list, total);
		free(list);
	}
	qs_xattr_free(xs, count);
}

/* ---- the plain mount: one image, fs->view ------------------------------- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	qm_init_conn(userdata, conn, false);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	qm_img_lookup(fs_of(req), &fs_of(req)->view, req, parent, name);
}

static void op_getattr(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	(void)fi;
	qm_img_getattr(fs_of(req), &fs_of(req)->view, req, nodeid);
}

static void op_readlink(fuse_req_t req, fuse_ino_t nodeid)
{
	qm_img_readlink(fs_of(req), &fs_of(req)->view, req, nodeid);
}

static void op_open(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	qm_img_open(fs_of(req), &fs_of(req)->view, req, nodeid, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	(void)nodeid;
	qm_img_release(fs_of(req), &fs_of(req)->view, req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off, struct fuse_file_info *fi)
{
	qm_img_read(fs_of(req), &fs_of(req)->view, req, nodeid, size, off, fi);
}

static void op_opendir(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	qm_img_opendir(fs_of(req), &fs_of(req)->view, req, nodeid, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t nodeid, struct fuse_file_info *fi)
{
	(void)nodeid;
	qm_img_releasedir(fs_of(req), &fs_of(req)->view, req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off, struct fuse_file_info *fi)
{
	qm_img_readdir(fs_of(req), &fs_of(req)->view, req, nodeid, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	qm_img_readdir(fs_of(req), &fs_of(req)->view, req, nodeid, size, off, fi, true);
}

static void op_statfs(fuse_req_t req, fuse_ino_t nodeid)
{
	(void)nodeid;
	qm_img_statfs(fs_of(req), &fs_of(req)->view, req);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t nodeid, const char *name, size_t size)
{
	qm_img_getxattr(fs_of(req), &fs_of(req)->view, req, nodeid, name, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t nodeid, size_t size)
{
	qm_img_listxattr(fs_of(req), &fs_of(req)->view, req, nodeid, size);
}

const struct fuse_lowlevel_ops qm_ops = {
	.init = op_init,
	.lookup = op_lookup,
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
