/*
 * common.c - option parsing, image opening, messages and formatting shared
 * by the offline subcommands.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common.h"
#include "size.h"
#include "source_opt.h"

/* Longest message printed; longer ones are cut. */
#define CLI_MESSAGE_MAX 1024

int cli_usage(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "quash: %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'quash %s --help' for more information.\n", cmd->name);
	return CLI_EXIT_USAGE;
}

/* A name from the image, with control characters escaped so a message stays one line. */
static void print_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

void cli_error(const char *image, const char *path, const char *fmt, ...)
{
	char msg[CLI_MESSAGE_MAX], *shown;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fputs("quash: ", stderr);
	shown = qs_source_display_name(image);
	print_escaped(stderr, shown ? shown : "image");
	free(shown);
	fputs(": ", stderr);
	if (path) {
		print_escaped(stderr, path);
		fputs(": ", stderr);
	}
	print_escaped(stderr, msg);
	fputc('\n', stderr);
}

/* The summary reads as a sentence here: "Show an image's superblock ...". */
static void cli_help(const struct cli_command *cmd)
{
	printf("Usage: %s\n%c%s.\n\n%s", cmd->usage, toupper((unsigned char)cmd->summary[0]), cmd->summary + 1,
	       cmd->help);
}

/* The remote options, by their long names: common/source_opt.c checks and stores them. */
static int source_option(struct cli_common *co, int opt, const char *arg)
{
	static const struct { int opt; const char *name, *bad; } names[] = {
		{ CLI_OPT_ENDPOINT, "endpoint", "endpoint" },
		{ CLI_OPT_REGION, "region", "region" },
		{ CLI_OPT_CACHE_DIR, "cache-dir", "cache directory" },
		{ CLI_OPT_PROXY, "proxy", "proxy" },
		{ CLI_OPT_FALLBACK, "fallback", NULL },
		{ CLI_OPT_CACHE_DIR_LIMIT, "cache-dir-limit", "cache size" },
		{ CLI_OPT_RETRY_SECONDS, "retry-seconds", "number of seconds" },
		{ CLI_OPT_VERITY, "verity", "root hash" },
		{ CLI_OPT_VERITY_FILE, "verity-file", "verity tree file" },
		{ CLI_OPT_VERITY_OFFSET, "verity-offset", "verity offset" },
		{ CLI_OPT_VERITY_SIG, "verity-sig", "root hash signature file" },
		{ CLI_OPT_VERITY_CERT, "verity-cert", "certificate file" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].opt != opt || source_opt_set(&co->source, names[i].name, arg) == 0)
			continue;
		if (!names[i].bad)
			return cli_usage(co->cmd, "--fallback: '%s' is not an http://, https:// or s3:// URL", arg);
		return cli_usage(co->cmd, "invalid %s '%s'", names[i].bad, arg);
	}
	return CLI_CONTINUE;
}

int cli_common_option(struct cli_common *co, int opt, const char *arg)
{
	switch (opt) {
	case 'o':
		/* unsquashfs's "-o N" and mount's "-o offset=N" mean the same. */
		if (strncmp(arg, "offset=", 7) == 0)
			arg += 7;
		if (size_parse(arg, &co->offset))
			return cli_usage(co->cmd, "invalid offset '%s'", arg);
		co->offset_given = true;
		co->source.image_offset = co->offset;  /* where an appended verity tree is looked for */
		co->source.image_offset_given = true;
		return CLI_CONTINUE;
	case CLI_OPT_ENDPOINT:
	case CLI_OPT_REGION:
	case CLI_OPT_CACHE_DIR:
	case CLI_OPT_PROXY:
	case CLI_OPT_FALLBACK:
	case CLI_OPT_CACHE_DIR_LIMIT:
	case CLI_OPT_RETRY_SECONDS:
	case CLI_OPT_VERITY:
	case CLI_OPT_VERITY_FILE:
	case CLI_OPT_VERITY_OFFSET:
	case CLI_OPT_VERITY_SIG:
	case CLI_OPT_VERITY_CERT:
		return source_option(co, opt, arg);
	case 'h':
		cli_help(co->cmd);
		return cli_finish_stdout(CLI_EXIT_OK);
	case 'V':
		return cli_print_version();
	default:
		/* getopt has said what is wrong with the option. */
		fprintf(stderr, "Try 'quash %s --help' for more information.\n", co->cmd->name);
		return CLI_EXIT_USAGE;
	}
}

