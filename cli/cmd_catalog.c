/*
 * cmd_catalog.c - quash catalog SUBCOMMAND: catalogs, the directories of
 * images that one `quash mount --catalog` serves.
 *
 *   ls MOUNTPOINT       the images of a catalog mount: which are open, their
 *                       version, reads, idle time (its .quash-catalog file)
 *   refresh MOUNTPOINT  list the catalog's source again now (.quash-refresh)
 *   list SPEC           every object a remote catalog lists (qs_source_list()), one
 *                       "KEY<TAB>SIZE<TAB>MTIME<TAB>ETAG" line each: a developer's
 *                       and the tests' window on the library.
 *
 * Each subcommand is a struct cli_command named "catalog SUB", so that its
 * messages read "quash: catalog SUB: ..." like the other commands'.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "json.h"
#include "source.h"

/*
 * Print 'len' bytes of text from a server or a daemon with control
 * characters as C escapes (\t, \n, \xHH), and backslashes as \\ unless
 * the text comes escaped already (the daemon's status writes them \x5c):
 * a name then cannot move the terminal's cursor or forge a row of the
 * table.  Returns the width printed; with 'f' NULL it only counts.
 */
static size_t print_escaped_as(FILE *f, const char *s, size_t len, bool backslash)
{
	size_t width = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\\' && backslash ? "\\\\" : NULL;
		char hex[5];

		if (!esc && (c < 0x20 || c == 0x7f)) {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			esc = hex;
		}
		if (esc) {
			if (f)
				fputs(esc, f);
			width += strlen(esc);
		} else {
			if (f)
				fputc(c, f);
			width++;
		}
	}
	return width;
}

static size_t print_escaped(FILE *f, const char *s, size_t len)
{
	return print_escaped_as(f, s, len, true);
}

static int list_print(void *arg, const struct qs_list_entry *ent)
{
	(void)arg;
	print_escaped(stdout, ent->key, strlen(ent->key));
	if (ent->target) {
		fputs(" -> ", stdout);
		print_escaped(stdout, ent->target, strlen(ent->target));
		putchar('\n');
		return ferror(stdout) ? -EIO : 0;
	}
	printf("\t%" PRIu64 "\t%" PRId64 "\t", ent->size, ent->mtime);
	print_escaped(stdout, ent->etag, strlen(ent->etag));
	if (ent->root_hash)
		printf("\t%s", ent->root_hash);     /* hex digits only (source_list.c) */
	putchar('\n');
	return ferror(stdout) ? -EIO : 0;
}

static int list_main(int argc, char **argv);

static const struct cli_command cmd_catalog_list = {
	.name = "catalog list",
	.usage = "quash catalog list [OPTIONS] SPEC",
	.summary = "list the objects of a remote catalog",
	.help =
		"SPEC is s3://BUCKET/PREFIX/ (ListObjectsV2, every page), an http(s):// URL\n"
		"ending in '/' (nginx's autoindex_format json listing, directories\n"
		"included) or an http(s):// URL of a text index (one KEY [SIZE [ROOTHASH]] a\n"
		"line, or NAME -> TARGET for an alias).  Prints KEY<TAB>SIZE<TAB>MTIME<TAB>ETAG\n"
		"for each object (and <TAB>ROOTHASH when the index gives one) and\n"
		"NAME -> TARGET for each alias, keys relative to\n"
		"SPEC; unsafe keys (\"..\", control characters, ...) are left out.  In KEY and\n"
		"ETAG a control character prints as \\xHH (\\t, \\n), a backslash as \\\\.\n"
		"\n"
		"Options:\n"
		"      --endpoint URL    S3 endpoint (else AWS_ENDPOINT_URL), addressed path-style\n"
		"      --region NAME     S3 region (else AWS_REGION or AWS_DEFAULT_REGION)\n"
		"      --retry-seconds N  give up a request after N seconds in all (default 30)\n"
		"      --proxy URL       send requests through this HTTP proxy\n"
		"  -h, --help            show this help and exit\n"
		"  -V, --version         show the version and exit\n"
		"\n"
		"Exit status:\n"
		"  0  success\n"
		"  1  the catalog could not be listed, or output failed\n"
		"  2  the command line is wrong\n",
	.run = list_main,
};

