/*
 * cmd_extract.c - quash extract: recreate an image's tree, or part of it,
 * inside a directory, with the metadata unsquashfs restores.
 *
 * The image is hostile, the directory is not: nothing may be written outside
 * DIR whatever the image holds.  So every object is created relative to a
 * directory file descriptor this program opened itself (mkdirat, openat,
 * symlinkat, mknodat, linkat), directories are opened with O_NOFOLLOW so a
 * symlink from the image (or one already in DIR) is never walked through,
 * files are created with O_EXCL|O_NOFOLLOW, names are checked for '/', "."
 * and "..", a hard link only ever points at a file made earlier in this run,
 * and each directory inode is entered once, to a bounded depth.
 *
 * Metadata goes on in the order that keeps it: owner first (chown clears
 * setuid bits and file capabilities), then xattrs, then the mode, and the
 * times last; a directory gets its own after its contents are written, so
 * neither a read-only mode nor the new entries spoil them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common.h"
#include "inomap.h"
#include "format/squashfs_fs.h"

struct extractor {
	struct qs_image *img;
	const char *image;
	uint32_t block_size;
	bool as_root;                   /* restore owners, devices, trusted. and security. xattrs */
	mode_t umask;                   /* the caller's, applied to what an ordinary user extracts */
	bool xattrs_unsupported;        /* DIR's filesystem said ENOTSUP once: stop trying */
	int root_fd;                    /* DIR */
	struct cli_path path;           /* of the current entry in the image: "/a/b" */
	struct inomap visited;          /* directory inodes entered */
	struct inomap links;            /* inode number -> path of its first copy, for nlink > 1 */
	char *target;                   /* QS_SYMLINK_MAX + 1 bytes */
	bool force;                     /* -f: replace what is in the way */
	unsigned long long existing;    /* entries left alone because they exist (no -f) */
	char *first_existing;           /* the first of them, for the one message */
	int status;
};

/* Report a failure for the current entry; extraction goes on with the next. */
__attribute__((format(printf, 2, 3)))
static void fail(struct extractor *ex, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_error(ex->image, ex->path.buf, "%s", msg);
	ex->status = CLI_EXIT_ERROR;
}

