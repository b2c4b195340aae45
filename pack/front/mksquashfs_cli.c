/*
 * mksquashfs_cli.c - mksquashfs's command line, for scripts that call it.
 *
 *   mksquashfs SOURCE... DEST [OPTIONS] [-e PATH...]
 *
 * Linked as mksquashfs (or run as `quash mksquashfs`), quash takes the
 * command line of mksquashfs 4.6 and gives its options the same meaning:
 * the sources nest by name unless there is one directory, fragments hold
 * only files smaller than a block unless -always-use-fragments, -e paths
 * are exact paths from the source's root unless -wildcards.  An option
 * quash cannot honour yet is refused in one line naming it, exit 1: a
 * script that relies on it must not get an image that silently differs.
 * Without -noappend an existing DEST is appended to, as mksquashfs does
 * (append.c): its compressor, block size and settings are kept and the
 * options that would change them are ignored, as mksquashfs ignores them.
 * Options of mksquashfs 4.6 and 4.7 that Debian's 4.5.1 lacks (-default-*,
 * -xattrs-add, -percentage, -uid-gid-offset...) follow their USAGE text.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pack.h"
#include "size.h"
#include "writer.h"
#include "format/squashfs_fs.h"
#include "base/util.h"

#define MKSQ_EXIT_OK    0
#define MKSQ_EXIT_ERROR 1

/* mksquashfs's own defaults, which differ from quash pack's: gzip, 128 KiB blocks. */
#define MKSQ_DEFAULT_COMPRESSOR "gzip"
#define MKSQ_DEFAULT_BLOCK_SIZE (128u << 10)

/* Longest line read from an -ef file. */
#define MKSQ_EXCLUDE_LINE_MAX 4096

/* The mksquashfs version whose command line this is, for -version. */
#define MKSQ_COMPAT_VERSION "4.6"

/* Options taken with the meaning they have in mksquashfs, and nothing to do here. */
static const char *const accepted_noops[] = {
	"-no-recovery",             /* quash writes beside DEST and renames: nothing to recover */
	"-exports",                 /* the default */
	"-no-tailends",             /* the default of this form */
	"-reproducible",            /* 4.5: always so */
	"-not-reproducible",        /* 4.5: permission, not a request: the image is reproducible anyway */
	"-no-pager",                /* 4.7: quash's help is one page, never paged */
	NULL,
};

/*
 * Options that store a part of the image uncompressed, and the superblock
 * flags they set.  As in mksquashfs, -noI covers the directory, export and
 * id tables too, -noF the fragment table, -noX the xattr ids.
 */
static const struct {
	const char *name, *alias;
	uint16_t flags;
} uncompressed_opts[] = {
	{ "-noI", "-noInodeCompression", SQFS_FLAG_UNCOMPRESSED_INODES },
	{ "-noId", "-noIdTableCompression", SQFS_FLAG_UNCOMPRESSED_IDS },
	{ "-noD", "-noDataCompression", SQFS_FLAG_UNCOMPRESSED_DATA },
	{ "-noF", "-noFragmentCompression", SQFS_FLAG_UNCOMPRESSED_FRAGMENTS },
	{ "-noX", "-noXattrCompression", SQFS_FLAG_UNCOMPRESSED_XATTRS },
	{ "-no-compression", NULL, SQFS_FLAG_UNCOMPRESSED_INODES | SQFS_FLAG_UNCOMPRESSED_DATA |
				   SQFS_FLAG_UNCOMPRESSED_FRAGMENTS | SQFS_FLAG_UNCOMPRESSED_XATTRS },
};

#define NO_ACTIONS "not supported: actions are not implemented"

/* Options known to mksquashfs that quash refuses, with how many arguments each takes. */
static const struct {
	const char *name;
	int args;
	const char *why;
} refused[] = {
	{ "-read-queue", 1, NULL },
	{ "-write-queue", 1, NULL },
	{ "-fragment-queue", 1, NULL },
	{ "-single-reader", 0, NULL },
	{ "-log", 1, "not supported" },
	/* 4.6 and 4.7's, named so that a script using one learns why it stops */
	{ "-mem-default", 0, "not supported: without -mem quash's memory follows the blocks in flight, "
			     "with no default figure to print" },
	{ "-action", 1, NO_ACTIONS },
	{ "-log-action", 1, NO_ACTIONS },
	{ "-true-action", 1, NO_ACTIONS },
	{ "-false-action", 1, NO_ACTIONS },
	{ "-action-file", 1, NO_ACTIONS },
	{ "-log-action-file", 1, NO_ACTIONS },
	{ "-true-action-file", 1, NO_ACTIONS },
	{ "-false-action-file", 1, NO_ACTIONS },
	/* 4.7's short names for the action options */
	{ "-a", 1, NO_ACTIONS },
	{ "-va", 1, NO_ACTIONS },
	{ "-ta", 1, NO_ACTIONS },
	{ "-fa", 1, NO_ACTIONS },
	{ "-af", 1, NO_ACTIONS },
	{ "-vaf", 1, NO_ACTIONS },
	{ "-taf", 1, NO_ACTIONS },
	{ "-faf", 1, NO_ACTIONS },
	{ "-recover", 1, "not supported: quash writes beside DEST and renames, so there is nothing to recover" },
	/* 4.7.3: a filesystem streamed to standard output, then fixed up */
	{ "-stream", 0, "not supported: quash writes an image file (or an s3:// object)" },
	{ "-fix", 1, "not supported: quash never streams an image (-stream)" },
	{ "-recovery-path", 1, NULL },
	{ "-small-readers", 1, NULL },
	{ "-block-readers", 1, NULL },
	{ "-overcommit", 1, NULL },
};

static int refuse(const char *opt, const char *why)
{
	fprintf(stderr, "quash: mksquashfs: %s: %s\n", opt, why);
	return MKSQ_EXIT_ERROR;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mksquashfs SOURCE... DEST [OPTIONS] [-e PATH...]\n"
		"quash %s, taking mksquashfs %s's command line.\n"
		"\n"
		"Honoured as mksquashfs does: -comp, -b, -Xcompression-level, -Xhc, -Xbcj,\n"
		"-Xdict-size, -Xalgorithm (lzo), -Xwindow-size, -Xstrategy (gzip),\n"
		"-noappend (sqfstar: -force), -all-root/-root-owned, -force-uid, -force-gid,\n"
		"-root-mode, -root-uid, -root-gid, -root-time, -force-file-mode, -force-dir-mode\n"
		"(4.7: octal or symbolic), -e, -ef, -tar (and the sqfstar\n"
		"form: sqfstar [OPTIONS] IMAGE),\n"
		"-wildcards, -regex, -one-file-system, -one-file-system-x, -max-depth,\n"
		"-exit-on-error (4.6), -throttle, -limit,\n"
		"-keep-as-directory,\n"
		"-xattrs-include, -xattrs-exclude (POSIX extended regular expressions),\n"
		"-p, -pf, -pd (pseudo files: d, m, b, c, f, s, i, l and D, M, B, C, F, S, I),\n"
		"-pseudo-override (4.6: the pseudo files keep their owners and modes over\n"
		"-all-root, -force-uid, -force-gid, -force-file-mode, -force-dir-mode),\n"
		"-sort FILE (PATH PRIORITY lines: the data of higher priorities first),\n"
		"-offset/-o N (the image N bytes into DEST, after zeros),\n"
		"-mem SIZE (bounds the buffers and tables being built, as quash pack --memory),\n"
		"-mem-percent N (4.6: -mem of N%% of the machine's memory),\n"
		"-no-xattrs, -xattrs, -no-fragments, -always-use-fragments, -no-duplicates,\n"
		"-no-exports, -exports, -mkfs-time (4.7: or inode), -all-time, -inode-time,\n"
		"-repro, -repro-time (4.7), -reproducible, -not-reproducible (4.5),\n"
		"SOURCE_DATE_EPOCH, -processors, -noI, -noId, -noD, -noF, -noX (and their\n"
		"long names), -no-compression (4.6),\n"
		"-no-hardlinks, -nopad, -default-mode, -default-uid, -default-gid (4.6),\n"
		"-uid-gid-offset (4.7), -xattrs-add NAME=VALUE (4.6), -ignore-zeros (4.6),\n"
		"-no-strip/-tarstyle, -cpiostyle, -cpiostyle0, -info, -info-file, -percentage\n"
		"(4.6),\n"
		"-numeric-owner (4.7.5; without it, with -tar, a tar's user and group names\n"
		"give the owners where this system knows them, as in mksquashfs),\n"
		"-fstime, -pseudo-dir (4.7's other names of -mkfs-time and -pd),\n"
		"-quiet, -progress, -no-progress, -version, -help, -help-all/-ha,\n"
		"-help-option/-ho REGEX (this help's lines matching it), -help-section/-hs\n"
		"(all of this help), -help-comp COMP|list|all, -Xhelp, -no-pager, -cols.\n"
		"Without -noappend an existing DEST is appended to, as mksquashfs does: the\n"
		"sources go into its root (a name it has becomes NAME_1, NAME_2, ...; with\n"
		"-root-becomes NAME the old root becomes the directory NAME instead), and its\n"
		"compressor, block size and settings are kept (-comp, -b, -no-fragments,\n"
		"-always-use-fragments, -no-duplicates, -no-exports, -noI and the like are\n"
		"then ignored).\n"
		"Any other option is refused with one line (exit 1), never ignored.\n"
		"'quash pack --help' lists quash's own command line.\n",
		QUASH_VERSION, MKSQ_COMPAT_VERSION);
}