static int list_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "endpoint", required_argument, NULL, CLI_OPT_ENDPOINT },
		{ "region", required_argument, NULL, CLI_OPT_REGION },
		{ "retry-seconds", required_argument, NULL, CLI_OPT_RETRY_SECONDS },
		{ "proxy", required_argument, NULL, CLI_OPT_PROXY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	struct cli_common co = { .cmd = &cmd_catalog_list };
	int opt, st;

	while ((opt = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		st = cli_common_option(&co, opt, optarg);
		if (st != CLI_CONTINUE)
			return st;
	}
	if (optind + 1 != argc)
		return cli_usage(co.cmd, optind == argc ? "missing SPEC" : "one SPEC only");
	if (qs_source_list(argv[optind], &co.source, list_print, NULL) != 0) {
		fflush(stdout);
		fprintf(stderr, "quash: catalog list: %s\n", ferror(stdout) ? "standard output: write error"
									  : qs_last_error());
		return CLI_EXIT_ERROR;
	}
	return cli_finish_stdout(CLI_EXIT_OK);
}

/* ---- ls and refresh: the control files of a mounted catalog --------------- */

#define CATALOG_STATUS_FILE ".quash-catalog"
#define CATALOG_REFRESH_FILE ".quash-refresh"
#define CATALOG_STATUS_MAX (256u << 20)     /* 1,000,000 images of 256 bytes */
#define CATALOG_COLUMNS 10
#define CATALOG_REFRESH_POLL_MS 20          /* between looks at a refresh the daemon is doing */
#define CATALOG_REFRESH_WAIT_S 600          /* a listing not done by then is reported, not waited for */

/* The whole control file 'name' of the catalog mounted at 'mp', or NULL with a message. */
/* Control file 'name' of the catalog mounted at 'mp', opened; -1 with a message. */
static int open_control(const char *cmd, const char *mp, const char *name)
{
	int dfd = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = dfd < 0 ? -1 : openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int err = errno;

	if (dfd >= 0)
		close(dfd);
	if (fd < 0)
		fprintf(stderr, "quash: %s: %s: %s\n", cmd, mp, dfd >= 0 && err == ENOENT ?
			"not a catalog mount (quash mount --catalog)" : strerror(err));
	return fd;
}

static char *read_control(const char *cmd, const char *mp, const char *name, size_t *len)
{
	char *buf = NULL, *p;
	size_t cap = 0;
	ssize_t n;
	int fd;

	*len = 0;
	fd = open_control(cmd, mp, name);
	if (fd < 0)
		return NULL;
	do {
		if (*len + 65536 > cap) {
			cap = cap ? cap * 2 : 65536;
			p = cap <= CATALOG_STATUS_MAX ? realloc(buf, cap + 1) : NULL;
			if (!p) {
				fprintf(stderr, "quash: %s: %s: status too large\n", cmd, mp);
				free(buf);
				close(fd);
				return NULL;
			}
			buf = p;
		}
		n = read(fd, buf + *len, cap - *len);
		if (n > 0)
			*len += (size_t)n;
	} while (n > 0 || (n < 0 && errno == EINTR));
	if (n < 0) {
		fprintf(stderr, "quash: %s: %s: %s\n", cmd, mp, strerror(errno));
		free(buf);
		buf = NULL;
	} else {
		buf[*len] = '\0';
	}
	close(fd);
	return buf;
}

/* One row of the status table: '#' lines other than the column names are printed as they are, escaped (the daemon's \xHH as they are). */
static void status_row(char *line, size_t *width, bool print)
{
	const char *f = line;

	if (line[0] == '#') {
		if (!strchr(line, '\t')) {
			if (print) {
				print_escaped_as(stdout, line, strlen(line), false);
				putchar('\n');
			}
			return;
		}
		f = line + 2;       /* "# name<TAB>...": the column names */
	}
	for (int col = 0; col < CATALOG_COLUMNS && f; col++) {
		const char *tab = strchr(f, '\t');
		size_t len = tab ? (size_t)(tab - f) : strlen(f);
		size_t shown = print_escaped_as(print ? stdout : NULL, f, len, false);

		if (!print && shown > width[col])
			width[col] = shown;
		if (print && tab)
			printf("%*s", (int)(width[col] - shown + 2), "");
		f = tab ? tab + 1 : NULL;
	}
	if (print)
		printf("\n");
}

/*
 * --json: one object per image, the columns by name, numbers as numbers
 * (idle_s -1, etag and error "-" become null).
 */
static const char *const status_columns[CATALOG_COLUMNS] = {
	"name", "state", "version", "size", "open_files", "reads", "bytes_read", "idle_s", "etag", "error",
};

/* A number of the status as JSON has them: an optional '-' and digits, no leading zero. */
static bool json_integer(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		return s[1] == '\0';
	return *s >= '1' && *s <= '9' && s[strspn(s, "0123456789")] == '\0';
}

static void print_status_json(const char *text)
{
	char *copy = strdup(text), *line, *save = NULL;
	bool first = true;

	if (!copy)
		return;
	printf("[");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f = line, *tab;

		if (line[0] == '#')
			continue;
		printf("%s\n  {", first ? "" : ",");
		first = false;
		for (int col = 0; col < CATALOG_COLUMNS && f; col++) {
			tab = strchr(f, '\t');
			if (tab)
				*tab = '\0';
			printf("%s\"%s\": ", col ? ", " : "", status_columns[col]);
			if ((col == 7 && strcmp(f, "-1") == 0) || (col >= 8 && strcmp(f, "-") == 0))
				printf("null");
			else if (col >= 2 && col <= 7)
				printf("%s", json_integer(f) ? f : "null");
			else
				json_print_string(stdout, f);
			f = tab ? tab + 1 : NULL;
		}
		printf("}");
	}
	printf("%s]\n", first ? "" : "\n");
	free(copy);
}

