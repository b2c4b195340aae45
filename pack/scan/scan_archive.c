/*
 * scan_archive.c - an archive (tar, cpio, zip; compressed or not) into
 * the tree, read with libarchive.
 *
 * Archives come from strangers.  Every path is made relative and stripped
 * of "." and ".." components before it touches the tree, so nothing lands
 * above the image root; each such repair is reported.  File contents are
 * copied to the spool (holes stay holes), so the data phase reads archive
 * and directory sources alike and a tarball packs to the same image as
 * the directory it was made from.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <locale.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_loader.h"
#include "exclude.h"
#include "scan.h"
#include "tree/spool.h"
#include "base/util.h"

#define ARCHIVE_READ_BLOCK (64u << 10)
#define ARCHIVE_XATTRS_MAX 1024u        /* per entry */
/* libarchive's warnings shown for one archive: a hostile one can earn one an entry. */
#define ARCHIVE_WARNINGS_MAX 10u
/*
 * Owner names looked up once each (scan_options.owner_names): a tar holds
 * few, and every getpwnam() reads /etc/passwd again, or asks NSS's
 * daemons.  A hostile tar's thousand names past these are looked up each
 * time they are met: slower, never wrong, and the memory stays bounded.
 */
#define OWNER_NAMES_MAX 64u

struct owner_name {
	char *name;
	int64_t id;                     /* -1: not known on this system */
};

struct owner_names {
	struct owner_name list[OWNER_NAMES_MAX];
	unsigned count;
	bool group;
};

struct archive_scan {
	struct pack_tree *tree;
	const struct scan_options *opt;
	const char *name;               /* for messages */
	struct archive *a;
	uint64_t warnings;
	struct owner_names users, groups;
};

/*
 * Make an archive path safe: drop leading '/', "." and ".." components,
 * and repeated slashes.  Writes into 'out' (as large as path plus one);
 * returns true if anything above the root had to be removed.
 */
static bool clean_path(const char *path, char *out)
{
	bool repaired = path[0] == '/';
	size_t len = 0;

	while (*path) {
		const char *end = strchr(path, '/');
		size_t n = end ? (size_t)(end - path) : strlen(path);

		if (n == 2 && path[0] == '.' && path[1] == '.')
			repaired = true;
		else if (n > 0 && !(n == 1 && path[0] == '.')) {
			if (len)
				out[len++] = '/';
			memcpy(out + len, path, n);
			len += n;
		}
		path += n;
		while (*path == '/')
			path++;
	}
	out[len] = '\0';
	return repaired;
}

static int read_xattrs(struct archive_scan *s, struct archive_entry *e, struct pack_xattrs *x)
{
	const char *name;
	const void *value;
	size_t size;

	if (!s->opt->xattrs || archive_entry_xattr_reset(e) == 0)
		return 0;
	while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
		if (x->count >= ARCHIVE_XATTRS_MAX || size > PACK_XATTR_VALUE_MAX || strlen(name) > 255) {
			pack_warn("%s: %s: oversized xattr %s dropped", s->name,
				  archive_entry_pathname(e), name);
			continue;
		}
		if (tree_xattrs_add(x, name, value, size))
			return -ENOMEM;
	}
	return 0;
}

static int archive_fail(struct archive_scan *s, const char *what)
{
	const char *msg = archive_error_string(s->a);

	pack_error("%s: %s%s%s", s->name, what, msg ? ": " : "", msg ? msg : "");
	return -EIO;
}

/*
 * Copy the entry's data to the spool; holes are skipped, so they read back as
 * zeros.  Only a sparse entry may end in a hole: data that stops short of
 * the size the header declares (a zip's stored entry that claims 4 GiB and
 * holds 5 bytes) is refused, never padded with zeros.
 */
static int spool_data(struct archive_scan *s, struct pack_inode *inode, int64_t size, const char *entry,
		      bool sparse)
{
	struct spool *sp = s->opt->spool;
	uint64_t base, have = 0;
	int err = spool_open(sp);

	if (err)
		return err;
	/* Refused before a byte is spooled: a few KiB of sparse tar can declare any size. */
	if (!scan_size_fits((uint64_t)size, s->opt->block_size)) {
		pack_error("%s: %s: %llu bytes is more than a squashfs file of %u-byte blocks can hold", s->name,
			   entry, (unsigned long long)size, s->opt->block_size);
		return -EFBIG;
	}
	base = sp->end;
	inode->u.file.content.spool_offset = base;
	inode->u.file.size = (uint64_t)size;
	for (;;) {
		const void *buf;
		size_t len;
		int64_t off;
		int r = archive_read_data_block(s->a, &buf, &len, &off);

		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			const char *msg = archive_error_string(s->a);

			pack_error("%s: %s: truncated or corrupt archive%s%s", s->name, entry, msg ? ": " : "",
				   msg ? msg : "");
			return -EIO;
		}
		if (off < 0 || (uint64_t)off + len > (uint64_t)size) {
			pack_error("%s: %s: data beyond the entry's size", s->name, entry);
			return -EIO;
		}
		if (len == 0)       /* libarchive may give an empty block, and NULL with it */
			continue;
		err = spool_write(sp, buf, len, base + (uint64_t)off);
		if (err)
			return err;
		if ((uint64_t)off + len > have)
			have = (uint64_t)off + len;
	}
	if (!sparse && have < (uint64_t)size) {
		pack_error("%s: %s: the archive holds %llu of the entry's %llu bytes", s->name, entry,
			   (unsigned long long)have, (unsigned long long)size);
		return -EIO;
	}
	sp->end = base + (uint64_t)size;    /* a hole at its end: spool_flush() sets the size */
	return 0;
}