/* 4.7's compressor help (-help-comp COMP, -Xhelp): the -X options this form takes for each. */
static const struct {
	const char *comp, *text;
} comp_help[] = {
	{ "gzip", "\t-Xcompression-level N\t1 to 9 (default 9)\n"
		  "\t-Xwindow-size N\t\t8 to 15 (default 15)\n"
		  "\t-Xstrategy S[,S...]\tdefault, filtered, huffman_only, run_length_encoded, fixed\n" },
	{ "lzo", "\t-Xalgorithm A\t\tlzo1x_1, lzo1x_1_11, lzo1x_1_12, lzo1x_1_15, lzo1x_999 (default)\n"
		 "\t-Xcompression-level N\t1 to 9, lzo1x_999 only (default 8)\n" },
	{ "lz4", "\t-Xhc\t\t\thigh compression\n" },
	{ "xz", "\t-Xbcj F[,F...]\t\tx86, arm, armthumb, arm64, powerpc, sparc, ia64, riscv\n"
		"\t-Xdict-size N[K|M|%]\t8K up to the block size (default the block size)\n" },
	{ "zstd", "\t-Xcompression-level N\t1 to 22 (default 15)\n" },
};

/* -help-comp COMP: "list" names them, "all" gives every one's options. */
static int help_comp(const char *comp)
{
	bool all = strcmp(comp, "all") == 0, found = false;

	for (size_t i = 0; i < sizeof(comp_help) / sizeof(comp_help[0]); i++) {
		if (strcmp(comp, "list") == 0) {
			printf("%s%s", i ? ", " : "Compressors: ", comp_help[i].comp);
			found = true;
		} else if (all || strcmp(comp, comp_help[i].comp) == 0) {
			printf("%s%s:\n%s", found ? "\n" : "", comp_help[i].comp, comp_help[i].text);
			found = true;
		}
	}
	if (strcmp(comp, "list") == 0)
		printf(" (default %s)\n", MKSQ_DEFAULT_COMPRESSOR);
	return found ? -1 : refuse(comp, "unknown compressor (gzip, xz, lz4, lzo or zstd)");
}

/*
 * -help-option REGEX: the help's lines that match it (POSIX extended, as
 * mksquashfs compiles it).  quash's help is one page of options, not
 * mksquashfs's one paragraph each, so a line is what is shown.
 */
static int help_option(const char *opt, const char *pattern)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	regex_t re;
	int err, shown = 0;

	if (!f)
		return refuse(opt, "out of memory");
	usage(f);
	if (fclose(f) != 0) {
		free(text);
		return refuse(opt, "out of memory");
	}
	err = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
	if (err) {
		char why[128];

		regerror(err, &re, why, sizeof(why));
		free(text);
		fprintf(stderr, "quash: mksquashfs: %s %s: %s\n", opt, pattern, why);
		return MKSQ_EXIT_ERROR;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (regexec(&re, line, 0, NULL, 0) == 0 && ++shown)
			puts(line);
	regfree(&re);
	free(text);
	if (!shown) {
		fprintf(stderr, "quash: mksquashfs: %s %s: no option matches\n", opt, pattern);
		return MKSQ_EXIT_ERROR;
	}
	return -1;
}

static bool is_noop(const char *arg)
{
	for (size_t i = 0; accepted_noops[i]; i++)
		if (strcmp(arg, accepted_noops[i]) == 0)
			return true;
	return false;
}

/* The superblock flags an -noI-like option sets, or 0 if it is not one. */
static uint16_t uncompressed_flags(const char *opt)
{
	for (size_t i = 0; i < sizeof(uncompressed_opts) / sizeof(uncompressed_opts[0]); i++)
		if (strcmp(opt, uncompressed_opts[i].name) == 0 ||
		    (uncompressed_opts[i].alias && strcmp(opt, uncompressed_opts[i].alias) == 0))
			return uncompressed_opts[i].flags;
	return 0;
}