int cli_parse_common_only(struct cli_common *co, int argc, char **argv)
{
	static const struct option longopts[] = { CLI_COMMON_LONGOPTS, { 0 } };
	int opt, st;

	while ((opt = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		st = cli_common_option(co, opt, optarg);
		if (st != CLI_CONTINUE)
			return st;
	}
	return CLI_CONTINUE;
}

int cli_print_version(void)
{
	printf("quash %s\n", QUASH_VERSION);
	return cli_finish_stdout(CLI_EXIT_OK);
}

int cli_parse_common_json(struct cli_common *co, int argc, char **argv, bool *json)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		CLI_COMMON_LONGOPTS,
		{ 0 }
	};
	int opt, st;

	while ((opt = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS "j", longopts, NULL)) != -1) {
		if (opt == 'j') {
			*json = true;
			continue;
		}
		st = cli_common_option(co, opt, optarg);
		if (st != CLI_CONTINUE)
			return st;
	}
	return CLI_CONTINUE;
}

int cli_open_image(const struct cli_common *co, const char *image, struct qs_image **out)
{
	struct qs_image_options iopt = { 0 };
	struct qs_source *src;

	/* A signature is checked against certificates, or it checks nothing: both, or neither. */
	if (!co->source.verity_sig != !co->source.verity_cert)
		return cli_usage(co->cmd, co->source.verity_sig ? "--verity-sig needs --verity-cert to check it against"
								: "--verity-cert is given without --verity-sig");
	if (qs_source_open(image, &co->source, &src) < 0) {
		cli_error(image, NULL, "%s", qs_last_error());
		return CLI_EXIT_ERROR;
	}
	if (src->notice)
		cli_error(image, NULL, "%s", src->notice);
	iopt.offset = co->offset;
	iopt.offset_given = co->offset_given;
	if (qs_image_open(src, &iopt, out) < 0) {
		cli_error(image, NULL, "%s", qs_last_error());
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
}

int cli_lookup(struct qs_image *img, const char *image, const char *path, struct qs_inode *out)
{
	if (qs_lookup_path(img, path, out) < 0) {
		cli_error(image, path, "%s", qs_last_error());
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
}

int cli_finish_stdout(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "quash: standard output: %s\n", strerror(errno));
		return CLI_EXIT_ERROR;
	}
	return status;
}

/* ---- formatting -------------------------------------------------------- */

static char cli_type_char(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:  return 'd';
	case S_IFLNK:  return 'l';
	case S_IFBLK:  return 'b';
	case S_IFCHR:  return 'c';
	case S_IFIFO:  return 'p';
	case S_IFSOCK: return 's';
	case S_IFREG:  return '-';
	default:       return '?';
	}
}

/* One rwx triplet; special is setuid/setgid/sticky with its letter. */
static void cli_rwx(char *p, uint32_t bits, bool special, char letter)
{
	p[0] = bits & 4 ? 'r' : '-';
	p[1] = bits & 2 ? 'w' : '-';
	if (special)
		p[2] = bits & 1 ? letter : (char)toupper((unsigned char)letter);
	else
		p[2] = bits & 1 ? 'x' : '-';
}

void cli_mode_string(uint32_t mode, char buf[CLI_MODE_STRING_LEN])
{
	buf[0] = cli_type_char(mode);
	cli_rwx(buf + 1, (mode >> 6) & 7, mode & S_ISUID, 's');
	cli_rwx(buf + 4, (mode >> 3) & 7, mode & S_ISGID, 's');
	cli_rwx(buf + 7, mode & 7, mode & S_ISVTX, 't');
	buf[10] = '\0';
}

const char *cli_type_name(enum qs_type type)
{
	switch (type) {
	case QS_DIR:     return "directory";
	case QS_FILE:    return "regular file";
	case QS_SYMLINK: return "symbolic link";
	case QS_BLKDEV:  return "block device";
	case QS_CHRDEV:  return "character device";
	case QS_FIFO:    return "fifo";
	case QS_SOCKET:  return "socket";
	}
	return "unknown";
}

void cli_format_time(uint32_t t, bool seconds, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) ||
	    !strftime(buf, len, seconds ? "%Y-%m-%d %H:%M:%S %z" : "%Y-%m-%d %H:%M", &tm))
		snprintf(buf, len, "%u", t);
}