static bool safe_name(const char *name, size_t len)
{
	return len > 0 && memchr(name, '/', len) == NULL && strlen(name) == len &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* ---- metadata ---------------------------------------------------------- */

static bool xattr_wanted(const struct extractor *ex, const char *name)
{
	/* Only root may set the trusted. and security. namespaces. */
	return ex->as_root || strncmp(name, "user.", 5) == 0;
}

/*
 * Set the inode's xattrs on fd, or (fd < 0) on the entry 'name' of directory
 * dfd without following it, through /proc/self/fd: Linux has no lsetxattrat().
 */
static void restore_xattrs(struct extractor *ex, int fd, int dfd, const char *name, const struct qs_inode *inode)
{
	struct qs_xattr *xattrs;
	char proc_path[64 + SQFS_NAME_MAX];
	size_t count;

	if (inode->xattr == QS_NO_XATTR || ex->xattrs_unsupported)
		return;
	if (qs_xattr_list(ex->img, inode, &xattrs, &count) < 0) {
		fail(ex, "%s", qs_last_error());
		return;
	}
	if (fd < 0)
		snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d/%s", dfd, name);
	for (size_t i = 0; i < count; i++) {
		const struct qs_xattr *x = &xattrs[i];
		int rc;

		if (!xattr_wanted(ex, x->name))
			continue;
		if (fd >= 0)
			rc = fsetxattr(fd, x->name, x->value, x->value_len, 0);
		else
			rc = lsetxattr(proc_path, x->name, x->value, x->value_len, 0);
		if (rc == 0)
			continue;
		if (errno == ENOTSUP) {
			fail(ex, "cannot set xattr %s: %s (no more xattrs will be restored)", x->name,
			     strerror(errno));
			ex->xattrs_unsupported = true;
			break;
		}
		fail(ex, "cannot set xattr %s: %s", x->name, strerror(errno));
	}
	qs_xattr_free(xattrs, count);
}

static void restore_times_ts(struct timespec ts[2], const struct qs_inode *inode)
{
	/* unsquashfs sets the access time to the modification time too. */
	ts[0].tv_sec = ts[1].tv_sec = (time_t)inode->mtime;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
}

/*
 * The permission bits to set.  Root gets the image's.  An ordinary user, as
 * with unsquashfs and tar, gets no setuid or setgid bits (they would make
 * programs run as that user, from an image someone else made), and regular
 * files the umask too.
 */
static mode_t restored_mode(const struct extractor *ex, const struct qs_inode *inode)
{
	mode_t mode = inode->mode & 07777;

	if (ex->as_root)
		return mode;
	mode &= ~(mode_t)(S_ISUID | S_ISGID);
	if (inode->type == QS_FILE)
		mode &= ~ex->umask;
	return mode;
}

/* Owner, xattrs, mode, times of something open as fd (a file or directory). */
static void restore_fd(struct extractor *ex, int fd, int dfd, const char *name, const struct qs_inode *inode)
{
	struct timespec ts[2];

	if (ex->as_root && fchown(fd, inode->uid, inode->gid) < 0)
		fail(ex, "cannot set owner: %s", strerror(errno));
	restore_xattrs(ex, fd, dfd, name, inode);
	if (fchmod(fd, restored_mode(ex, inode)) < 0)
		fail(ex, "cannot set mode: %s", strerror(errno));
	restore_times_ts(ts, inode);
	if (futimens(fd, ts) < 0)
		fail(ex, "cannot set times: %s", strerror(errno));
}

/* The same for an entry of dfd that is not opened: symlinks, devices, fifos, sockets. */
static void restore_at(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode)
{
	struct timespec ts[2];

	if (ex->as_root && fchownat(dfd, name, inode->uid, inode->gid, AT_SYMLINK_NOFOLLOW) < 0)
		fail(ex, "cannot set owner: %s", strerror(errno));
	restore_xattrs(ex, -1, dfd, name, inode);
	/* A symlink's mode means nothing; the others were made by this run a moment ago. */
	if (inode->type != QS_SYMLINK && fchmodat(dfd, name, restored_mode(ex, inode), 0) < 0)
		fail(ex, "cannot set mode: %s", strerror(errno));
	restore_times_ts(ts, inode);
	if (utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		fail(ex, "cannot set times: %s", strerror(errno));
}

/* ---- hard links -------------------------------------------------------- */

/* Open the directory at 'rel' (relative to DIR, "" for DIR) one component at a time, never following symlinks. */
static int open_extracted_dir(struct extractor *ex, const char *rel, size_t len)
{
	int fd = dup(ex->root_fd);

	while (fd >= 0 && len > 0) {
		size_t n = strcspn(rel, "/");
		char name[SQFS_NAME_MAX + 1];
		int next;

		if (n > SQFS_NAME_MAX || n > len) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(name, rel, n);
		name[n] = '\0';
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		rel += n;
		len -= n;
		if (len > 0) {
			rel++;
			len--;
		}
	}
	return fd;
}

/* If the inode was extracted before in this run, link name to that copy: 1 if so, 0 if not. */
static int link_earlier_copy(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode)
{
	const char *first = inomap_get(&ex->links, inode->ino);
	const char *base;
	int first_dfd;

	if (!first)
		return 0;
	base = strrchr(first, '/');
	base = base ? base + 1 : first;
	first_dfd = open_extracted_dir(ex, first, (size_t)(base - first > 0 ? base - first - 1 : 0));
	if (first_dfd < 0 || linkat(first_dfd, base, dfd, name, 0) < 0)
		fail(ex, "cannot link to /%s: %s", first, strerror(errno));
	if (first_dfd >= 0)
		close(first_dfd);
	return 1;
}

/* Remember where a hard-linked inode went, as a path relative to DIR. */
static void remember_copy(struct extractor *ex, const struct qs_inode *inode)
{
	char *rel;

	if (inode->nlink < 2 || inomap_get(&ex->links, inode->ino))
		return;
	rel = strdup(ex->path.buf + 1);
	if (!rel || inomap_put(&ex->links, inode->ino, rel) < 0) {
		free(rel);
		fail(ex, "out of memory");
	}
}

/* ---- the kinds of entry ------------------------------------------------ */

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Copy the file's blocks to fd, leaving holes where the image has sparse blocks. */
static int copy_contents(struct extractor *ex, int fd, const struct qs_inode *inode)
{
	uint64_t nblocks = (inode->size + ex->block_size - 1) / ex->block_size;
	struct qs_file *file;
	int rc = 0;

	if (qs_file_open(ex->img, inode, &file) < 0) {
		fail(ex, "%s", qs_last_error());
		return -1;
	}
	for (uint64_t i = 0; i < nblocks && rc == 0; i++) {
		struct qs_block *block;
		const void *data;
		size_t size;
		int sparse = qs_file_block_is_sparse(file, i);

		if (sparse > 0)
			continue;
		if (sparse < 0 || qs_file_block(file, i, &block, &data, &size) < 0) {
			fail(ex, "%s", qs_last_error());
			rc = -1;
			break;
		}
		if (pwrite_all(fd, data, size, i * ex->block_size) < 0) {
			fail(ex, "cannot write: %s", strerror(errno));
			rc = -1;
		}
		qs_block_release(ex->img, block);
	}
	if (rc == 0 && ftruncate(fd, (off_t)inode->size) < 0) {
		fail(ex, "cannot set size: %s", strerror(errno));
		rc = -1;
	}
	qs_file_close(file);
	return rc;
}

static void make_file(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0) {
		fail(ex, "cannot create: %s", strerror(errno));
		return;
	}
	if (copy_contents(ex, fd, inode) == 0) {
		restore_fd(ex, fd, dfd, name, inode);
		remember_copy(ex, inode);
	}
	if (close(fd) < 0)
		fail(ex, "cannot write: %s", strerror(errno));
}

static void make_symlink(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode)
{
	if (qs_readlink(ex->img, inode, ex->target, QS_SYMLINK_MAX + 1) < 0) {
		fail(ex, "%s", qs_last_error());
		return;
	}
	if (symlinkat(ex->target, dfd, name) < 0) {
		fail(ex, "cannot create symbolic link: %s", strerror(errno));
		return;
	}
	restore_at(ex, dfd, name, inode);
	remember_copy(ex, inode);
}

static void make_node(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode)
{
	dev_t dev = 0;

	if (inode->type == QS_BLKDEV || inode->type == QS_CHRDEV) {
		if (!ex->as_root) {
			cli_error(ex->image, ex->path.buf, "skipped: only root can create device nodes");
			return;
		}
		dev = makedev(cli_dev_major(inode->rdev), cli_dev_minor(inode->rdev));
	}
	if (mknodat(dfd, name, (inode->mode & S_IFMT) | (inode->mode & 0777), dev) < 0) {
		fail(ex, "cannot create %s: %s", cli_type_name(inode->type), strerror(errno));
		return;
	}
	restore_at(ex, dfd, name, inode);
	remember_copy(ex, inode);
}

static void extract_entry(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode,
			  unsigned depth);

/* Create (or reuse) directory 'name' in dfd and open it, refusing symlinks. */
/*
 * Open directory 'name', creating it if missing; *created says which.  A
 * directory that was already there keeps its owner, mode and times (its
 * mtime moves only as entries are added to it): like
 * unsquashfs without -f, extract never changes what it did not write.
 */
static int open_new_dir(struct extractor *ex, int dfd, const char *name, bool *created)
{
	int fd;

	*created = mkdirat(dfd, name, 0700) == 0;
	if (!*created && errno != EEXIST) {
		fail(ex, "cannot create directory: %s", strerror(errno));
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP) && ex->force && unlinkat(dfd, name, 0) == 0) {
		*created = mkdirat(dfd, name, 0700) == 0;
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		fail(ex, "cannot open directory: %s", strerror(errno));
	return fd;
}

/* Enter a directory inode: once per run, to a bounded depth. */
static bool may_enter(struct extractor *ex, const struct qs_inode *dir, unsigned depth)
{
	if (depth > CLI_DEPTH_MAX) {
		fail(ex, "directories nested deeper than %d", CLI_DEPTH_MAX);
		return false;
	}
	if (inomap_get(&ex->visited, dir->ino)) {
		fail(ex, "directory appears twice in the tree (a loop?)");
		return false;
	}
	if (inomap_put(&ex->visited, dir->ino, ex) < 0) {
		fail(ex, "out of memory");
		return false;
	}
	return true;
}

static void extract_contents(struct extractor *ex, int fd, const struct qs_inode *dir, unsigned depth)
{
	struct qs_dir_iter it;
	struct qs_dirent ent;
	int err;

	if (qs_dir_open(ex->img, dir, &it) < 0) {
		fail(ex, "%s", qs_last_error());
		return;
	}
	while ((err = qs_dir_next(&it, &ent)) > 0) {
		ssize_t back = cli_path_push(&ex->path, ent.name, ent.name_len);
		struct qs_inode inode;

		if (back < 0) {
			fail(ex, "out of memory");
			return;
		}
		if (!safe_name(ent.name, ent.name_len))
			fail(ex, "refusing an entry with an unsafe name");
		else if (qs_inode_read(ex->img, ent.ref, &inode) < 0)
			fail(ex, "%s", qs_last_error());
		else
			extract_entry(ex, fd, ent.name, &inode, depth);
		cli_path_pop(&ex->path, (size_t)back);
	}
	if (err < 0)
		fail(ex, "%s", qs_last_error());
}

static void make_dir(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode,
		     unsigned depth)
{
	bool created;
	int fd;

	if (!may_enter(ex, inode, depth))
		return;
	fd = open_new_dir(ex, dfd, name, &created);
	if (fd < 0)
		return;
	extract_contents(ex, fd, inode, depth);
	if (created)
		restore_fd(ex, fd, dfd, name, inode);
	close(fd);
}

/*
 * Make room for a new non-directory 'name' in dfd.  Without -f an existing
 * entry is left alone and counted, for one message at the end (a second
 * extract into the same DIR says so once, not once per file); with -f it is
 * removed (a symlink itself, never what it points to) unless it is a
 * directory.
 */
static bool clear_way(struct extractor *ex, int dfd, const char *name)
{
	struct stat st;

	if (!ex->force) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return true;
		if (ex->existing++ == 0)
			ex->first_existing = strdup(ex->path.buf);
		ex->status = CLI_EXIT_ERROR;
		return false;
	}
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return true;
	if (errno == EISDIR)
		fail(ex, "a directory is in the way");
	else
		fail(ex, "cannot replace: %s", strerror(errno));
	return false;
}