/* The status table with its columns aligned. */
static void print_status(const char *text)
{
	size_t width[CATALOG_COLUMNS] = { 0 };

	for (int print = 0; print < 2; print++) {
		char *copy = strdup(text), *line, *save = NULL;

		if (!copy) {
			fputs(text, stdout);
			return;
		}
		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			status_row(line, width, print);
		free(copy);
	}
}

/*
 * Ask the daemon of the catalog at 'mp' for a listing and wait for it here:
 * the daemon answers at once ("pending", then "done N images" or "failed
 * ERROR" once the listing is merged and the kernel told), so no request of
 * its waits for the listing.  Prints "MP: N images"; 0 or CLI_EXIT_ERROR.
 */
static int refresh_one(const char *cmd, const char *mp)
{
	char text[512];
	ssize_t n = -1;
	int fd = open_control(cmd, mp, CATALOG_REFRESH_FILE);

	if (fd < 0)
		return CLI_EXIT_ERROR;
	for (long waited = 0; waited <= CATALOG_REFRESH_WAIT_S * 1000L; waited += CATALOG_REFRESH_POLL_MS) {
		n = pread(fd, text, sizeof(text) - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || strncmp(text, "pending\n", (size_t)n) != 0 || n == 0)
			break;
		nanosleep(&(struct timespec){ 0, CATALOG_REFRESH_POLL_MS * 1000000L }, NULL);
	}
	close(fd);
	if (n < 0) {
		fprintf(stderr, "quash: %s: %s: %s\n", cmd, mp, strerror(errno));
		return CLI_EXIT_ERROR;
	}
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	if (strncmp(text, "done ", 5) == 0) {
		printf("%s: ", mp);
		print_escaped(stdout, text + 5, strlen(text + 5));   /* a hostile mount's answer too */
		putchar('\n');
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "quash: %s: %s: ", cmd, mp);
	if (strncmp(text, "failed ", 7) == 0)
		print_escaped(stderr, text + 7, strlen(text + 7));
	else
		fputs(strcmp(text, "pending") == 0 ? "the listing did not end in time" : "not a catalog's answer",
		      stderr);
	fputc('\n', stderr);
	return CLI_EXIT_ERROR;
}

static int control_main(const struct cli_command *cmd, int argc, char **argv, bool refresh)
{
	static const struct option ls_longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	const struct option *longopts = refresh ? ls_longopts + 1 : ls_longopts;
	struct cli_common co = { .cmd = cmd };
	int opt, st, status = CLI_EXIT_OK;
	bool json = false;

	while ((opt = getopt_long(argc, argv, refresh ? "hV" : "jhV", longopts, NULL)) != -1) {
		if (opt == 'j' && !refresh) {
			json = true;
			continue;
		}
		st = cli_common_option(&co, opt, optarg);
		if (st != CLI_CONTINUE)
			return st;
	}
	if (json && argc - optind > 1)
		return cli_usage(cmd, "--json takes one MOUNTPOINT");
	if (optind == argc)
		return cli_usage(cmd, "missing MOUNTPOINT");
	for (int i = optind; i < argc; i++) {
		size_t len;
		char *text;

		if (refresh) {
			if (refresh_one(cmd->name, argv[i]) != CLI_EXIT_OK)
				status = CLI_EXIT_ERROR;
			continue;
		}
		text = read_control(cmd->name, argv[i], CATALOG_STATUS_FILE, &len);
		if (!text) {
			status = CLI_EXIT_ERROR;
			continue;
		}
		if (json) {
			print_status_json(text);
		} else {
			print_status(text);
		}
		free(text);
	}
	return cli_finish_stdout(status);
}