static int parse_uint(const char *opt, const char *s, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max) {
		fprintf(stderr, "quash: mksquashfs: %s: bad value '%s'\n", opt, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* -force-uid takes a number or a user name, -force-gid a number or a group. */
static int parse_owner(const char *opt, const char *s, bool group, int64_t *out)
{
	uint32_t id;

	if (!pack_parse_owner(s, group, &id)) {
		fprintf(stderr, "quash: mksquashfs: %s: no such %s '%s'\n", opt, group ? "group" : "user", s);
		return -EINVAL;
	}
	*out = id;
	return 0;
}

/*
 * The excludes.  Without -wildcards mksquashfs stats each path below each
 * source and leaves out that file by identity, hard links to it included,
 * and a path that is not there means nothing; they are kept as paths until
 * the sources are known.  With -wildcards each is a pattern: from the root,
 * or at any depth when it starts with "... ".
 */
struct excludes {
	const char **paths;         /* as given */
	size_t n, cap;
	bool wildcards;
	bool regex;                 /* -regex: patterns are regexes, name by name */
	const char **patterns;      /* quash's fnmatch patterns, -wildcards */
	struct scan_devino *ids;    /* stat()ed paths, without -wildcards */
	size_t n_patterns, n_ids;
};

static int exclude_add(struct excludes *e, const char *path)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 16;
		const char **v = realloc(e->paths, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		e->paths = v;
		e->cap = cap;
	}
	e->paths[e->n] = strdup(path);
	return e->paths[e->n++] ? 0 : -ENOMEM;
}

/* quash's patterns: with a '/' from the source's root, without one the name anywhere;
 * without -wildcards exact paths. */
static int exclude_patterns(struct excludes *e)
{
	e->patterns = calloc(e->n + 1, sizeof(*e->patterns));
	if (!e->patterns)
		return -ENOMEM;
	for (size_t i = 0; i < e->n; i++) {
		const char *p = e->paths[i];
		char *pattern = malloc(2 * strlen(p) + 2);

		if (!pattern)
			return -ENOMEM;
		if ((e->wildcards || e->regex) && strncmp(p, "... ", 4) == 0 && !strchr(p + 4, '/')) {
			strcpy(pattern, p + 4);
		} else if (e->wildcards || e->regex) {
			sprintf(pattern, "/%s", p + strspn(p, "/"));
		} else {
			/* An exact path: glob characters escaped. */
			char *q = pattern;

			*q++ = '/';
			for (p += strspn(p, "/"); *p; p++) {
				if (strchr("*?[\\", *p))
					*q++ = '\\';
				*q++ = *p;
			}
			*q = '\0';
		}
		e->patterns[e->n_patterns++] = pattern;
	}
	return 0;
}

/* -regex: every part of every pattern must compile, else one line naming it. */
static int check_regexes(const struct excludes *e)
{
	for (size_t i = 0; i < e->n_patterns; i++) {
		char *copy = strdup(e->patterns[i]), *part, *save = NULL;
		int bad = 0;
		regex_t re;

		if (!copy)
			return refuse("-e", "out of memory");
		for (part = strtok_r(copy, "/", &save); part && !bad; part = strtok_r(NULL, "/", &save)) {
			bad = regcomp(&re, part, REG_EXTENDED | REG_NOSUB);
			if (!bad)
				regfree(&re);
		}
		free(copy);
		if (bad) {
			fprintf(stderr, "quash: mksquashfs: -e %s: not a regular expression (-regex)\n", e->paths[i]);
			return MKSQ_EXIT_ERROR;
		}
	}
	return 0;
}

static int exclude_ids(struct excludes *e, const char *const *sources, size_t nsrc)
{
	e->ids = calloc(e->n * nsrc + 1, sizeof(*e->ids));
	if (!e->ids)
		return -ENOMEM;
	for (size_t i = 0; i < e->n; i++) {
		for (size_t s = 0; s < nsrc; s++) {
			char *path;
			struct stat st;

			if (asprintf(&path, "%s/%s", sources[s], e->paths[i]) < 0)
				return -ENOMEM;
			if (lstat(path, &st) == 0)
				e->ids[e->n_ids++] = (struct scan_devino){ .dev = st.st_dev, .ino = st.st_ino };
			free(path);
		}
	}
	return 0;
}

static void excludes_free(struct excludes *e)
{
	for (size_t i = 0; i < e->n; i++)
		free((char *)e->paths[i]);
	for (size_t i = 0; i < e->n_patterns; i++)
		free((char *)e->patterns[i]);
	free(e->paths);
	free(e->patterns);
	free(e->ids);
}

static int exclude_file(struct excludes *e, const char *file)
{
	char line[MKSQ_EXCLUDE_LINE_MAX];
	FILE *f = fopen(file, "re");
	int err = 0;

	if (!f) {
		fprintf(stderr, "quash: mksquashfs: -ef %s: %s\n", file, strerror(errno));
		return -errno;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			err = exclude_add(e, line);
	}
	fclose(f);
	return err;
}

static const char *base_name(char *path)
{
	size_t len = strlen(path);
	char *slash;

	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* The pseudo definitions, in order, and -pd's directory. */
struct pseudo_args {
	struct pseudo_def *defs;    /* room for every argument */
	size_t count;
	struct pack_meta default_dir;
	bool have_default_dir;
	regex_t xattrs_include, xattrs_exclude;     /* -xattrs-include, -xattrs-exclude */
	bool have_include, have_exclude;
	struct pack_xattr *xattrs_add;              /* -xattrs-add, room for every argument */
	size_t xattrs_add_count;
	char cpio_terminator;                       /* -cpiostyle '\n', -cpiostyle0 '\0' */
	struct mode_spec file_mode, dir_mode;       /* -force-file-mode, -force-dir-mode */
};

/* -cpiostyle: the names on standard input, each ended by 'end'. */
struct name_list {
	char *buf;                  /* all of standard input */
	const char **names;
	size_t count;
};

/* As mksquashfs: empty names are skipped, and an unended last one is ignored, with a warning. */
static int read_names(char end, struct name_list *l)
{
	size_t len = 0, cap = 0, max = 0;
	ssize_t n;

	do {
		if (len == cap) {
			char *b = realloc(l->buf, cap = cap ? 2 * cap : 65536);

			if (!b)
				return refuse("-cpiostyle", "out of memory");
			l->buf = b;
		}
		n = read(STDIN_FILENO, l->buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "quash: mksquashfs: -cpiostyle: standard input: %s\n", strerror(errno));
			return MKSQ_EXIT_ERROR;
		}
		len += (size_t)n;
	} while (n > 0);
	if (len && l->buf[len - 1] != end)
		fprintf(stderr, "quash: mksquashfs: -cpiostyle: the last name on standard input has no end "
			"(ignored, as mksquashfs ignores it)\n");
	for (size_t i = 0; i < len; i++)
		max += l->buf[i] == end;
	l->names = calloc(max + 1, sizeof(*l->names));
	if (!l->names)
		return refuse("-cpiostyle", "out of memory");
	for (size_t i = 0, start = 0; i < len; i++) {
		if (l->buf[i] != end)
			continue;
		l->buf[i] = '\0';
		if (i > start)
			l->names[l->count++] = l->buf + start;
		start = i + 1;
	}
	return 0;
}

/* -pd (opt: as given) "d MODE UID GID" or "D TIME MODE UID GID": the metadata of directories pseudo files imply. */
static int parse_default_dir(const char *opt, const char *s, struct pack_meta *d)
{
	char type, w[3][256];
	unsigned long t = 0;
	int64_t uid, gid;
	char *end;
	long mode;
	int n;

	if (sscanf(s, " %c%n", &type, &n) != 1 || (type != 'd' && type != 'D'))
		return refuse(opt, "expected \"d MODE UID GID\" or \"D TIME MODE UID GID\"");
	s += n;
	if (type == 'D') {
		errno = 0;
		t = strtoul(s, &end, 10);
		if (errno || end == s || t > UINT32_MAX)
			return refuse(opt, "bad time");
		s = end;
	}
	if (sscanf(s, " %255s %255s %255s", w[0], w[1], w[2]) != 3)
		return refuse(opt, "expected MODE UID GID");
	mode = strtol(w[0], &end, 8);
	if (*end || mode < 0 || mode > 07777)
		return refuse(opt, "bad mode (octal, at most 7777)");
	if (parse_owner(opt, w[1], false, &uid) || parse_owner(opt, w[2], true, &gid))
		return MKSQ_EXIT_ERROR;
	memset(d, 0, sizeof(*d));
	d->mode = S_IFDIR | (uint32_t)mode;
	d->uid = (uint32_t)uid;
	d->gid = (uint32_t)gid;
	d->mtime = tree_time(type == 'D' ? (int64_t)t : time(NULL));
	return 0;
}

static int base64_digit(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* -xattrs-add 0s...: base64, '=' padding optional; the bytes, or -1. */
static ssize_t decode_base64(const char *s, uint8_t *out)
{
	size_t n = strlen(s), len = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (n % 4 == 0 && n >= 2 && s[n - 1] == '=')
		n -= s[n - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < n; i++) {
		int d = base64_digit((unsigned char)s[i]);

		if (d < 0)
			return -1;
		acc = acc << 6 | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (uint8_t)(acc >> bits);
		}
	}
	return bits >= 6 ? -1 : (ssize_t)len;   /* a lone sixth of a byte left over */
}

static int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* -xattrs-add 0x...: hexadecimal, two digits a byte. */
static ssize_t decode_hex(const char *s, uint8_t *out)
{
	size_t n = strlen(s);

	if (n % 2)
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_digit((unsigned char)s[i]), lo = hex_digit((unsigned char)s[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return (ssize_t)(n / 2);
}

/* -xattrs-add 0t...: text, a backslash and three octal digits a byte. */
static ssize_t decode_text(const char *s, uint8_t *out)
{
	size_t len = 0;

	while (*s) {
		if (*s != '\\') {
			out[len++] = (uint8_t)*s++;
			continue;
		}
		if (s[1] < '0' || s[1] > '3' || s[2] < '0' || s[2] > '7' || s[3] < '0' || s[3] > '7')
			return -1;
		out[len++] = (uint8_t)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
		s += 4;
	}
	return (ssize_t)len;
}

/*
 * -xattrs-add NAME=VALUE (mksquashfs 4.6): VALUE as bytes, or after 0s
 * base64, after 0x hexadecimal, after 0t text with \ooo octal escapes, after
 * 0b bytes again; a one-byte VALUE has no prefix.
 */
static int parse_xattr_add(const char *arg, struct pack_xattr *x)
{
	const char *eq = strchr(arg, '='), *v;
	ssize_t len;

	if (!eq || eq == arg || !eq[1]) {
		fprintf(stderr, "quash: mksquashfs: -xattrs-add %s: expected NAME=VALUE, neither empty\n", arg);
		return MKSQ_EXIT_ERROR;
	}
	if (strncmp(arg, "user.", 5) && strncmp(arg, "trusted.", 8) && strncmp(arg, "security.", 9)) {
		fprintf(stderr, "quash: mksquashfs: -xattrs-add %s: the name is not in user., trusted. or "
			"security. (all squashfs stores)\n", arg);
		return MKSQ_EXIT_ERROR;
	}
	x->name = strndup(arg, (size_t)(eq - arg));
	x->value = malloc(strlen(eq) + 1);
	if (!x->name || !x->value)
		return refuse("-xattrs-add", "out of memory");
	v = eq + 1;
	if (v[1] && v[0] == '0' && strchr("sSxXtTbB", v[1])) {
		if (!v[2]) {
			fprintf(stderr, "quash: mksquashfs: -xattrs-add %s: the value is empty after its prefix %.2s\n",
				arg, v);
			return MKSQ_EXIT_ERROR;
		}
		switch (v[1] | 0x20) {
		case 's': len = decode_base64(v + 2, x->value); break;
		case 'x': len = decode_hex(v + 2, x->value); break;
		case 't': len = decode_text(v + 2, x->value); break;
		default: len = (ssize_t)strlen(v + 2); memcpy(x->value, v + 2, (size_t)len); break;
		}
	} else {
		len = (ssize_t)strlen(v);
		memcpy(x->value, v, (size_t)len);
	}
	if (len < 0) {
		fprintf(stderr, "quash: mksquashfs: -xattrs-add %s: bad %s value\n", arg,
			(v[1] | 0x20) == 's' ? "base64" : (v[1] | 0x20) == 'x' ? "hexadecimal" : "0t text");
		return MKSQ_EXIT_ERROR;
	}
	x->len = (uint32_t)len;
	return 0;
}

/* -root-becomes NAME: one name of the new root. */
static int check_root_becomes(const char *name)
{
	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strlen(name) > SQFS_NAME_MAX) {
		fprintf(stderr, "quash: mksquashfs: -root-becomes %s: not a name (no '/', not . or .., "
			"at most %d bytes)\n", name, SQFS_NAME_MAX);
		return MKSQ_EXIT_ERROR;
	}
	return 0;
}

/*
 * A comma-separated list of names into a bit mask (-Xbcj x86,arm,...: the
 * filters xz tries on each block; -Xstrategy default,filtered,...: the gzip
 * strategies), each name's bit from bit_of(); 'known' lists them for the
 * message.
 */
static int parse_name_list(const char *opt, const char *what, const char *known, int (*bit_of)(const char *),
			   const char *list, uint32_t *mask)
{
	char *copy = strdup(list), *name, *save = NULL;
	int err = 0;

	if (!copy)
		return refuse(opt, "out of memory");
	for (name = strtok_r(copy, ",", &save); name && !err; name = strtok_r(NULL, ",", &save)) {
		int bit = bit_of(name);

		if (bit < 0) {
			fprintf(stderr, "quash: mksquashfs: %s: unknown %s '%s' (%s)\n", opt, what, name, known);
			err = MKSQ_EXIT_ERROR;
		} else {
			*mask |= 1u << bit;
		}
	}
	free(copy);
	return err;
}

/* -Xdict-size N[K|M] or N%: of the block size; 2^n or 2^n + 2^(n-1), 8 KiB up to the block size. */
static int parse_dict_size(const char *s, uint32_t block_size, uint32_t *out)
{
	uint64_t n;
	bool sized;

	if (!isdigit((unsigned char)s[0]))
		return refuse("-Xdict-size", "bad size");
	if (s[strlen(s) - 1] == '%') {
		char *end;

		errno = 0;
		n = strtoull(s, &end, 10);
		if (errno || n == 0)
			return refuse("-Xdict-size", "bad size");
		if (n > 100)
			return refuse("-Xdict-size", "a percentage of the block size, at most 100%");
		n = block_size * n / 100;
		sized = end[1] == '\0';
	} else {
		sized = size_parse(s, &n) == 0;
		errno = 0;
		if (!sized)
			(void)strtoull(s, NULL, 10);    /* an overflow is a bad size, a bad suffix no dictionary size */
		if ((sized && n == 0) || errno == ERANGE)
			return refuse("-Xdict-size", "bad size");
	}
	if (!sized || n > block_size || !qs_xz_dict_size_ok((uint32_t)n)) {
		fprintf(stderr, "quash: mksquashfs: -Xdict-size %s: must be 2^n or 2^n+2^(n-1) bytes, from 8K up "
			"to the block size (%u)\n", s, block_size);
		return MKSQ_EXIT_ERROR;
	}
	*out = (uint32_t)n;
	return 0;
}

/*
 * mksquashfs -info-file: a new file for -info's lines, refused if the name
 * is taken (as mksquashfs refuses it: "already exists"), never followed
 * through a symbolic link.
 */
static int open_info_file(const char *path, FILE **out)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);

	if (fd < 0 || !(*out = fdopen(fd, "w"))) {
		fprintf(stderr, "quash: mksquashfs: -info-file %s: %s\n", path,
			errno == EEXIST ? "already exists" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return 0;
}

/* The compressors that take -Xcompression-level, and its range in each (mksquashfs's). */
static const struct {
	const char *comp;
	int64_t max;
} level_range[] = {
	{ "gzip", 9 },
	{ "lzo", 9 },
	{ "zstd", 22 },
};

static int check_level(const char *comp, int64_t level)
{
	for (size_t i = 0; i < sizeof(level_range) / sizeof(level_range[0]); i++) {
		if (strcmp(comp, level_range[i].comp) != 0)
			continue;
		if (level >= 1 && level <= level_range[i].max)
			return 0;
		fprintf(stderr, "quash: mksquashfs: -Xcompression-level %lld: out of range for %s (1 to %lld)\n",
			(long long)level, comp, (long long)level_range[i].max);
		return -EINVAL;
	}
	fprintf(stderr, "quash: mksquashfs: -Xcompression-level: not an option of %s (gzip, lzo and zstd have it)\n",
		comp);
	return -EINVAL;
}

/* A command line of this form as it is read: the options, and what is settled only at its end. */
struct mksq_cmd {
	struct pack_options *o;
	struct excludes *ex;
	struct pseudo_args *ps;
	bool noappend, keep_as_dir, tar;
	const char *comp_name;
	const char *dict_size, *xz_opt, *gzip_opt, *lzo_opt;   /* checked once -comp and -b are known */
	const char *info_file;      /* opened last: nothing is created for a command line refused */
	bool progress_given, repro;
	int64_t level;              /* -Xcompression-level, -1: none */
};

/*
 * One option of this form: its name, whether it takes a value, what it
 * does (set a bool of pack_options true or false, or call a handler) and
 * whether it needs no SOURCE or DEST (help and version).  A handler gets
 * the name as given (for messages) and as matched ('a', the same but for
 * 4.7's other names, listed with 'canon'); it returns 0 to go on, else
 * parse_options()'s result.  mksquashfs's -help is a list of what this
 * form honours, not a column per option, so it stays one text (usage()).
 */
enum mksq_arg { MK_NONE, MK_VALUE, MK_REST };
enum mksq_action { MK_TRUE, MK_FALSE, MK_CALL };

struct mksq_opt {
	const char *name;
	enum mksq_arg arg;
	enum mksq_action action;
	size_t field;               /* offsetof(struct pack_options, ...) for MK_TRUE, MK_FALSE */
	int (*call)(struct mksq_cmd *c, const char *given, const char *a, const char *val);
	bool help;                  /* answered without SOURCE and DEST */
	const char *canon;          /* the name it is another name of, or NULL */
};

static int mk_exclude_file(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a;
	return exclude_file(c->ex, val) ? MKSQ_EXIT_ERROR : 0;
}

static int mk_pseudo(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	c->ps->defs[c->ps->count++] = (struct pseudo_def){ .text = val, .is_file = a[2] == 'f' };
	return 0;
}

static int mk_pseudo_dir(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)a;
	if (parse_default_dir(given, val, &c->ps->default_dir))
		return MKSQ_EXIT_ERROR;
	c->ps->have_default_dir = true;
	return 0;
}

static int mk_offset(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	uint64_t off;

	(void)given;
	if (size_parse(val, &off) != 0 || off > (UINT64_MAX >> 20))
		return refuse(a, "bad offset (bytes, or with a K, M or G suffix)");
	c->o->offset = off;
	return 0;
}

static int mk_mem(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	if (!pack_parse_memory(val, &c->o->memory))
		return refuse(a, "bad size (K, M or G; at least 1M)");
	return 0;
}

static int mk_mem_percent(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	/* 4.6: "use <percent> physical memory"; here as -mem, of that much. */
	uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	int64_t v;

	(void)given;
	if (parse_uint(a, val, 100, &v))
		return MKSQ_EXIT_ERROR;
	if (phys / 100 * (uint64_t)v < (1u << 20))
		return refuse(a, "less than 1M of memory");
	c->o->memory = phys / 100 * (uint64_t)v;
	return 0;
}

static int mk_sort(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a;
	c->o->sort_file = val;
	return 0;
}

static int mk_tar(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	c->tar = true;
	return 0;
}

static int mk_wildcards(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)val;
	if (strcmp(a, "-regex") == 0)
		c->ex->regex = true;
	else
		c->ex->wildcards = true;
	return 0;
}

