/*
 * common.h - what the offline subcommands (info, ls, stat, cat, extract)
 * share: the command table, the options every one of them takes, opening an
 * image, messages, and the formatting of modes, times and xattr values.
 *
 * Messages follow one rule: a problem with an image is one line on stderr,
 * "quash: IMAGE: what is wrong" (with the path inside the image when there
 * is one), and exit status 1; a bad command line is exit status 2.
 */
#ifndef QUASH_CLI_COMMON_H
#define QUASH_CLI_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json.h"
#include "quash.h"

#define CLI_EXIT_OK    0
#define CLI_EXIT_ERROR 1        /* bad image, missing path, failed write */
#define CLI_EXIT_USAGE 2        /* bad command line */

/* cli_common_option(): the option was common and parsing goes on. */
#define CLI_CONTINUE (-1)

/*
 * Deepest chain of directories that ls -R, extract and the path walkers
 * descend into.  Linux has no such limit, but a hostile image can nest
 * without end and every level costs an open directory while extracting.
 */
#define CLI_DEPTH_MAX 256

struct cli_command {
	const char *name;
	const char *usage;      /* "quash info [OPTIONS] IMAGE" */
	const char *summary;    /* one line for the command list */
	const char *help;       /* description, options, exit status, examples */
	int (*run)(int argc, char **argv);
};

extern const struct cli_command cmd_info, cmd_ls, cmd_stat, cmd_cat, cmd_extract, cmd_profile;
extern const struct cli_command cmd_verity;     /* cmd_verity.c: quash verity format|verify */

/* quash catalog SUBCOMMAND (cmd_catalog.c): argv[0] is "catalog". */
int catalog_main(int argc, char **argv);

/* The options every offline subcommand accepts. */
struct cli_common {
	const struct cli_command *cmd;
	uint64_t offset;
	bool offset_given;
	struct qs_source_options source;    /* --endpoint, --region, --cache-dir, ..., --verity */
};

/* Long-only options, past any character getopt could return. */
enum {
	CLI_OPT_ENDPOINT = 256,
	CLI_OPT_REGION,
	CLI_OPT_CACHE_DIR,
	CLI_OPT_CACHE_DIR_LIMIT,
	CLI_OPT_RETRY_SECONDS,
	CLI_OPT_PROXY,
	CLI_OPT_FALLBACK,
	CLI_OPT_VERITY,
	CLI_OPT_VERITY_FILE,
	CLI_OPT_VERITY_OFFSET,
	CLI_OPT_VERITY_SIG,
	CLI_OPT_VERITY_CERT,
};

#define CLI_COMMON_SHORTOPTS "hVo:"
/* The remote sources' options (common/source_opt.c's table); quash verity takes these alone. */
#define CLI_REMOTE_LONGOPTS \
	{ "endpoint", required_argument, NULL, CLI_OPT_ENDPOINT }, \
	{ "region", required_argument, NULL, CLI_OPT_REGION }, \
	{ "cache-dir", required_argument, NULL, CLI_OPT_CACHE_DIR }, \
	{ "cache-dir-limit", required_argument, NULL, CLI_OPT_CACHE_DIR_LIMIT }, \
	{ "retry-seconds", required_argument, NULL, CLI_OPT_RETRY_SECONDS }, \
	{ "proxy", required_argument, NULL, CLI_OPT_PROXY }, \
	{ "fallback", required_argument, NULL, CLI_OPT_FALLBACK }

#define CLI_COMMON_LONGOPTS \
	{ "offset", required_argument, NULL, 'o' }, \
	CLI_REMOTE_LONGOPTS, \
	{ "verity", required_argument, NULL, CLI_OPT_VERITY }, \
	{ "verity-file", required_argument, NULL, CLI_OPT_VERITY_FILE }, \
	{ "verity-offset", required_argument, NULL, CLI_OPT_VERITY_OFFSET }, \
	{ "verity-sig", required_argument, NULL, CLI_OPT_VERITY_SIG }, \
	{ "verity-cert", required_argument, NULL, CLI_OPT_VERITY_CERT }, \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, 'V' }