void cli_print_xattr_value(FILE *f, const void *value, size_t len)
{
	const unsigned char *v = value;
	size_t n = len;
	bool text = true;

	/* Values stored by tools usually carry their C string's NUL; getfattr hides it too. */
	if (n > 0 && v[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++) {
		if (!isprint(v[i]) && v[i] != '\t' && v[i] != '\n')
			text = false;
	}
	if (text) {
		fputc('"', f);
		for (size_t i = 0; i < n; i++) {
			if (v[i] == '"' || v[i] == '\\')
				fputc('\\', f);
			if (v[i] == '\n')
				fputs("\\n", f);
			else if (v[i] == '\t')
				fputs("\\t", f);
			else
				fputc(v[i], f);
		}
		fputc('"', f);
		return;
	}
	fputs("0x", f);
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x", v[i]);
}

static const char *json_type_name(enum qs_type type)
{
	switch (type) {
	case QS_DIR:     return "directory";
	case QS_FILE:    return "file";
	case QS_SYMLINK: return "symlink";
	case QS_BLKDEV:  return "block-device";
	case QS_CHRDEV:  return "char-device";
	case QS_FIFO:    return "fifo";
	case QS_SOCKET:  return "socket";
	}
	return "unknown";
}

void cli_print_json_inode(FILE *f, const char *path, const struct qs_inode *in, const char *target)
{
	fputs("{\"path\": ", f);
	json_print_string(f, path);
	fprintf(f, ", \"type\": \"%s\", \"inode\": %u, \"mode\": %u, \"nlink\": %u, \"uid\": %u, \"gid\": %u"
		", \"size\": %llu, \"mtime\": %u",
		json_type_name(in->type), in->ino, in->mode & 07777, in->nlink, in->uid, in->gid,
		(unsigned long long)in->size, in->mtime);
	if (in->type == QS_BLKDEV || in->type == QS_CHRDEV)
		fprintf(f, ", \"major\": %u, \"minor\": %u", cli_dev_major(in->rdev), cli_dev_minor(in->rdev));
	if (target) {
		fputs(", \"target\": ", f);
		json_print_string(f, target);
	}
}

/* ---- paths being walked ----------------------------------------------- */

ssize_t cli_path_push(struct cli_path *p, const char *name, size_t len)
{
	size_t old = p->len;
	size_t need = p->len + 1 + len + 1;

	if (need > p->cap) {
		size_t cap = p->cap ? p->cap : 256;
		char *buf;

		while (cap < need)
			cap *= 2;
		buf = realloc(p->buf, cap);
		if (!buf)
			return -ENOMEM;
		p->buf = buf;
		p->cap = cap;
	}
	if (p->len > 0 && p->buf[p->len - 1] != '/')
		p->buf[p->len++] = '/';
	memcpy(p->buf + p->len, name, len);
	p->len += len;
	p->buf[p->len] = '\0';
	return (ssize_t)old;
}

void cli_path_free(struct cli_path *p)
{
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
}

int cli_path_set_image(struct cli_path *p, const char *path)
{
	p->len = 0;
	if (cli_path_push(p, "/", 1) < 0)
		return -ENOMEM;
	while (*path) {
		size_t n;

		while (*path == '/')
			path++;
		n = strcspn(path, "/");
		if (n > 0 && cli_path_push(p, path, n) < 0)
			return -ENOMEM;
		path += n;
	}
	return 0;
}

/*
 * /proc/PID/cmdline is readable by every local user, for as long as the
 * process (a mount's daemon: for as long as the mount) lives.  A URL
 * argument that carries a secret (user:password@, a presigned query) is
 * moved to the heap, argv[i] pointed at the copy, and the original bytes
 * overwritten with the URL as qs_source_display_name() shows it.
 */
void cli_hide_secrets(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		size_t len = strlen(argv[i]);
		char *copy, *shown;

		if (!strstr(argv[i], "://") || !(shown = qs_source_display_name(argv[i])))
			continue;
		if (strcmp(shown, argv[i]) != 0 && (copy = strdup(argv[i]))) {
			memset(argv[i], 0, len);
			memcpy(argv[i], shown, strlen(shown) < len ? strlen(shown) : len);
			argv[i] = copy;
		}
		free(shown);
	}
}