static int mk_comp(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a;
	c->comp_name = val;
	return 0;
}

static int mk_block_size(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	if (!pack_parse_block_size(val, &c->o->block_size))
		return refuse(a, "bad block size (4096 to 1M, a power of two)");
	return 0;
}

static int mk_throttle(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	/* as in mksquashfs 4.5.1: a percentage, each the other's complement */
	bool throttle = strcmp(a, "-throttle") == 0;
	int64_t lo = throttle ? 0 : 1, hi = throttle ? 99 : 100, v;

	if (parse_uint(a, val, INT_MAX, &v))
		return MKSQ_EXIT_ERROR;
	if (v < lo || v > hi) {
		fprintf(stderr, "quash: mksquashfs: %s %lld: out of range (%lld to %lld)\n", given,
			(long long)v, (long long)lo, (long long)hi);
		return MKSQ_EXIT_ERROR;
	}
	c->o->input_limit = throttle ? 100 - (unsigned)v : (unsigned)v;
	return 0;
}

static int mk_level(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	/* its range is the compressor's, checked once -comp is known */
	return parse_uint(a, val, INT_MAX, &c->level) ? MKSQ_EXIT_ERROR : 0;
}

static int mk_lz4_hc(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	c->o->params.lz4_hc = 1;
	return 0;
}

static int mk_xz_bcj(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	if (parse_name_list(a, "filter", "x86, arm, armthumb, arm64, powerpc, sparc, ia64, riscv",
			    qs_xz_filter_bit, val, &c->o->params.xz_filters))
		return MKSQ_EXIT_ERROR;
	c->xz_opt = a;
	return 0;
}