/* A separate inode like 'from' (not a directory): its metadata, xattrs and spooled data; NULL if out of memory. */
static struct pack_inode *clone_inode(struct pack_tree *t, const struct pack_inode *from)
{
	struct pack_inode *inode = tree_inode_new(t, from->mode);
	bool ok = inode != NULL;

	if (!ok)
		return NULL;
	inode->uid = from->uid;
	inode->gid = from->gid;
	inode->mtime = from->mtime;
	if (!tree_is_reg(from) && !tree_is_dir(from) && !tree_is_symlink(from))
		tree_set_rdev(inode, from->u.dev.rdev);
	for (uint32_t i = 0; ok && i < tree_xattrs(from)->count; i++)
		ok = tree_xattr_add(inode, tree_xattrs(from)->list[i].name, tree_xattrs(from)->list[i].value,
				    tree_xattrs(from)->list[i].len) == 0;
	if (tree_is_reg(from)) {
		inode->u.file.content.spool_offset = from->u.file.content.spool_offset;
		inode->u.file.size = from->u.file.size;
	} else if (tree_is_symlink(from)) {
		ok = ok && (inode->u.symlink.target = strdup(from->u.symlink.target)) != NULL;
	}
	if (!ok) {
		inode->refs = 1;
		tree_inode_put(NULL, inode);
		return NULL;
	}
	return inode;
}

static int add_hardlink(struct archive_scan *s, struct archive_entry *e, const char *path,
			struct pack_inode *dir, const char *leaf, size_t leaf_len)
{
	const char *target = archive_entry_hardlink(e);
	struct pack_inode *inode;
	char *tclean = malloc(strlen(target) + 1);
	int err;

	if (!tclean)
		return -ENOMEM;
	clean_path(target, tclean);
	inode = tclean[0] ? tree_find_path(s->tree, tclean) : NULL;
	free(tclean);
	if (!inode || tree_is_dir(inode)) {
		pack_warn("%s: %s: hard link to missing %s (skipped)", s->name, path, target);
		return 0;
	}
	if (s->opt->no_hardlinks) {
		/* mksquashfs -no-hardlinks: a file of its own, with the target's metadata and data. */
		inode = clone_inode(s->tree, inode);
		if (!inode || !tree_insert(s->tree, dir, leaf, leaf_len, inode))
			return -ENOMEM;
		err = 0;
	} else {
		err = tree_link(s->tree, dir, leaf, leaf_len, inode);
	}
	/* Some formats (cpio, pax) carry the data with a link rather than the first name. */
	if (!err && tree_is_reg(inode) && archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
		err = spool_data(s, inode, archive_entry_size(e), path, archive_entry_sparse_count(e) > 0);
	return err;
}

/* The id this system's user (or group) database gives 'name', else -1. */
static int64_t owner_by_name(struct owner_names *c, const char *name)
{
	int64_t id = -1;

	for (unsigned i = 0; i < c->count; i++)
		if (strcmp(c->list[i].name, name) == 0)
			return c->list[i].id;
	for (;;) {
		errno = 0;
		if (c->group) {
			struct group *g = getgrnam(name);

			if (g)
				id = g->gr_gid;
		} else {
			struct passwd *pw = getpwnam(name);

			if (pw)
				id = pw->pw_uid;
		}
		if (id >= 0 || errno != EINTR)
			break;
	}
	if (c->count < OWNER_NAMES_MAX && (c->list[c->count].name = strdup(name)))
		c->list[c->count++].id = id;
	return id;
}

static void owner_names_free(struct owner_names *c)
{
	for (unsigned i = 0; i < c->count; i++)
		free(c->list[i].name);
	c->count = 0;
}

/*
 * Entry 'e''s owner: its numbers, or with owner_names, what its user and
 * group names are on this system where it knows them (as mksquashfs -tar
 * and GNU tar extracting as root do; an empty name is no name).
 */
static void entry_owner(struct archive_scan *s, struct archive_entry *e, uint32_t *uid, uint32_t *gid)
{
	const char *uname = s->opt->owner_names ? archive_entry_uname(e) : NULL;
	const char *gname = s->opt->owner_names ? archive_entry_gname(e) : NULL;
	int64_t id;

	*uid = (uint32_t)archive_entry_uid(e);
	*gid = (uint32_t)archive_entry_gid(e);
	if (uname && *uname && (id = owner_by_name(&s->users, uname)) >= 0)
		*uid = (uint32_t)id;
	if (gname && *gname && (id = owner_by_name(&s->groups, gname)) >= 0)
		*gid = (uint32_t)id;
}

/*
 * The inode of entry 'e', to be put at 'leaf' (NULL: the root's metadata);
 * a regular file keeps that name (tree_file_new()).
 */
static int make_inode(struct archive_scan *s, struct archive_entry *e, const char *leaf, size_t leaf_len,
		      struct pack_inode **out)
{
	uint32_t mode = archive_entry_mode(e);
	struct pack_inode *inode;
	uint32_t uid, gid;
	int err = 0;