static void extract_entry(struct extractor *ex, int dfd, const char *name, const struct qs_inode *inode,
			  unsigned depth)
{
	if (inode->type != QS_DIR && !clear_way(ex, dfd, name))
		return;
	if (inode->type != QS_DIR && inode->nlink > 1 && link_earlier_copy(ex, dfd, name, inode))
		return;
	switch (inode->type) {
	case QS_DIR:
		make_dir(ex, dfd, name, inode, depth + 1);
		break;
	case QS_FILE:
		make_file(ex, dfd, name, inode);
		break;
	case QS_SYMLINK:
		make_symlink(ex, dfd, name, inode);
		break;
	case QS_BLKDEV: case QS_CHRDEV: case QS_FIFO: case QS_SOCKET:
		make_node(ex, dfd, name, inode);
		break;
	}
}

/*
 * Extract 'rest' (a path below directory 'dir', which is open as fd): the
 * directories on the way are created with their own metadata, as
 * unsquashfs does, but hold only the one entry on the way.
 */
static void extract_along(struct extractor *ex, int fd, const struct qs_inode *dir, const char *rest,
			  unsigned depth)
{
	struct qs_inode child;
	char name[SQFS_NAME_MAX + 1];
	size_t n;
	ssize_t back;

	/* "./etc//passwd" means "etc/passwd". */
	while (*rest == '/' || (rest[0] == '.' && (rest[1] == '/' || rest[1] == '\0')))
		rest++;
	if (*rest == '\0') {
		extract_contents(ex, fd, dir, depth);
		return;
	}
	n = strcspn(rest, "/");
	if (n > SQFS_NAME_MAX) {
		fail(ex, "name too long in the path to extract");
		return;
	}
	memcpy(name, rest, n);
	name[n] = '\0';
	back = cli_path_push(&ex->path, name, n);
	if (back < 0) {
		fail(ex, "out of memory");
		return;
	}
	rest += n;
	while (*rest == '/' || (rest[0] == '.' && (rest[1] == '/' || rest[1] == '\0')))
		rest++;
	if (!safe_name(name, n)) {
		fail(ex, "refusing an unsafe name in the path to extract");
	} else if (qs_lookup(ex->img, dir, name, n, &child) < 0) {
		fail(ex, "%s", qs_last_error());
	} else if (*rest == '\0') {
		extract_entry(ex, fd, name, &child, depth);
	} else if (child.type != QS_DIR) {
		fail(ex, "not a directory");
	} else if (may_enter(ex, &child, depth + 1)) {
		bool created;
		int cfd = open_new_dir(ex, fd, name, &created);

		if (cfd >= 0) {
			extract_along(ex, cfd, &child, rest, depth + 1);
			if (created)
				restore_fd(ex, cfd, fd, name, &child);
			close(cfd);
		}
	}
	cli_path_pop(&ex->path, (size_t)back);
}