static int mk_gzip_window(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	int64_t v;

	(void)given;
	if (parse_uint(a, val, 15, &v))
		return MKSQ_EXIT_ERROR;
	if (v < 8)
		return refuse(a, "from 8 to 15");
	c->o->params.gzip_window = (int)v;
	c->gzip_opt = a;
	return 0;
}

static int mk_gzip_strategy(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	if (parse_name_list(a, "strategy", "default, filtered, huffman_only, run_length_encoded, fixed",
			    qs_gzip_strategy_bit, val, &c->o->params.gzip_strategies))
		return MKSQ_EXIT_ERROR;
	if (!c->o->params.gzip_strategies)
		return refuse(a, "no strategy given");
	c->gzip_opt = a;
	return 0;
}

static int mk_lzo_algorithm(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	c->o->params.lzo_algorithm = qs_lzo_algorithm(val);
	if (!c->o->params.lzo_algorithm) {
		fprintf(stderr, "quash: mksquashfs: -Xalgorithm: unknown algorithm '%s' (lzo1x_1, "
			"lzo1x_1_11, lzo1x_1_12, lzo1x_1_15, lzo1x_999)\n", val);
		return MKSQ_EXIT_ERROR;
	}
	c->lzo_opt = a;
	return 0;
}

static int mk_xz_dict_size(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	c->dict_size = val;
	c->xz_opt = a;
	return 0;
}

static int mk_noappend(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	c->noappend = true;
	return 0;
}

static int mk_force_owner(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	bool group = strcmp(a, "-force-gid") == 0;

	(void)given;
	return parse_owner(a, val, group, group ? &c->o->overrides.gid : &c->o->overrides.uid) ? MKSQ_EXIT_ERROR : 0;
}

static int mk_force_mode(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	bool files = strcmp(a, "-force-file-mode") == 0;
	struct mode_spec *m = files ? &c->ps->file_mode : &c->ps->dir_mode;
	const char *why;

	(void)given;
	if (mode_parse(val, m, &why)) {
		fprintf(stderr, "quash: mksquashfs: %s %s: %s\n", a, val, why);
		return MKSQ_EXIT_ERROR;
	}
	if (files)
		c->o->overrides.file_mode = m;
	else
		c->o->overrides.dir_mode = m;
	return 0;
}

/* An octal mode of at most 7777 for the root: -root-mode, and -default-mode (4.6) for tars' implied directories too. */
static int mk_root_mode(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	char *end;

	(void)given;
	errno = 0;
	c->o->root_mode = strtoll(val, &end, 8);
	if (errno || end == val || *end || c->o->root_mode < 0 || c->o->root_mode > 07777)
		return refuse(a, "bad mode (octal, at most 7777)");
	if (strcmp(a, "-default-mode") == 0)
		c->o->implicit_mode = c->o->root_mode;
	return 0;
}

static int mk_root_owner(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	if (parse_owner(a, val, a[6] == 'g', a[6] == 'g' ? &c->o->root_gid : &c->o->root_uid))
		return MKSQ_EXIT_ERROR;
	return 0;
}

static int mk_root_time(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given;
	return parse_uint(a, val, UINT32_MAX, &c->o->root_time) ? MKSQ_EXIT_ERROR : 0;
}

static int mk_default_owner(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	int64_t v;

	(void)given;
	if (parse_uint(a, val, UINT32_MAX, &v))
		return MKSQ_EXIT_ERROR;
	if (a[9] == 'u')
		c->o->root_uid = c->o->implicit_uid = v;
	else
		c->o->root_gid = c->o->implicit_gid = v;
	return 0;
}

static int mk_id_offset(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	int64_t v;

	(void)given;
	if (parse_uint(a, val, UINT32_MAX, &v))
		return MKSQ_EXIT_ERROR;
	c->o->id_offset = (uint32_t)v;
	return 0;
}

static int mk_xattrs_add(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	struct pseudo_args *ps = c->ps;

	(void)given, (void)a;
	if (parse_xattr_add(val, &ps->xattrs_add[ps->xattrs_add_count++]))
		return MKSQ_EXIT_ERROR;
	c->o->overrides.xattrs_add = ps->xattrs_add;
	c->o->overrides.xattrs_add_count = ps->xattrs_add_count;
	return 0;
}

static int mk_root_becomes(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a;
	if (check_root_becomes(val))
		return MKSQ_EXIT_ERROR;
	c->o->root_becomes = val;
	return 0;
}

static int mk_info_file(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a;
	c->o->info = true;
	c->info_file = val;
	return 0;
}

static int mk_percentage(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	/* mksquashfs 4.6: the percentage alone, one number a line, and no -info. */
	c->o->percentage = true;
	c->o->info = false;
	return 0;
}

static int mk_cpio_style(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)val;
	c->o->cpio_style = true;
	c->ps->cpio_terminator = a[10] == '0' ? '\0' : '\n';
	return 0;
}

static int mk_cols(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	int64_t v;

	(void)c, (void)given;
	/* 4.7: the help's width; quash's is not wrapped */
	return parse_uint(a, val, INT32_MAX, &v) ? MKSQ_EXIT_ERROR : 0;
}

static int mk_max_depth(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	int64_t v;

	(void)given;
	if (parse_uint(a, val, UINT32_MAX, &v))
		return MKSQ_EXIT_ERROR;
	c->o->limit_depth = true;
	c->o->max_depth = (uint32_t)v;
	return 0;
}

static int mk_one_file_system_x(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	c->o->one_file_system = c->o->one_file_system_x = true;
	return 0;
}

static int mk_keep_as_dir(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	c->keep_as_dir = true;
	return 0;
}

static int mk_xattrs_regex(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	bool include = a[8] == 'i';
	regex_t *re = include ? &c->ps->xattrs_include : &c->ps->xattrs_exclude;
	char msg[256];
	int rc;

	(void)given;
	if (include ? c->ps->have_include : c->ps->have_exclude)
		return refuse(a, "given twice (join the expressions with |)");
	rc = regcomp(re, val, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		regerror(rc, re, msg, sizeof(msg));
		return refuse(a, msg);
	}
	if (include) {
		c->ps->have_include = true;
		c->o->overrides.xattrs_include = re;
	} else {
		c->ps->have_exclude = true;
		c->o->overrides.xattrs_exclude = re;
	}
	return 0;
}

/* -mkfs-time, -all-time, -inode-time, -repro-time: a time; 4.7's -mkfs-time inode: -repro. */
static int mk_time(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	int64_t v;

	if (strcmp(a, "-mkfs-time") == 0 && strcmp(val, "inode") == 0) {
		c->repro = true;            /* 4.7: the newest inode's time */
		return 0;
	}
	if (parse_uint(given, val, UINT32_MAX, &v))
		return MKSQ_EXIT_ERROR;
	/* 4.7: -inode-time is -all-time; -repro-time is both it and -mkfs-time. */
	if (strcmp(a, "-all-time") != 0 && strcmp(a, "-inode-time") != 0)
		c->o->mkfs_time = v;
	if (strcmp(a, "-mkfs-time") != 0)
		c->o->overrides.mtime = v;
	return 0;
}

static int mk_repro(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	c->repro = true;                    /* 4.7: -mkfs-time inode */
	return 0;
}

static int mk_processors(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	int64_t v = -1;

	(void)given;
	if (parse_uint(a, val, 256, &v) || v == 0)
		return v == 0 ? refuse(a, "at least 1") : MKSQ_EXIT_ERROR;
	c->o->jobs = (unsigned)v;
	return 0;
}

static int mk_progress(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a, (void)val;
	c->o->progress = c->progress_given = true;
	return 0;
}

static int mk_version(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)c, (void)given, (void)a, (void)val;
	printf("mksquashfs version %s (compatible; quash %s)\n", MKSQ_COMPAT_VERSION, QUASH_VERSION);
	return -1;
}

/* -help, -help-all, and -help-section S: quash's help has no sections, so all of it. */
static int mk_help(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)c, (void)given, (void)a, (void)val;
	usage(stdout);
	return -1;
}

static int mk_help_option(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)c, (void)given;
	return help_option(a, val);
}

static int mk_help_comp(struct mksq_cmd *c, const char *given, const char *a, const char *val)
{
	(void)given, (void)a;
	return help_comp(val ? val : c->comp_name);
}

#define PO(f) offsetof(struct pack_options, f)