static int ls_main(int argc, char **argv);
static int refresh_main(int argc, char **argv);

static const struct cli_command cmd_catalog_ls = {
	.name = "catalog ls",
	.usage = "quash catalog ls [--json] MOUNTPOINT...",
	.summary = "the images of a catalog mount: open or not, version, reads, idle time",
	.help =
		"Columns: name, state (open, closed, failed), version (1, then one more each\n"
		"time the image is replaced), size, files open, reads and bytes read from\n"
		"the source, seconds since last use (-1: never opened), ETag, and why a\n"
		"failed image could not be opened.  The first lines give the totals: images,\n"
		"open ones, old versions still open for their readers, the shared block\n"
		"cache.  Control characters and backslashes in names, ETags and errors print\n"
		"as \\xHH (\\t, \\n), so that no name can move the terminal's cursor or forge\n"
		"a row.\n"
		"\n"
		"Options:\n"
		"  -j, --json            the images as a JSON array of objects, one per image\n"
		"  -h, --help            show this help and exit\n"
		"  -V, --version         show the version and exit\n"
		"\n"
		"Exit status:\n"
		"  0  success\n"
		"  1  a MOUNTPOINT is not a catalog mount, or cannot be read\n"
		"  2  the command line is wrong\n",
	.run = ls_main,
};

static const struct cli_command cmd_catalog_refresh = {
	.name = "catalog refresh",
	.usage = "quash catalog refresh MOUNTPOINT...",
	.summary = "list a catalog mount's source again now",
	.help =
		"New images appear, removed ones go and replaced ones get a new version, as\n"
		"the periodic listing (-o refresh=) and inotify would do later.  Prints the\n"
		"number of images.\n"
		"\n"
		"Options:\n"
		"  -h, --help            show this help and exit\n"
		"  -V, --version         show the version and exit\n"
		"\n"
		"Exit status:\n"
		"  0  success\n"
		"  1  not a catalog mount, or the source could not be listed (the last listing stays)\n"
		"  2  the command line is wrong\n",
	.run = refresh_main,
};

static int ls_main(int argc, char **argv)
{
	return control_main(&cmd_catalog_ls, argc, argv, false);
}

static int refresh_main(int argc, char **argv)
{
	return control_main(&cmd_catalog_refresh, argc, argv, true);
}

/* ---- the subcommand dispatcher ------------------------------------------------ */

struct catalog_sub {
	const char *name;
	const struct cli_command *cmd;
};

static const struct catalog_sub catalog_subs[] = {
	{ "ls", &cmd_catalog_ls },
	{ "refresh", &cmd_catalog_refresh },
	{ "list", &cmd_catalog_list },
};

#define N_CATALOG_SUBS (sizeof(catalog_subs) / sizeof(catalog_subs[0]))

static void catalog_usage(FILE *f)
{
	fprintf(f, "Usage: quash catalog SUBCOMMAND [OPTIONS] ARGS...\n"
		"Catalogs: directories of images served by one 'quash mount --catalog'.\n"
		"\n"
		"Subcommands:\n");
	for (size_t i = 0; i < N_CATALOG_SUBS; i++)
		fprintf(f, "  %-9s %s\n", catalog_subs[i].name, catalog_subs[i].cmd->summary);
	fprintf(f, "\n'quash catalog SUBCOMMAND --help' describes each one.\n");
}

/* getopt names the program as argv[0]: "quash: catalog SUB". */
#define CATALOG_PROGNAME_MAX 48

int catalog_main(int argc, char **argv)
{
	static char progname[CATALOG_PROGNAME_MAX];
	const char *sub = argc >= 2 ? argv[1] : NULL;

	if (!sub) {
		catalog_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		catalog_usage(stdout);
		return cli_finish_stdout(CLI_EXIT_OK);
	}
	if (!strcmp(sub, "-V") || !strcmp(sub, "--version"))
		return cli_print_version();
	for (size_t i = 0; i < N_CATALOG_SUBS; i++) {
		if (strcmp(sub, catalog_subs[i].name))
			continue;
		snprintf(progname, sizeof(progname), "quash: %s", catalog_subs[i].cmd->name);
		argv[1] = progname;
		return catalog_subs[i].cmd->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "quash: catalog: unknown subcommand '%s'\nTry 'quash catalog --help' for more information.\n",
		sub);
	return CLI_EXIT_USAGE;
}