	switch (mode & AE_IFMT) {
	case AE_IFREG: case AE_IFDIR: case AE_IFLNK: case AE_IFCHR:
	case AE_IFBLK: case AE_IFIFO: case AE_IFSOCK:
		break;
	default:
		pack_warn("%s: %s: unknown file type (skipped)", s->name, archive_entry_pathname(e));
		*out = NULL;
		return 0;
	}
	inode = (mode & AE_IFMT) == AE_IFREG && leaf ? tree_file_new(s->tree, mode, leaf, leaf_len)
						      : tree_inode_new(s->tree, mode);
	if (!inode)
		return -ENOMEM;
	inode->mtime = tree_time(archive_entry_mtime(e));
	entry_owner(s, e, &uid, &gid);
	err = tree_set_owner(s->tree, inode, uid, gid);
	if (err) {
		/* said, or out of memory */
	} else if ((mode & AE_IFMT) == AE_IFLNK) {
		const char *target = archive_entry_symlink(e);

		/* An empty target is no symlink: unsquashfs refuses the image that holds one. */
		if (!target || !*target || strlen(target) > PACK_SYMLINK_MAX) {
			pack_error("%s: %s: %s symlink target", s->name, archive_entry_pathname(e),
				   target && *target ? "too long a" : "no");
			err = -EINVAL;
		} else if (!(inode->u.symlink.target = strdup(target))) {
			err = -ENOMEM;
		}
	} else if ((mode & AE_IFMT) == AE_IFCHR || (mode & AE_IFMT) == AE_IFBLK) {
		uint32_t ma = (uint32_t)archive_entry_rdevmajor(e), mi = (uint32_t)archive_entry_rdevminor(e);

		tree_set_rdev(inode, (mi & 0xff) | (ma & 0xfff) << 8 | (mi & ~0xffu) << 12);
	}
	if (!err) {
		struct pack_xattrs x = { 0 };

		err = read_xattrs(s, e, &x);
		if (!err)
			err = tree_set_xattrs(inode, &x);
		tree_xattrs_free(&x);       /* what read_xattrs() got before failing; empty after the move */
	}
	if (!err && (mode & AE_IFMT) == AE_IFREG) {
		int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;

		if (size < 0) {
			pack_error("%s: %s: bad size", s->name, archive_entry_pathname(e));
			err = -EINVAL;
		} else {
			err = spool_data(s, inode, size, archive_entry_pathname(e), archive_entry_sparse_count(e) > 0);
		}
	}
	if (err) {
		inode->refs = 1;
		tree_inode_put(NULL, inode);
		return err;
	}
	*out = inode;
	return 0;
}

/* squashfs names are at most 256 bytes. */
static bool name_ok(struct archive_scan *s, const char *path)
{
	for (const char *p = path; *p;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n > 256) {
			pack_warn("%s: %s: name longer than 256 bytes (skipped)", s->name, path);
			return false;
		}
		p += n + (slash != NULL);
	}
	return true;
}

/* Directories above the last component of a cleaned path. */
static size_t path_depth(const char *clean)
{
	size_t n = 0;

	for (; *clean; clean++)
		n += *clean == '/';
	return n;
}