/* Every option this form honours; the ones it takes and ignores, or refuses, are in the lists above. */
static const struct mksq_opt mksq_opts[] = {
	{ "-e", MK_REST, MK_CALL, 0, NULL, false, NULL },       /* everything after it is an exclude */
	{ "-ef", MK_VALUE, MK_CALL, 0, mk_exclude_file, false, NULL },
	{ "-p", MK_VALUE, MK_CALL, 0, mk_pseudo, false, NULL },
	{ "-pf", MK_VALUE, MK_CALL, 0, mk_pseudo, false, NULL },
	{ "-pd", MK_VALUE, MK_CALL, 0, mk_pseudo_dir, false, NULL },
	{ "-pseudo-dir", MK_VALUE, MK_CALL, 0, mk_pseudo_dir, false, "-pd" },
	{ "-offset", MK_VALUE, MK_CALL, 0, mk_offset, false, NULL },
	{ "-o", MK_VALUE, MK_CALL, 0, mk_offset, false, NULL },
	{ "-mem", MK_VALUE, MK_CALL, 0, mk_mem, false, NULL },
	{ "-mem-percent", MK_VALUE, MK_CALL, 0, mk_mem_percent, false, NULL },
	{ "-sort", MK_VALUE, MK_CALL, 0, mk_sort, false, NULL },
	{ "-tar", MK_NONE, MK_CALL, 0, mk_tar, false, NULL },
	{ "-wildcards", MK_NONE, MK_CALL, 0, mk_wildcards, false, NULL },
	{ "-regex", MK_NONE, MK_CALL, 0, mk_wildcards, false, NULL },
	{ "-comp", MK_VALUE, MK_CALL, 0, mk_comp, false, NULL },
	{ "-b", MK_VALUE, MK_CALL, 0, mk_block_size, false, NULL },
	{ "-throttle", MK_VALUE, MK_CALL, 0, mk_throttle, false, NULL },
	{ "-limit", MK_VALUE, MK_CALL, 0, mk_throttle, false, NULL },
	{ "-Xcompression-level", MK_VALUE, MK_CALL, 0, mk_level, false, NULL },
	{ "-Xhc", MK_NONE, MK_CALL, 0, mk_lz4_hc, false, NULL },
	{ "-Xbcj", MK_VALUE, MK_CALL, 0, mk_xz_bcj, false, NULL },
	{ "-Xwindow-size", MK_VALUE, MK_CALL, 0, mk_gzip_window, false, NULL },
	{ "-Xstrategy", MK_VALUE, MK_CALL, 0, mk_gzip_strategy, false, NULL },
	{ "-Xalgorithm", MK_VALUE, MK_CALL, 0, mk_lzo_algorithm, false, NULL },
	{ "-Xdict-size", MK_VALUE, MK_CALL, 0, mk_xz_dict_size, false, NULL },
	{ "-noappend", MK_NONE, MK_CALL, 0, mk_noappend, false, NULL },
	{ "-force", MK_NONE, MK_CALL, 0, mk_noappend, false, NULL },    /* sqfstar's name for it */
	{ "-all-root", MK_NONE, MK_TRUE, PO(overrides.all_root), NULL, false, NULL },
	{ "-root-owned", MK_NONE, MK_TRUE, PO(overrides.all_root), NULL, false, NULL },
	{ "-force-uid", MK_VALUE, MK_CALL, 0, mk_force_owner, false, NULL },
	{ "-force-gid", MK_VALUE, MK_CALL, 0, mk_force_owner, false, NULL },
	{ "-force-file-mode", MK_VALUE, MK_CALL, 0, mk_force_mode, false, NULL },
	{ "-force-dir-mode", MK_VALUE, MK_CALL, 0, mk_force_mode, false, NULL },
	{ "-root-mode", MK_VALUE, MK_CALL, 0, mk_root_mode, false, NULL },
	{ "-root-uid", MK_VALUE, MK_CALL, 0, mk_root_owner, false, NULL },
	{ "-root-gid", MK_VALUE, MK_CALL, 0, mk_root_owner, false, NULL },
	{ "-root-time", MK_VALUE, MK_CALL, 0, mk_root_time, false, NULL },
	{ "-default-mode", MK_VALUE, MK_CALL, 0, mk_root_mode, false, NULL },
	{ "-default-uid", MK_VALUE, MK_CALL, 0, mk_default_owner, false, NULL },
	{ "-default-gid", MK_VALUE, MK_CALL, 0, mk_default_owner, false, NULL },
	{ "-uid-gid-offset", MK_VALUE, MK_CALL, 0, mk_id_offset, false, NULL },
	{ "-xattrs-add", MK_VALUE, MK_CALL, 0, mk_xattrs_add, false, NULL },
	{ "-root-becomes", MK_VALUE, MK_CALL, 0, mk_root_becomes, false, NULL },
	{ "-info", MK_NONE, MK_TRUE, PO(info), NULL, false, NULL },
	{ "-info-file", MK_VALUE, MK_CALL, 0, mk_info_file, false, NULL },
	{ "-percentage", MK_NONE, MK_CALL, 0, mk_percentage, false, NULL },
	{ "-no-hardlinks", MK_NONE, MK_TRUE, PO(no_hardlinks), NULL, false, NULL },
	{ "-no-strip", MK_NONE, MK_TRUE, PO(no_strip), NULL, false, NULL },
	{ "-tarstyle", MK_NONE, MK_TRUE, PO(no_strip), NULL, false, NULL },
	{ "-cpiostyle", MK_NONE, MK_CALL, 0, mk_cpio_style, false, NULL },
	{ "-cpiostyle0", MK_NONE, MK_CALL, 0, mk_cpio_style, false, NULL },
	{ "-ignore-zeros", MK_NONE, MK_TRUE, PO(ignore_zeros), NULL, false, NULL },
	/* 4.6: pseudo definitions keep their owners and modes */
	{ "-pseudo-override", MK_NONE, MK_TRUE, PO(pseudo_override), NULL, false, NULL },
	/* 4.7.5: a tar's numbers, not its names (scan.h) */
	{ "-numeric-owner", MK_NONE, MK_FALSE, PO(owner_names), NULL, false, NULL },
	{ "-cols", MK_VALUE, MK_CALL, 0, mk_cols, false, NULL },
	{ "-nopad", MK_NONE, MK_TRUE, PO(nopad), NULL, false, NULL },
	{ "-exit-on-error", MK_NONE, MK_TRUE, PO(exit_on_error), NULL, false, NULL },
	{ "-max-depth", MK_VALUE, MK_CALL, 0, mk_max_depth, false, NULL },
	{ "-one-file-system", MK_NONE, MK_TRUE, PO(one_file_system), NULL, false, NULL },
	{ "-one-file-system-x", MK_NONE, MK_CALL, 0, mk_one_file_system_x, false, NULL },
	{ "-keep-as-directory", MK_NONE, MK_CALL, 0, mk_keep_as_dir, false, NULL },
	{ "-xattrs-include", MK_VALUE, MK_CALL, 0, mk_xattrs_regex, false, NULL },
	{ "-xattrs-exclude", MK_VALUE, MK_CALL, 0, mk_xattrs_regex, false, NULL },
	{ "-no-xattrs", MK_NONE, MK_TRUE, PO(overrides.no_xattrs), NULL, false, NULL },
	{ "-xattrs", MK_NONE, MK_FALSE, PO(overrides.no_xattrs), NULL, false, NULL },
	{ "-no-fragments", MK_NONE, MK_FALSE, PO(fragments), NULL, false, NULL },
	{ "-always-use-fragments", MK_NONE, MK_TRUE, PO(tail_packing), NULL, false, NULL },
	{ "-tailends", MK_NONE, MK_TRUE, PO(tail_packing), NULL, false, NULL },
	{ "-no-duplicates", MK_NONE, MK_FALSE, PO(dedup), NULL, false, NULL },
	{ "-no-exports", MK_NONE, MK_FALSE, PO(exportable), NULL, false, NULL },
	{ "-no-sparse", MK_NONE, MK_FALSE, PO(sparse), NULL, false, NULL },
	{ "-mkfs-time", MK_VALUE, MK_CALL, 0, mk_time, false, NULL },
	{ "-fstime", MK_VALUE, MK_CALL, 0, mk_time, false, "-mkfs-time" },
	{ "-all-time", MK_VALUE, MK_CALL, 0, mk_time, false, NULL },
	{ "-inode-time", MK_VALUE, MK_CALL, 0, mk_time, false, NULL },
	{ "-repro-time", MK_VALUE, MK_CALL, 0, mk_time, false, NULL },
	{ "-repro", MK_NONE, MK_CALL, 0, mk_repro, false, NULL },
	{ "-processors", MK_VALUE, MK_CALL, 0, mk_processors, false, NULL },
	{ "-quiet", MK_NONE, MK_TRUE, PO(quiet), NULL, false, NULL },
	{ "-progress", MK_NONE, MK_CALL, 0, mk_progress, false, NULL },
	{ "-no-progress", MK_NONE, MK_FALSE, PO(progress), NULL, false, NULL },
	{ "-version", MK_NONE, MK_CALL, 0, mk_version, true, NULL },
	{ "-help", MK_NONE, MK_CALL, 0, mk_help, true, NULL },
	{ "-h", MK_NONE, MK_CALL, 0, mk_help, true, NULL },
	{ "-help-all", MK_NONE, MK_CALL, 0, mk_help, true, NULL },
	{ "-ha", MK_NONE, MK_CALL, 0, mk_help, true, NULL },
	{ "-help-section", MK_VALUE, MK_CALL, 0, mk_help, true, NULL },
	{ "-hs", MK_VALUE, MK_CALL, 0, mk_help, true, NULL },
	{ "-help-option", MK_VALUE, MK_CALL, 0, mk_help_option, true, NULL },
	{ "-ho", MK_VALUE, MK_CALL, 0, mk_help_option, true, NULL },
	{ "-help-comp", MK_VALUE, MK_CALL, 0, mk_help_comp, true, NULL },
	{ "-Xhelp", MK_NONE, MK_CALL, 0, mk_help_comp, true, NULL },
};

