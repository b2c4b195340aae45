/*
 * alias.c - aliases of a local catalog: a symlink NAME.sqfs (any
 * image extension) whose target is an image of the same catalog is served
 * as a symlink entry NAME -> the target's name (merge.c merges them).
 *
 * Symlinks in the catalog's directory are anyone's input, so the target is
 * resolved here by hand, one name at a time from the catalog's root:
 * fstatat() and openat() with O_NOFOLLOW on directories already found
 * inside the root, each symlink met read with readlinkat() and its text
 * walked in turn, at most QC_ALIAS_HOPS of them.  ".." above the root, an
 * absolute target that does not start with the root's own path, a loop or
 * a chain too long, and anything but a regular file at the end are
 * refused; nothing is opened but directories below the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_int.h"

/* The directory of key prefix 'dir' ("" or "a/b"), walked with O_NOFOLLOW from the root; -errno. */
static int open_below(int root_fd, const char *dir)
{
	char buf[QC_KEY_MAX + 1], *name, *save = NULL;
	int dfd = dup(root_fd);

	if (dfd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s", dir);
	for (name = strtok_r(buf, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(dfd);
		if (fd < 0)
			return -errno;
		dfd = fd;
	}
	return dfd;
}

const char *qc_alias_inside(const char *root, const char *abs)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1 && root[0] == '/')
		return abs + 1;
	if (strncmp(abs, root, n) != 0 || (abs[n] != '/' && abs[n] != '\0'))
		return NULL;
	return abs + n + (abs[n] == '/');
}

int qc_alias_relative(const char *from, const char *to, char *out, size_t size)
{
	size_t common = 0, len = 0;
	const char *p;

	/* the directories both keys share, whole components only */
	for (size_t i = 0; from[i] && from[i] == to[i]; i++)
		if (from[i] == '/')
			common = i + 1;
	out[0] = '\0';
	for (p = from + common; (p = strchr(p, '/')); p++) {
		if (len + 3 >= size)
			return -ENAMETOOLONG;
		memcpy(out + len, "../", 4);
		len += 3;
	}
	if (len + strlen(to + common) >= size)
		return -ENAMETOOLONG;
	strcpy(out + len, to + common);
	return 0;
}

struct resolve {                    /* one alias's walk from the root */
	char done[QC_KEY_MAX + 1];  /* the directories walked so far, below the root */
	char rest[2 * PATH_MAX + 2];        /* what is left to walk */
	unsigned hops;              /* symlinks followed */
};

/* "..": one directory up, never above the root ('last': nothing follows it).  0 or -errno with *why. */
static int walk_up(struct resolve *r, bool last, const char **why)
{
	char *up = strrchr(r->done, '/');

	if (last) {
		*why = "its target is a directory, not an image";
		return -EISDIR;
	}
	if (!*r->done) {
		*why = "its target leaves the catalog's root";
		return -EXDEV;
	}
	if (up)
		*up = '\0';
	else
		r->done[0] = '\0';
	return 0;
}

/* Directory 'comp' entered.  0 or -errno with *why. */
static int walk_into(struct resolve *r, const char *comp, const char **why)
{
	size_t dl = strlen(r->done);

	if (dl + strlen(comp) + 2 > sizeof(r->done)) {
		*why = "its target's name is too long";
		return -ENAMETOOLONG;
	}
	if (dl)
		r->done[dl++] = '/';
	memcpy(r->done + dl, comp, strlen(comp) + 1);
	return 0;
}

/*
 * Symlink 'comp' of directory 'dfd': its text takes its place in what is
 * left to walk, before 'next' (NULL: it was the last name); an absolute
 * one walks from the root again.  0 or -errno with *why.
 */
static int walk_link(struct resolve *r, int dfd, const char *comp, const char *next, const char *root,
		     const char **why)
{
	char link[PATH_MAX + 1];
	const char *inside;
	ssize_t n;

	if (++r->hops > QC_ALIAS_HOPS) {
		*why = "its target lies beyond more than 8 symlinks (a loop)";
		return -ELOOP;
	}
	n = readlinkat(dfd, comp, link, sizeof(link) - 1);
	if (n <= 0) {
		*why = "its target cannot be read";
		return -EIO;
	}
	link[n] = '\0';
	if (link[0] == '/') {
		if (!(inside = qc_alias_inside(root, link))) {
			*why = "its target is outside the catalog's root";
			return -EXDEV;
		}
		r->done[0] = '\0';
	} else {
		inside = link;
	}
	if (strlen(inside) + (next ? strlen(next) + 1 : 0) >= sizeof(r->rest)) {
		*why = "its target's name is too long";
		return -ENAMETOOLONG;
	}
	if (next)
		memmove(r->rest + strlen(inside) + 1, next, strlen(next) + 1);
	memcpy(r->rest, inside, strlen(inside));
	r->rest[strlen(inside)] = next ? '/' : '\0';
	return 0;
}

int qc_alias_resolve(int root_fd, const char *root, const char *key, char *out, size_t size, const char **why)
{
	struct resolve r = { .hops = 0 };
	const char *slash = strrchr(key, '/');
	int dfd, err = 0;

	*why = "";
	snprintf(r.done, sizeof(r.done), "%.*s", slash ? (int)(slash - key) : 0, key);
	snprintf(r.rest, sizeof(r.rest), "%s", slash ? slash + 1 : key);
	dfd = open_below(root_fd, r.done);
	if (dfd < 0) {
		*why = "its directory is gone";
		return dfd;
	}
	for (;;) {
		char *comp = r.rest, *next = strchr(r.rest, '/');
		bool replaced = false;
		struct stat st;

		if (next)
			*next++ = '\0';
		if (!*comp || strcmp(comp, ".") == 0) {
			if (!next) {
				*why = "its target is a directory, not an image";
				err = -EISDIR;
				break;
			}
			memmove(r.rest, next, strlen(next) + 1);
			continue;
		}
		if (strcmp(comp, "..") == 0) {
			err = walk_up(&r, !next, why);
		} else if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			*why = "its target does not exist";
			err = -ENOENT;
		} else if (S_ISLNK(st.st_mode)) {
			err = walk_link(&r, dfd, comp, next, root, why);
			replaced = true;
		} else if (S_ISDIR(st.st_mode) && next) {
			err = walk_into(&r, comp, why);
		} else if (S_ISREG(st.st_mode) && !next) {
			if ((size_t)snprintf(out, size, "%s%s%s", r.done, *r.done ? "/" : "", comp) >= size) {
				*why = "its target's name is too long";
				err = -ENAMETOOLONG;
			}
			break;
		} else {
			*why = S_ISDIR(st.st_mode) ? "its target is a directory, not an image" :
			       next ? "its target's path goes through a file" : "its target is not a regular file";
			err = S_ISDIR(st.st_mode) ? -EISDIR : -ENOTDIR;
		}
		if (err)
			break;
		if (!replaced)
			memmove(r.rest, next, strlen(next) + 1);    /* next is set: the last name ended the loop */
		/* the directory walked so far, from the root again: ".." and absolute targets move it */
		close(dfd);
		dfd = open_below(root_fd, r.done);
		if (dfd < 0) {
			*why = "its target does not exist";
			return dfd;
		}
	}
	close(dfd);
	return err;
}