/* DIR, created if missing (*created says which); the user named it, so a symlink to a directory is fine. */
static int open_target_dir(const char *dir, bool *created)
{
	*created = mkdir(dir, 0700) == 0;
	if (!*created && errno != EEXIST)
		return -1;
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void free_value(void *p)
{
	free(p);
}

static int extract(struct extractor *ex, const char *dir, const char *path)
{
	struct qs_inode root;
	bool created;

	ex->block_size = qs_image_info(ex->img)->block_size;
	ex->as_root = geteuid() == 0;
	ex->root_fd = open_target_dir(dir, &created);
	if (ex->root_fd < 0) {
		fprintf(stderr, "quash: %s: %s\n", dir, strerror(errno));
		return CLI_EXIT_ERROR;
	}
	if (cli_path_set_image(&ex->path, "/") < 0 || qs_inode_root(ex->img, &root) < 0) {
		fail(ex, "%s", qs_last_error());
	} else if (root.type != QS_DIR) {
		fail(ex, "the root inode is not a directory");
	} else if (may_enter(ex, &root, 0)) {
		extract_along(ex, ex->root_fd, &root, path, 0);
		/* A DIR made here stands for the image's root and takes its metadata, like unsquashfs -d. */
		cli_path_set_image(&ex->path, "/");
		if (created)
			restore_fd(ex, ex->root_fd, AT_FDCWD, dir, &root);
	}
	close(ex->root_fd);
	if (ex->existing)
		cli_error(ex->image, NULL, "%llu entr%s already in %s left alone (the first: %s); use -f to overwrite",
			  ex->existing, ex->existing == 1 ? "y" : "ies", dir,
			  ex->first_existing ? ex->first_existing : "?");
	return ex->status;
}

static int extract_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "force", no_argument, NULL, 'f' },
		CLI_COMMON_LONGOPTS,
		{ 0 }
	};
	struct cli_common co = { .cmd = &cmd_extract };
	struct extractor ex = { 0 };
	const char *dir = NULL;
	int opt, st;

	while ((opt = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS "C:f", longopts, NULL)) != -1) {
		if (opt == 'C') {
			dir = optarg;
			continue;
		}
		if (opt == 'f') {
			ex.force = true;
			continue;
		}
		st = cli_common_option(&co, opt, optarg);
		if (st != CLI_CONTINUE)
			return st;
	}
	if (argc - optind < 1 || argc - optind > 2)
		return cli_usage(&cmd_extract, argc == optind ? "missing IMAGE" : "too many arguments");
	if (!dir)
		return cli_usage(&cmd_extract, "missing -C DIR");
	ex.image = argv[optind];
	ex.target = malloc(QS_SYMLINK_MAX + 1);
	if (!ex.target) {
		cli_error(ex.image, NULL, "out of memory");
		return CLI_EXIT_ERROR;
	}
	/* Modes come from the image (restored_mode()), not from the umask. */
	ex.umask = umask(0);
	st = cli_open_image(&co, ex.image, &ex.img);
	if (st == CLI_EXIT_OK) {
		st = extract(&ex, dir, argc - optind == 2 ? argv[optind + 1] : "/");
		qs_image_close(ex.img);
	}
	inomap_free(&ex.visited, NULL);
	inomap_free(&ex.links, free_value);
	cli_path_free(&ex.path);
	free(ex.target);
	free(ex.first_existing);
	return st;
}