static const struct mksq_opt *mksq_opt(const char *name)
{
	for (size_t i = 0; i < sizeof(mksq_opts) / sizeof(mksq_opts[0]); i++)
		if (strcmp(name, mksq_opts[i].name) == 0)
			return &mksq_opts[i];
	return NULL;
}

/* An option the table does not hold: taken and ignored, -noI and the like, refused, or unknown. */
static int other_option(struct mksq_cmd *c, const char *a)
{
	if (is_noop(a))
		return 0;
	if (uncompressed_flags(a)) {
		c->o->uncompressed |= uncompressed_flags(a);
		return 0;
	}
	for (size_t r = 0; r < sizeof(refused) / sizeof(refused[0]); r++)
		if (strcmp(a, refused[r].name) == 0)
			return refuse(a, refused[r].why ? refused[r].why : "not supported");
	return refuse(a, "unknown option (see mksquashfs -help for what this form takes)");
}

/* The compressor and its options, once -comp and -b are known; last, the -info-file. */
static int finish_compressor(struct mksq_cmd *c)
{
	struct pack_options *o = c->o;
	const char *comp_name = c->comp_name;

	o->comp = qs_compressor_by_name(comp_name);
	if (!o->comp || !o->comp->compress)
		return refuse("-comp", "unknown compressor (gzip, xz, lz4, lzo or zstd)");
	o->params.block_size = o->block_size;
	if (c->xz_opt && strcmp(comp_name, "xz") != 0)
		return refuse(c->xz_opt, "an xz option: needs -comp xz");
	if (c->gzip_opt && strcmp(comp_name, "gzip") != 0)
		return refuse(c->gzip_opt, "a gzip option: needs -comp gzip (the default)");
	if (c->lzo_opt && strcmp(comp_name, "lzo") != 0)
		return refuse(c->lzo_opt, "an lzo option: needs -comp lzo");
	if (c->level >= 0 && check_level(comp_name, c->level))
		return MKSQ_EXIT_ERROR;
	if (c->level >= 0)
		o->params.level = (int)c->level;
	/* mksquashfs: "-Xcompression-level is only applicable for the lzo1x_999 algorithm". */
	if (o->params.lzo_algorithm && o->params.lzo_algorithm != qs_lzo_algorithm("lzo1x_999") && o->params.level &&
	    strcmp(comp_name, "lzo") == 0)
		return refuse("-Xcompression-level", "for lzo1x_999 only, not the -Xalgorithm given");
	/* mksquashfs: "default" alone is no choice of strategies, and stores none. */
	if (o->params.gzip_strategies == 1u << qs_gzip_strategy_bit("default"))
		o->params.gzip_strategies = 0;
	if (c->dict_size && parse_dict_size(c->dict_size, o->block_size, &o->params.xz_dict_size))
		return MKSQ_EXIT_ERROR;
	/* Last: nothing is created for a command line refused. */
	if (c->info_file && open_info_file(c->info_file, &o->info_out))
		return MKSQ_EXIT_ERROR;
	return 0;
}

/* What is settled once every option is read: the times, the progress, the compressor's settings. */
static int finish_options(struct mksq_cmd *c)
{
	struct pack_options *o = c->o;
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	int64_t v;

	/* mksquashfs: -info's lines take the bar's place, unless -progress asks for both or they go to a file. */
	if (o->info && !c->progress_given && !c->info_file)
		o->progress = false;
	/* Asked for where no one watches (a build log): mksquashfs's own bar on stdout, as it prints it. */
	o->progress_log = c->progress_given && o->progress && !isatty(STDOUT_FILENO);
	if (epoch && *epoch) {
		/* mksquashfs: SOURCE_DATE_EPOCH is the image's time, and later file times become it. */
		if (parse_uint("SOURCE_DATE_EPOCH", epoch, UINT32_MAX, &v))
			return MKSQ_EXIT_ERROR;
		o->overrides.mtime_max = v;
		if (o->mkfs_time < 0)
			o->mkfs_time = v;
	}
	/*
	 * mksquashfs stamps an image with when it was made; -all-time does not
	 * change that.  -repro (-mkfs-time inode) leaves it to the writer: the
	 * newest time in the tree.
	 */
	if (o->mkfs_time < 0 && !c->repro)
		o->mkfs_time = time(NULL);
	/* mksquashfs: "-noI implies -noId", and then only -noI is flagged. */
	if (o->uncompressed & SQFS_FLAG_UNCOMPRESSED_INODES)
		o->uncompressed &= (uint16_t)~SQFS_FLAG_UNCOMPRESSED_IDS;
	return finish_compressor(c);
}

/* The options after SOURCE... DEST; 0, or the exit status (-1: help was given). */
static int parse_options(int argc, char **argv, int first, struct mksq_cmd *c)
{
	for (int i = first; i < argc; i++) {
		const char *given = argv[i];
		const struct mksq_opt *opt = mksq_opt(given);
		/* Matched by its canonical name, named in messages as given. */
		const char *a = opt && opt->canon ? opt->canon : given;
		const char *val = NULL;
		int status;

		if (!opt) {
			if ((status = other_option(c, a)) != 0)
				return status;
			continue;
		}
		if (opt->arg == MK_REST) {
			for (i++; i < argc; i++)
				if (exclude_add(c->ex, argv[i]))
					return MKSQ_EXIT_ERROR;
			break;
		}
		if (opt->arg == MK_VALUE) {
			if (i + 1 >= argc)
				return refuse(given, "needs a value");
			val = argv[++i];
		}
		if (opt->action != MK_CALL)
			*(bool *)((char *)c->o + opt->field) = opt->action == MK_TRUE;
		else if ((status = opt->call(c, given, a, val)) != 0)
			return status;
	}
	return finish_options(c);
}

static int check_settings(const struct pack_options *o)
{
	static const uint8_t probe[64] = "quash quash quash quash quash quash quash quash quash quash";
	uint8_t out[sizeof(probe)];

	if (o->comp->compress(&o->params, probe, sizeof(probe), out, sizeof(out)) < 0)
		return refuse("-comp", qs_last_error());
	return 0;
}

/* Does 'opt' take a value?  For finding sqfstar's IMAGE among the options. */
static bool takes_value(const char *opt)
{
	const struct mksq_opt *known = mksq_opt(opt);

	if (known)
		return known->arg == MK_VALUE;
	for (size_t r = 0; r < sizeof(refused) / sizeof(refused[0]); r++)
		if (strcmp(opt, refused[r].name) == 0)
			return refused[r].args > 0;
	return false;
}

/* Is 'opt' one asking for the version or help, that needs no SOURCE or DEST? */
static bool asks_help(const char *opt)
{
	const struct mksq_opt *known = mksq_opt(opt);

	return known && known->help;
}

/*
 * sqfstar [OPTIONS] IMAGE [EXCLUDES...]: a tar on standard input.  It is
 * mksquashfs - IMAGE -tar OPTIONS -e EXCLUDES, and is run as that.
 */
int sqfstar_main(int argc, char **argv)
{
	char **args = calloc((size_t)argc + 5, sizeof(*args));
	int image = 0, n = 0, status;

	if (!args)
		return refuse("sqfstar", "out of memory");
	for (int i = 1; i < argc && !image; i++) {
		if (argv[i][0] != '-' || argv[i][1] == '\0')
			image = i;
		else if (takes_value(argv[i]))
			i++;
	}
	if (!image) {
		free(args);
		if (argc > 1 && asks_help(argv[1]))
			return mksquashfs_main(argc, argv);
		fprintf(stderr, "quash: sqfstar: need IMAGE (the tar comes on standard input)\n"
				"Try 'sqfstar -help' for more information.\n");
		return MKSQ_EXIT_ERROR;
	}
	args[n++] = argv[0];
	args[n++] = "-";
	args[n++] = argv[image];
	args[n++] = "-tar";
	for (int i = 1; i < image; i++)
		args[n++] = argv[i];
	if (image + 1 < argc) {
		args[n++] = "-e";
		for (int i = image + 1; i < argc; i++)
			args[n++] = argv[i];
	}
	status = mksquashfs_main(n, args);
	free(args);
	return status;
}

/*
 * The sources and DEST once the options are read: the excludes against
 * the sources, the compressor tried once, whether DEST is appended to, the
 * pseudo definitions; 0 or the exit status.
 */