static int add_entry(struct archive_scan *s, struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e);
	struct pack_meta implicit = {
		.mode = 0040000 | s->opt->implicit_mode, .uid = s->opt->implicit_uid, .gid = s->opt->implicit_gid,
		.mtime = tree_time(s->opt->implicit_mtime),
	};
	struct pack_inode *dir, *inode;
	const char *leaf;
	size_t leaf_len;
	char *clean;
	int err = 0;

	if (!path) {
		pack_warn("%s: entry without a usable name (skipped)", s->name);
		return 0;
	}
	clean = malloc(strlen(path) + 1);
	if (!clean)
		return -ENOMEM;
	if (clean_path(path, clean))
		pack_warn("%s: %s: stored as /%s, under the image root", s->name, path, clean);
	if (scan_excluded(s->opt, clean) || !name_ok(s, clean))
		goto out;
	if (clean[0] == '\0') {
		/* The archive's "./": metadata for the root itself. */
		if ((archive_entry_mode(e) & AE_IFMT) == AE_IFDIR && !archive_entry_hardlink(e) &&
		    !s->opt->ignore_archive_root) {
			err = make_inode(s, e, NULL, 0, &inode);
			if (!err && inode) {
				inode->refs = 1;
				tree_take_metadata(s->tree->root, inode);
				tree_inode_put(NULL, inode);
			}
		}
		goto out;
	}
	if (path_depth(clean) > PACK_DEPTH_MAX) {
		pack_warn("%s: %.200s...: more than %d directory levels (skipped)", s->name, path, PACK_DEPTH_MAX);
		goto out;
	}
	dir = tree_walk_parent(s->tree, clean, &implicit, &leaf, &leaf_len);
	if (!dir) {
		err = -ENOMEM;
		goto out;
	}
	if (archive_entry_hardlink(e)) {
		err = add_hardlink(s, e, path, dir, leaf, leaf_len);
		goto out;
	}
	err = make_inode(s, e, leaf, leaf_len, &inode);
	if (!err && inode && !tree_insert(s->tree, dir, leaf, leaf_len, inode))
		err = -ENOMEM;
out:
	free(clean);
	return err;
}

int scan_archive(struct pack_tree *t, const char *path, const struct scan_options *o)
{
	struct archive_scan s = { .tree = t, .opt = o, .name = strcmp(path, "-") ? path : "(stdin)",
				  .groups.group = true };
	struct archive_entry *e;
	/* Names are bytes to squashfs; read them as UTF-8, whatever the user's locale. */
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	locale_t old = utf8 ? uselocale(utf8) : (locale_t)0;
	int r, err = 0;

	if (archive_loader_load() < 0) {
		pack_error("%s: %s", s.name, archive_loader_error());
		err = -ENOSYS;
		goto out;
	}
	s.a = archive_read_new();
	if (!s.a) {
		err = -ENOMEM;
		goto out;
	}
	archive_read_support_filter_gzip(s.a);
	archive_read_support_filter_bzip2(s.a);
	archive_read_support_filter_xz(s.a);
	archive_read_support_filter_lzma(s.a);
	archive_read_support_filter_zstd(s.a);
	archive_read_support_filter_lz4(s.a);
	archive_read_support_format_tar(s.a);
	archive_read_support_format_gnutar(s.a);
	archive_read_support_format_cpio(s.a);
	archive_read_support_format_zip(s.a);
	/* mksquashfs -ignore-zeros: a tar's end (two zero blocks) is skipped, and the next tar read on. */
	if (s.opt->ignore_zeros &&
	    archive_read_set_format_option(s.a, "tar", "read_concatenated_archives", "1") != ARCHIVE_OK) {
		err = archive_fail(&s, "cannot read concatenated tars (-ignore-zeros)");
		goto out;
	}
	if (strcmp(path, "-") == 0)
		r = archive_read_open_fd(s.a, STDIN_FILENO, ARCHIVE_READ_BLOCK);
	else
		r = archive_read_open_filename(s.a, path, ARCHIVE_READ_BLOCK);
	if (r != ARCHIVE_OK) {
		err = archive_fail(&s, "cannot read archive");
		goto out;
	}
	for (;;) {
		r = archive_read_next_header(s.a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r == ARCHIVE_WARN) {
			if (++s.warnings <= ARCHIVE_WARNINGS_MAX)
				pack_warn("%s: %s", s.name, archive_error_string(s.a));
		} else if (r != ARCHIVE_OK) {
			err = archive_fail(&s, "truncated or corrupt archive");
			break;
		}
		err = add_entry(&s, e);
		if (err)
			break;
	}
out:
	if (s.warnings > ARCHIVE_WARNINGS_MAX)
		pack_warn("%s: %llu more warnings not shown", s.name,
			  (unsigned long long)(s.warnings - ARCHIVE_WARNINGS_MAX));
	if (s.a)
		archive_read_free(s.a);
	owner_names_free(&s.users);
	owner_names_free(&s.groups);
	if (utf8) {
		uselocale(old);
		freelocale(utf8);
	}
	if (err == -ENOMEM)
		pack_error("%s: out of memory", s.name);
	return err;
}