/* Options text for the help of every subcommand. */
#define CLI_COMMON_HELP \
	"  -o, --offset N        the image starts N bytes into the file (suffix K, M or G\n" \
	"                        for KiB, MiB, GiB; 0x for hexadecimal; -o offset=N as\n" \
	"                        mount takes it works too); without it a SIF\n" \
	"                        container's squashfs partition is found by itself\n" \
	"      --endpoint URL    S3 endpoint for s3:// images (MinIO, Ceph RGW, ...; else\n" \
	"                        AWS_ENDPOINT_URL), addressed path-style\n" \
	"      --region NAME     S3 region (else AWS_REGION or AWS_DEFAULT_REGION)\n" \
	"      --cache-dir DIR   keep fetched parts of remote images in DIR, shared safely\n" \
	"                        with other quash processes and mounts\n" \
	"      --cache-dir-limit SIZE  bound on DIR (suffix K, M or G)\n" \
	"      --retry-seconds N  give up a remote request after N seconds in all,\n" \
	"                        retries and transfers included (default 30)\n" \
	"      --proxy URL       send remote requests through this HTTP proxy or caching\n" \
	"                        tier (else http_proxy, https_proxy and no_proxy)\n" \
	"      --fallback URL    the same image elsewhere (the origin behind a caching\n" \
	"                        tier), read while the image's server does not answer\n" \
	"      --verity ROOTHASH  check every byte read against the image's dm-verity\n" \
	"                        tree and this root hash (hex); a byte that does not\n" \
	"                        match is an error, never output\n" \
	"      --verity-file FILE  the tree is in FILE (a path or URL; veritysetup\n" \
	"                        format's hash device), not appended to the image\n" \
	"      --verity-offset N  the tree's superblock is N bytes into FILE, or into\n" \
	"                        the image (default: appended after the image)\n" \
	"      --verity-sig FILE  FILE is a PKCS#7 signature of ROOTHASH, as veritysetup\n" \
	"                        open takes one; nothing is read unless it is signed\n" \
	"                        by a certificate in --verity-cert\n" \
	"      --verity-cert FILE  the certificates (PEM, or one DER) a signature must\n" \
	"                        come from or chain to\n" \
	"  -h, --help            show this help and exit\n" \
	"  -V, --version         show the version and exit\n"

#define CLI_EXIT_STATUS_HELP \
	"Exit status:\n" \
	"  0  success\n" \
	"  1  the image is unreadable or corrupt, a path is missing, or output failed\n" \
	"  2  the command line is wrong\n"

/* Handle getopt's answer 'opt' if it is a common option or an error:
 * returns CLI_CONTINUE, or the status to exit with. */
int cli_common_option(struct cli_common *co, int opt, const char *arg);

/* The whole option loop of a command that has no options of its own:
 * returns CLI_CONTINUE with optind at the first operand, or the status to exit with. */
int cli_parse_common_only(struct cli_common *co, int argc, char **argv);

/* The same for a command whose one option of its own is -j/--json (info, stat). */
int cli_parse_common_json(struct cli_common *co, int argc, char **argv, bool *json);

/* "quash CMD: message" plus a pointer to --help; returns CLI_EXIT_USAGE. */
int cli_usage(const struct cli_command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "quash: IMAGE: message", or "quash: IMAGE: PATH: message" when path is not NULL. */
void cli_error(const char *image, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Overwrite secrets in URL arguments in place (the process list shows them); argv[i] points at copies. */
void cli_hide_secrets(int argc, char **argv);

/* Open IMAGE as the common options say; on failure report it and return CLI_EXIT_ERROR
 * (CLI_EXIT_USAGE for a --verity-sig without --verity-cert, or the reverse). */
int cli_open_image(const struct cli_common *co, const char *image, struct qs_image **out);

/* Resolve PATH in the image; on failure report it and return CLI_EXIT_ERROR. */
int cli_lookup(struct qs_image *img, const char *image, const char *path, struct qs_inode *out);

/* Flush stdout; report a failed write (a full disk, a closed pipe) and return CLI_EXIT_ERROR. */
int cli_finish_stdout(int status);

/* "quash VERSION" on stdout; returns the exit status. */
int cli_print_version(void);

/* ---- formatting -------------------------------------------------------- */

#define CLI_MODE_STRING_LEN 11   /* "drwxr-xr-x" and the NUL */

void cli_mode_string(uint32_t mode, char buf[CLI_MODE_STRING_LEN]);
const char *cli_type_name(enum qs_type type);

/* mtime in local time (TZ applies): "%Y-%m-%d %H:%M" when !seconds, else with ":%S %z". */
void cli_format_time(uint32_t t, bool seconds, char *buf, size_t len);

/* Devices store the kernel's new_encode_dev() form. */
static inline unsigned cli_dev_major(uint32_t rdev) { return (rdev & 0xfff00) >> 8; }
static inline unsigned cli_dev_minor(uint32_t rdev) { return (rdev & 0xff) | ((rdev >> 12) & 0xfff00); }

/* An xattr value the way getfattr shows it: "text" when printable, else 0xHEX. */
void cli_print_xattr_value(FILE *f, const void *value, size_t len);


/* The fields ls --json and stat --json share, as an open JSON object: "{...", without
 * the closing brace, so that the caller can add its own.  target: a symlink's, or NULL. */
void cli_print_json_inode(FILE *f, const char *path, const struct qs_inode *in, const char *target);

/* ---- paths being walked ----------------------------------------------- */

/* A '/'-separated path that grows and shrinks as a walk descends and returns. */
struct cli_path {
	char *buf;
	size_t len, cap;
};

/* Append "/name" (or "name" to an empty path); returns the length to cut back to, or -ENOMEM. */
ssize_t cli_path_push(struct cli_path *p, const char *name, size_t len);
static inline void cli_path_pop(struct cli_path *p, size_t len) { p->len = len; p->buf[len] = '\0'; }
void cli_path_free(struct cli_path *p);

/* Set p to PATH inside an image in canonical form: "/" and then the components
 * separated by single slashes; returns 0 or -ENOMEM. */
int cli_path_set_image(struct cli_path *p, const char *path);

#endif
