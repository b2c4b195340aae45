/*
 * pseudo.c - mksquashfs's pseudo files: entries the image gets that no
 * source holds, given as -p "DEFINITION" or one per line in a -pf FILE.
 *
 *   NAME d MODE UID GID                 a directory
 *   NAME m MODE UID GID                 change an entry that is there
 *   NAME b|c MODE UID GID MAJOR MINOR   a block or character device
 *   NAME f MODE UID GID COMMAND         a file holding COMMAND's output (sh -c)
 *   NAME s MODE UID GID TARGET          a symbolic link
 *   NAME i MODE UID GID s|f             a socket or a fifo
 *   NAME L TARGET                       a hard link to the entry TARGET of the image
 *   NAME l TARGET                       the same (mksquashfs 4.5 takes TARGET from the host)
 *
 * An upper-case type (D, M, B, C, F, S, I) takes a TIME in seconds after
 * the type.  NAME is a path from the image's root; it may be written in
 * double quotes, and a backslash escapes the next character.  UID and GID
 * are numbers or names.  The directories on NAME's way must exist, from a
 * source or an earlier definition, unless -pd gives the metadata to create
 * them with.  Definitions apply after the sources are read, in order.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pseudo.h"
#include "base/util.h"

/* Longest line of a -pf file, and so of one definition. */
#define PSEUDO_LINE_MAX 65536

struct pseudo_ctx {
	struct pack_tree *tree;
	const struct pseudo_options *opt;
	struct spool *spool;
	const char *where;          /* "-p" or "FILE:LINE", for messages */
};

__attribute__((format(printf, 2, 3)))
static int bad(const struct pseudo_ctx *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pack_error("pseudo file %s: %s", c->where, msg);
	return -EINVAL;
}

/* The next word of *s into out (quotes and backslashes undone); false at the end. */
static bool next_word(const char **s, char *out, size_t cap)
{
	const char *p = *s;
	size_t n = 0;
	bool quoted = false;

	while (isspace((unsigned char)*p))
		p++;
	if (!*p)
		return false;
	for (; *p && (quoted || !isspace((unsigned char)*p)); p++) {
		if (*p == '"') {
			quoted = !quoted;
			continue;
		}
		if (*p == '\\' && p[1])
			p++;
		if (n + 1 < cap)
			out[n++] = *p;
	}
	out[n] = '\0';
	*s = p;
	return true;
}

static bool parse_u32(const char *s, int base, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || end == s || *end || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* NAME's components, without leading, repeated or trailing slashes; "." and ".." refused. */
static int clean_name(const struct pseudo_ctx *c, const char *name, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *p = name; *p;) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return bad(c, "%s: '.' and '..' are not allowed in a name", name);
		if (n + len + 2 > cap)
			return bad(c, "%s: name too long", name);
		if (n)
			out[n++] = '/';
		memcpy(out + n, p, len);
		n += len;
		p += len;
	}
	out[n] = '\0';
	if (!n)
		return bad(c, "the root cannot be defined (use -root-mode and the like)");
	return 0;
}

/* The directory that holds path's last component; created on the way only with -pd. */
static struct pack_inode *parent_of(const struct pseudo_ctx *c, const char *path, const char **leaf)
{
	const char *slash = strrchr(path, '/');
	struct pack_inode *dir;
	size_t leaf_len;

	*leaf = slash ? slash + 1 : path;
	if (!slash)
		return c->tree->root;
	if (c->opt->default_dir)
		return tree_walk_parent(c->tree, path, c->opt->default_dir, leaf, &leaf_len);
	{
		char parent[PSEUDO_LINE_MAX];

		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		dir = tree_find_path(c->tree, parent);
		if (!dir || !tree_is_dir(dir)) {
			bad(c, "%s: directory %s is not in the image (define it first, or give -pd)", path, parent);
			return NULL;
		}
	}
	return dir;
}