static int prepare_run(struct mksq_cmd *c, char **argv, int first_opt)
{
	struct pack_options *o = c->o;
	struct excludes *ex = c->ex;
	struct stat st;

	o->sources = (const char **)argv + 1;
	o->source_count = (size_t)(first_opt - 2);
	o->image = argv[first_opt - 1];
	/* From a tar there is nothing to stat: its excludes are paths. */
	if (ex->wildcards || ex->regex || c->tar || o->no_strip || o->cpio_style ? exclude_patterns(ex)
										   : exclude_ids(ex, o->sources, o->source_count))
		return refuse("-e", "out of memory");
	if (ex->regex && check_regexes(ex) != 0)
		return MKSQ_EXIT_ERROR;
	o->excludes = ex->patterns;
	o->exclude_count = ex->n_patterns;
	o->exclude_regex = ex->regex;
	o->exclude_ids = ex->ids;
	o->exclude_id_count = ex->n_ids;
	if (check_settings(o))
		return MKSQ_EXIT_ERROR;
	if (o->offset && strncmp(o->image, "s3://", 5) == 0)
		return refuse("-offset", "not for an s3:// image");
	/* As mksquashfs: even an empty DEST is appended to, and so refused (no superblock). */
	if (!c->noappend && stat(o->image, &st) == 0 && (S_ISREG(st.st_mode) || st.st_size > 0 || o->offset)) {
		if (o->offset)
			return refuse(o->image, "exists; appending to an image at an -offset is not supported "
						"yet: give -noappend to replace it");
		if (!S_ISREG(st.st_mode))
			return refuse(o->image, "exists and is not a regular file: quash appends only to "
						"image files (give -noappend to replace it)");
		o->append = true;
	}
	o->pseudo = (struct pseudo_options){
		.defs = c->ps->defs, .count = c->ps->count,
		.default_dir = c->ps->have_default_dir ? &c->ps->default_dir : NULL,
		/* mksquashfs: pseudo entries without a time are made now (or at SOURCE_DATE_EPOCH). */
		.default_time = (uint32_t)(o->overrides.mtime_max >= 0 ? o->overrides.mtime_max : time(NULL)),
		.block_size = o->block_size,
	};
	return 0;
}

static int run(const struct pack_options *o)
{
	return pack_run(o) ? MKSQ_EXIT_ERROR : MKSQ_EXIT_OK;
}

/* -no-strip, -cpiostyle: the sources are paths kept whole, or names on standard input. */
static int run_paths(struct mksq_cmd *c, struct name_list *cpio)
{
	struct pack_options *o = c->o;
	int status;

	if (o->limit_depth)
		return refuse("-max-depth", "not with -no-strip or -cpiostyle");
	if (o->append)
		return refuse(o->image, "exists; appending with -no-strip or -cpiostyle is not supported "
					"yet: give -noappend to replace it");
	if (c->tar)
		/* mksquashfs: "Only one of cpiostyle, tar file or pseudo file reading from stdin". */
		return refuse("-tar", "not with -no-strip or -cpiostyle");
	if (o->cpio_style) {
		if (o->source_count != 1 || strcmp(o->sources[0], "-") != 0)
			return refuse("-cpiostyle", "the source must be - (the names come on standard input)");
		if ((status = read_names(c->ps->cpio_terminator, cpio)) != 0)
			return status;
		o->sources = cpio->names;
		o->source_count = cpio->count;
		o->no_strip = false;        /* mksquashfs: -cpiostyle names are never descended into */
	}
	return run(o);
}

/* mksquashfs - DEST -tar: a tar on standard input, in a root of its own. */
static int run_tar(struct mksq_cmd *c)
{
	struct pack_options *o = c->o;

	if (o->limit_depth)
		/* mksquashfs: "-max-depth is not supported reading tar files". */
		return refuse("-max-depth", "not reading a tar (as in mksquashfs)");
	if (o->source_count != 1 || strcmp(o->sources[0], "-") != 0)
		return refuse("-tar", "the source must be - (the tar comes on standard input)");
	if (o->append)
		/* mksquashfs: "Appending is not supported reading tar files". */
		return refuse(o->image, "exists, and appending is not supported reading a tar (as in "
					"mksquashfs): give -noappend (sqfstar: -force) to replace it");
	o->fake_root = true;
	return run(o);
}

/* Sources are directories here; each nests by name unless it is the only one. */
static int run_dirs(struct mksq_cmd *c, const char ***names_out)
{
	struct pack_options *o = c->o;
	size_t nsrc = o->source_count;
	const char **names = calloc(nsrc, sizeof(*names));
	struct stat st;

	if (!names)
		return MKSQ_EXIT_ERROR;
	*names_out = names;
	o->fake_root = nsrc > 1 || c->keep_as_dir;
	o->file_sources = true;
	for (size_t i = 0; i < nsrc; i++) {
		/* mksquashfs takes each source as it is: a symlink, even to a directory, is a symlink. */
		if (lstat(o->sources[i], &st) != 0) {
			fprintf(stderr, "quash: mksquashfs: %s: %s\n", o->sources[i], strerror(errno));
			return MKSQ_EXIT_ERROR;
		}
		/* A source that is no directory goes in a made-up root, by its name, as in mksquashfs. */
		if (!S_ISDIR(st.st_mode))
			o->fake_root = true;
		if (nsrc > 1 || c->keep_as_dir)
			names[i] = base_name((char *)o->sources[i]);
	}
	o->source_names = names;
	return run(o);
}

static void pseudo_args_free(struct pseudo_args *ps)
{
	if (ps->have_include)
		regfree(&ps->xattrs_include);
	if (ps->have_exclude)
		regfree(&ps->xattrs_exclude);
	free(ps->defs);
	for (size_t i = 0; i < ps->xattrs_add_count; i++) {
		free(ps->xattrs_add[i].name);
		free(ps->xattrs_add[i].value);
	}
	free(ps->xattrs_add);
}

int mksquashfs_main(int argc, char **argv)
{
	struct pack_options o = {
		.block_size = MKSQ_DEFAULT_BLOCK_SIZE,
		.fragments = true, .tail_packing = false, .dedup = true, .exportable = true, .sparse = true,
		.overrides = { .uid = -1, .gid = -1, .mode = -1, .mtime = -1, .mtime_max = -1 },
		.mkfs_time = -1, .root_mode = -1, .root_uid = -1, .root_gid = -1, .root_time = -1, .progress = true,
		/* mksquashfs: directories a tar implies are 0755, the caller's (tar.c, fixup_tree). */
		.implicit_mode = 0755, .implicit_uid = getuid(), .implicit_gid = getgid(),
		/* mksquashfs -tar: a tar's owner names, where this system knows them (-numeric-owner: not). */
		.owner_names = true,
	};
	struct excludes ex = { 0 };
	struct pseudo_args ps = {
		.defs = calloc((size_t)argc + 1, sizeof(*ps.defs)),
		.xattrs_add = calloc((size_t)argc + 1, sizeof(*ps.xattrs_add)),
	};
	struct mksq_cmd c = { .o = &o, .ex = &ex, .ps = &ps, .comp_name = MKSQ_DEFAULT_COMPRESSOR, .level = -1 };
	struct name_list cpio = { 0 };
	const char **names = NULL;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int first_opt = 1, status;

	pack_set_mksquashfs_form();

	o.jobs = cores > 0 ? (unsigned)cores : 1;
	o.report = true;
	if (!ps.defs || !ps.xattrs_add) {
		free(ps.defs);
		free(ps.xattrs_add);
		return refuse("mksquashfs", "out of memory");
	}
	/* The operands come first; "-" (standard input, with -tar) is one. */
	while (first_opt < argc && (argv[first_opt][0] != '-' || argv[first_opt][1] == '\0'))
		first_opt++;
	if (first_opt == 1 && argc > 1 && asks_help(argv[1])) {
		status = parse_options(argc, argv, 1, &c);
	} else if (first_opt < 3) {
		fprintf(stderr, "quash: mksquashfs: need SOURCE... DEST before the options\n"
				"Try 'mksquashfs -help' for more information.\n");
		return MKSQ_EXIT_ERROR;
	} else {
		status = parse_options(argc, argv, first_opt, &c);
		if (status == 0)
			status = prepare_run(&c, argv, first_opt);
		if (status == 0)
			status = o.no_strip || o.cpio_style ? run_paths(&c, &cpio) : c.tar ? run_tar(&c)
											 : run_dirs(&c, &names);
	}
	if (o.info_out && fclose(o.info_out) != 0 && status == MKSQ_EXIT_OK)
		status = refuse("-info-file", strerror(errno));
	excludes_free(&ex);
	pseudo_args_free(&ps);
	free(cpio.buf);
	free(cpio.names);
	free(names);
	return status < 0 ? MKSQ_EXIT_OK : status;
}