const struct cli_command cmd_extract = {
	.name = "extract",
	.usage = "quash extract [-f] [--offset N] IMAGE [PATH] -C DIR",
	.summary = "recreate an image's files, or those below PATH, in a directory",
	.help =
		"Recreates the tree of IMAGE (or only PATH and what is below it, with the\n"
		"directories on the way) inside DIR, which is created if missing and stands for\n"
		"the image's root, as with unsquashfs -d DIR: contents, modes, modification times\n"
		"(of directories and symbolic links too), symbolic links, hard links, fifos,\n"
		"sockets and user.* xattrs; when run as root also owners, device nodes and\n"
		"trusted.* and security.* xattrs.  Run as another user, extract (like unsquashfs\n"
		"and tar) drops setuid and setgid bits, applies the umask to regular files, and\n"
		"skips device nodes with a message.  Sparse files are written with holes.\n"
		"\n"
		"Nothing is ever written outside DIR: names with '/' and the names '.' and '..'\n"
		"are refused, and no symbolic link is followed while writing.  Entries that\n"
		"already exist in DIR are left alone and counted in one message (exit status 1)\n"
		"unless -f is given; a directory that already exists (DIR itself included)\n"
		"keeps its owner and mode.  A problem with one entry is reported and the rest is\n"
		"still extracted; the exit status is then 1.\n"
		"\n"
		"Options:\n"
		"  -C, --directory DIR   where to extract (required)\n"
		"  -f, --force           replace files, links and nodes already in DIR (a symbolic\n"
		"                        link is replaced, never followed; directories stay)\n"
		CLI_COMMON_HELP
		"\n"
		CLI_EXIT_STATUS_HELP
		"\n"
		"Examples:\n"
		"  quash extract image.sqfs -C rootfs\n"
		"  quash extract image.sqfs /etc -C /tmp/etc-copy\n",
	.run = extract_main,
};