/* COMMAND's standard output, into the spool as the file's contents. */
static int run_command(const struct pseudo_ctx *c, const char *name, const char *command, struct pack_inode *inode)
{
	struct spool *sp = c->spool;
	uint64_t base, size = 0;
	int p[2], status, err;
	bool said = false;          /* by spool_write() */
	char buf[65536];
	ssize_t n;
	pid_t pid;

	err = spool_open(sp);
	if (err)
		return err;
	if (pipe2(p, O_CLOEXEC) < 0)
		return bad(c, "cannot run '%s': %s", command, strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return bad(c, "cannot run '%s': %s", command, strerror(errno));
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", command, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	base = sp->end;
	while ((n = read(p[0], buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if ((err = spool_write(sp, buf, (size_t)n, base + size)) != 0) {
			said = true;
			break;
		}
		size += (uint64_t)n;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (err)
		return said ? err : bad(c, "'%s': %s", command, strerror(-err));
	/*
	 * As mksquashfs 4.5.1 does ("Failed to read file NAME, creating empty
	 * file"): a warning and an empty file, not a failed pack; its output
	 * is dropped with it.  -exit-on-error makes the warning fatal.
	 */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		pack_warn("pseudo file %s: '%s' failed (exit status %d); %s is an empty file, as mksquashfs makes it",
			  c->where, command, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), name);
		size = 0;
	}
	if (!scan_size_fits(size, c->opt->block_size))
		return bad(c, "'%s': output too large for this block size", command);
	sp->end = base + size;
	inode->u.file.content.spool_offset = base;
	inode->u.file.size = size;
	return 0;
}

/* NAME l|L TARGET: a hard link at 'path' to the entry TARGET of the image. */
static int define_link(struct pseudo_ctx *c, const char *name, const char *path, char type, const char *rest)
{
	char word[PSEUDO_LINE_MAX];
	struct pack_inode *dir, *existing;
	const char *leaf;
	int err;

	if (!next_word(&rest, word, sizeof(word)))
		return bad(c, "%s: %c needs the entry to link to", name, type);
	err = clean_name(c, word, word, sizeof(word));
	if (err)
		return err;
	existing = tree_find_path(c->tree, word);
	if (!existing || tree_is_dir(existing))
		return bad(c, "%s: %c: %s is not a file in the image", name, type, word);
	dir = parent_of(c, path, &leaf);
	return dir ? tree_link(c->tree, dir, leaf, strlen(leaf), existing) : -EINVAL;
}

static int define(struct pseudo_ctx *c, const char *line)
{
	char name[PSEUDO_LINE_MAX], path[PSEUDO_LINE_MAX], word[PSEUDO_LINE_MAX];
	uint32_t mode, uid, gid, mtime = 0, major = 0, minor = 0;
	const char *rest = line, *leaf;
	struct pack_inode *dir, *inode, *existing;
	char type;
	bool timed;
	int err;

	if (!next_word(&rest, name, sizeof(name)))
		return 0;                               /* an empty line */
	if (name[0] == '#')
		return 0;                               /* a comment */
	if (!next_word(&rest, word, sizeof(word)) || strlen(word) != 1)
		return bad(c, "'%s': expected NAME TYPE ...", line);
	type = word[0];
	err = clean_name(c, name, path, sizeof(path));
	if (err)
		return err;
	if (type == 'l' || type == 'L')
		return define_link(c, name, path, type, rest);
	timed = isupper((unsigned char)type);
	type = (char)tolower((unsigned char)type);
	if (!strchr("dmbcfsi", type))
		return bad(c, "%s: unknown type '%c' (d, m, b, c, f, s, i, l, L; upper case with a time)", name,
			   word[0]);
	if (timed && (!next_word(&rest, word, sizeof(word)) || !parse_u32(word, 10, &mtime)))
		return bad(c, "%s: %c needs a time in seconds", name, word[0]);
	if (!next_word(&rest, word, sizeof(word)) || !parse_u32(word, 8, &mode) || mode > 07777)
		return bad(c, "%s: bad mode (octal, at most 7777)", name);
	if (!next_word(&rest, word, sizeof(word)) || !pack_parse_owner(word, false, &uid))
		return bad(c, "%s: bad uid or no such user", name);
	if (!next_word(&rest, word, sizeof(word)) || !pack_parse_owner(word, true, &gid))
		return bad(c, "%s: bad gid or no such group", name);
	if (!timed)
		mtime = c->opt->default_time;

	if (type == 'm') {
		inode = tree_find_path(c->tree, path);
		if (!inode)
			return bad(c, "%s: m: no such entry in the image", name);
		inode->mode = (inode->mode & 0170000) | mode;
		if (timed)
			inode->mtime = mtime;
		return tree_set_owner(c->tree, inode, uid, gid);
	}
	switch (type) {
	case 'd': inode = tree_inode_new(c->tree, S_IFDIR | mode); break;
	case 'b': inode = tree_inode_new(c->tree, S_IFBLK | mode); break;
	case 'c': inode = tree_inode_new(c->tree, S_IFCHR | mode); break;
	case 'f': inode = tree_inode_new(c->tree, S_IFREG | mode); break;
	case 's': inode = tree_inode_new(c->tree, S_IFLNK | mode); break;
	default:
		if (!next_word(&rest, word, sizeof(word)) || (strcmp(word, "s") && strcmp(word, "f")))
			return bad(c, "%s: i needs s (socket) or f (fifo)", name);
		inode = tree_inode_new(c->tree, (word[0] == 's' ? S_IFSOCK : S_IFIFO) | mode);
		break;
	}
	if (!inode)
		return -ENOMEM;
	inode->mtime = mtime;
	inode->refs = 1;
	err = tree_set_owner(c->tree, inode, uid, gid);
	if (err) {
		/* said */
	} else if (type == 'b' || type == 'c') {
		if (!next_word(&rest, word, sizeof(word)) || !parse_u32(word, 10, &major) || major > 0xfff ||
		    !next_word(&rest, word, sizeof(word)) || !parse_u32(word, 10, &minor) || minor > 0xfffff)
			err = bad(c, "%s: a device needs MAJOR (0-4095) and MINOR (0-1048575)", name);
		tree_set_rdev(inode, (minor & 0xff) | (major & 0xfff) << 8 | (minor & ~0xffu) << 12);
	} else if (type == 's') {
		/* An empty target ("") is no symlink: unsquashfs and the kernel's readers refuse it. */
		if (!next_word(&rest, word, sizeof(word)) || !word[0])
			err = bad(c, "%s: s needs a target", name);
		else if (!(inode->u.symlink.target = strdup(word)))
			err = -ENOMEM;
	} else if (type == 'f') {
		while (isspace((unsigned char)*rest))
			rest++;
		err = *rest ? run_command(c, name, rest, inode) : bad(c, "%s: f needs a command", name);
	}
	if (!err) {
		dir = parent_of(c, path, &leaf);
		existing = dir ? tree_find_path(c->tree, path) : NULL;
		if (!dir)
			err = -EINVAL;
		else if (existing && !(type == 'd' && tree_is_dir(existing)))
			err = bad(c, "%s: already in the image", name);
	}
	if (err) {
		tree_inode_put(NULL, inode);
		return err;
	}
	inode->refs = 0;
	return tree_insert(c->tree, dir, leaf, strlen(leaf), inode) ? 0 : -ENOMEM;
}

static int define_file(struct pseudo_ctx *c, const char *file)
{
	char *line = malloc(PSEUDO_LINE_MAX), where[PSEUDO_LINE_MAX + 32];
	FILE *f = strcmp(file, "-") ? fopen(file, "re") : stdin;
	unsigned lineno = 0;
	int err = 0;

	if (!line || !f) {
		err = -errno;
		pack_error("pseudo file %s: %s", file, strerror(errno));
		free(line);
		return err ? err : -ENOMEM;
	}
	while (!err && fgets(line, PSEUDO_LINE_MAX, f)) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		snprintf(where, sizeof(where), "%s:%u", file, lineno);
		c->where = where;
		err = define(c, line);
	}
	if (f != stdin)
		fclose(f);
	free(line);
	return err;
}

int pseudo_apply(struct pack_tree *t, const struct pseudo_options *o, struct spool *spool)
{
	struct pseudo_ctx c = { .tree = t, .opt = o, .spool = spool };
	int err = 0;

	for (size_t i = 0; !err && i < o->count; i++) {
		if (o->defs[i].is_file) {
			err = define_file(&c, o->defs[i].text);
		} else {
			c.where = "-p";
			err = define(&c, o->defs[i].text);
		}
	}
	return err;
}
