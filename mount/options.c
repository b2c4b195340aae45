/*
 * options.c - the mount's command lines.
 *
 * Three callers share one parser:
 *   quash mount [-f] [-d] [-s] [-o OPTIONS] IMAGE MOUNTPOINT
 *   squashfuse_ll [-f] [-d] [-s] [-o OPTIONS] IMAGE MOUNTPOINT   (Apptainer, SingularityCE)
 *   quash IMAGE MOUNTPOINT -o OPTIONS                            (mount.fuse3, fstab)
 * Options may come before or after the two paths, "-oOPTS" and "-o OPTS"
 * alike, and an empty "-o ''" (Apptainer passes one) is fine.  Mount flags
 * the kernel understands are passed on; the rest are ours or ignored as
 * mount(8) bookkeeping.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount_int.h"
#include "size.h"
#include "source_opt.h"

#define QM_MAX_READAHEAD_KB (64u << 10)

static const char *msgname_of(const struct qm_options *opt)
{
	return opt->msgname ? opt->msgname : "quash: mount";
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

static int add_kernel_opt(struct qm_options *opt, const char *o)
{
	size_t len = strlen(opt->kernel_opts);

	if (len + strlen(o) + 2 > sizeof(opt->kernel_opts))
		return -E2BIG;
	snprintf(opt->kernel_opts + len, sizeof(opt->kernel_opts) - len, "%s%s", len ? "," : "", o);
	return 0;
}

bool qm_has_kernel_opt(const struct qm_options *opt, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = opt->kernel_opts; (p = strstr(p, name)); p += len) {
		if ((p == opt->kernel_opts || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
			return true;
	}
	return false;
}

static int bad_value(const struct qm_options *opt, const char *name, const char *value)
{
	fprintf(stderr, "%s: bad value in mount option '%s=%s'\n", msgname_of(opt), name, value);
	return -EINVAL;
}

#define STR(x) #x
#define XSTR(x) STR(x)
/* A field of struct qm_options: where a value goes and how wide it is. */
#define F(f) offsetof(struct qm_options, f), sizeof(((struct qm_options *)0)->f)
#define NONE 0, 0

/* What a -o option takes and does. */
enum opt_kind {
	OPT_HELP,                   /* a command-line flag qm_parse_args() reads: only a line of --help */
	OPT_KERNEL,                 /* "NAME": handed to the kernel's FUSE mount as it is */
	OPT_IGNORED,                /* "NAME" or "NAME=...": mount(8) and fstab vocabulary, no effect */
	OPT_ON, OPT_OFF,            /* "NAME": sets or clears a bool */
	OPT_SET,                    /* "NAME": sets an enum to min */
	OPT_UINT,                   /* "NAME=N", decimal or 0x, within [min, max] */
	OPT_SIZE,                   /* "NAME=SIZE" (size_parse), within [min, max] */
	OPT_TEXT,                   /* "NAME=TEXT", kept by pointer; min 1: not empty */
	OPT_VALUE,                  /* "NAME=VALUE": then() checks and keeps it */
	OPT_SOURCE,                 /* "NAME=VALUE": a remote option, source_opt_set() */
};

struct mount_opt {
	const char *name;           /* as -o gives it */
	enum opt_kind kind;
	size_t field, width;        /* in struct qm_options */
	uint64_t min, max;
	int (*then)(struct qm_options *opt, const char *value);     /* after the field is set; -EINVAL: bad value */
	const char *usage;          /* --help's left column: "-o NAME=ARG" if NULL */
	const char *arg;            /* --help: what the value is */
	const char *help;           /* NULL: not in --help; a line after the first is indented */
	size_t also;                /* a bool also set (-o debug: foreground, uid=: uid_set); 0: none */
};
#define ALSO(f) .also = offsetof(struct qm_options, f)
_Static_assert(offsetof(struct qm_options, progname) == 0, "no bool of struct qm_options is at 0");

static int then_offset(struct qm_options *opt, const char *value)
{
	(void)value;
	opt->offset_given = true;
	opt->source.image_offset = opt->offset;      /* where a profile finds the superblock */
	opt->source.image_offset_given = true;
	return 0;
}

/* squashfuse_ll passes max_read= to the kernel; so do we, checked. */
static int then_max_read(struct qm_options *opt, const char *value)
{
	char kopt[32];

	(void)value;
	snprintf(kopt, sizeof(kopt), "max_read=%u", opt->max_read);
	return add_kernel_opt(opt, kopt);
}

static int then_image_access(struct qm_options *opt, const char *value)
{
	if (strcmp(value, "all") != 0 && strcmp(value, "file") != 0)
		return -EINVAL;
	opt->catalog_any_reader = strcmp(value, "all") == 0;
	return 0;
}

/*
 * Every option, in the order of --help.  Those without help text are
 * accepted but not shown: the kernel flags but the first, the negations,
 * mount(8)'s words and squashfuse_ll's threading knobs.
 */
/* A remote option: source_opt_set() checks and keeps its value. */
#define REMOTE(name, arg, help) { name, OPT_SOURCE, NONE, 0, 0, NULL, NULL, arg, help }

static const struct mount_opt mount_opts[] = {
	{ NULL, OPT_HELP, NONE, 0, 0, NULL, "-f", NULL, "foreground operation" },
	{ "debug", OPT_ON, F(debug), 0, 0, NULL, "-d   -o debug", NULL, "enable debug output (implies -f)",
	  ALSO(foreground) },
	{ NULL, OPT_HELP, NONE, 0, 0, NULL, "-s", NULL, "one worker thread" },
	{ "offset", OPT_SIZE, F(offset), 0, UINT64_MAX, then_offset, NULL, "N",
	  "offset N bytes into ARCHIVE to mount (suffix K, M, G;\n0x for hexadecimal)" },
	{ "subdir", OPT_TEXT, F(subdir), 0, 0, NULL, NULL, "PATH", "mount subdirectory PATH of ARCHIVE" },
	{ "notify_pipe", OPT_TEXT, F(notify_pipe), 0, 0, NULL, NULL, "PATH",
	  "named pipe that will receive 's' (success)\nor 'f' (failure) when the mountpoint is ready" },
	{ "timeout", OPT_UINT, F(idle_timeout), 0, UINT32_MAX, NULL, NULL, "N", "idle N seconds for automatic unmount" },
	{ "catalog", OPT_ON, F(catalog), 0, 0, NULL, "--catalog  -o catalog", NULL,
	  "SOURCE is a catalog of images (see quash-mount(1))" },
	{ "idle", OPT_UINT, F(catalog_idle), 1, UINT32_MAX, NULL, NULL, "N",
	  "catalog: close an image unused for N seconds (default " XSTR(QC_DEFAULT_IDLE) ")" },
	{ "refresh", OPT_UINT, F(catalog_refresh), 1, UINT32_MAX, NULL, NULL, "N",
	  "catalog: list SOURCE again every N seconds (default " XSTR(QC_DEFAULT_REFRESH) ")" },
	{ "open_max", OPT_UINT, F(catalog_open_max), 1, UINT32_MAX, NULL, NULL, "N",
	  "catalog: images open at once (default " XSTR(QC_DEFAULT_OPEN_MAX) ")" },
	{ "image_access", OPT_VALUE, NONE, 0, 0, then_image_access, "-o image_access=all", NULL,
	  "catalog with allow_other: serve every image to every user\n(default 'file': only to those who may read its file)" },
	{ "uid", OPT_UINT, F(uid), 0, UINT32_MAX, NULL, NULL, "N", "set file owner to uid N", ALSO(uid_set) },
	{ "gid", OPT_UINT, F(gid), 0, UINT32_MAX, NULL, NULL, "N", "set file group to gid N", ALSO(gid_set) },
	{ "cache_size", OPT_SIZE, F(cache_bytes), 0, SIZE_MAX, NULL, NULL, "SIZE",
	  "bytes of decompressed blocks held (K, M, G suffixes)" },
	{ "threads", OPT_UINT, F(threads), 1, QM_MAX_THREADS, NULL, NULL, "N",
	  "worker threads (default: one per CPU the daemon may use,\n" XSTR(QM_DEFAULT_THREADS_MIN) " to " XSTR(QM_DEFAULT_THREADS_MAX) ")" },
	{ "notify_store", OPT_ON, F(notify_store), 0, 0, NULL, "-o [no]notify_store", NULL,
	  "push whole decompressed blocks into the page cache (default on)" },
	{ "holder", OPT_ON, F(holder), 0, 0, NULL, "-o [no]holder", NULL,
	  "keep the mount in a small process of its own that starts\nthe server again if it dies (default on; not\nfor a catalog or with -o uring)" },
	{ "decompress_ahead", OPT_ON, F(decompress_ahead), 0, 0, NULL, "-o [no]decompress_ahead", NULL,
	  "decompress a sequential reader's next blocks on every core\n(default on)" },
	{ "uring", OPT_ON, F(uring), 0, 0, NULL, "-o [no]uring", NULL,
	  "serve over FUSE io_uring where the kernel offers it (default off)" },
	{ "readahead", OPT_UINT, F(readahead_kb), 0, QM_MAX_READAHEAD_KB, NULL, NULL, "KB",
	  "the mount's readahead (default: the kernel's, 128; root only)", ALSO(readahead_given) },
	REMOTE("endpoint", "URL", "S3 endpoint for s3:// images (else AWS_ENDPOINT_URL)"),
	REMOTE("region", "NAME", "S3 region (else AWS_REGION)"),
	REMOTE("cache_dir", "DIR", "keep fetched parts of remote images in DIR (shared)"),
	REMOTE("proxy", "URL",
	  "remote requests through this HTTP proxy or caching tier\n(else http_proxy, https_proxy, no_proxy)"),
	REMOTE("fallback", "URL",
	  "the same image elsewhere (the origin behind a caching\ntier), read while IMAGE's server does not answer"),
	REMOTE("cache_dir_limit", "SIZE", "bound on cache_dir"),
	REMOTE("chunk_size", "SIZE", "remote fetch size (default 4M)"),
	REMOTE("remote_cache", "SIZE", "remote chunks held in memory (default 256M)"),
	REMOTE("retry_seconds", "N", "give up a remote read after N seconds of retries"),
	REMOTE("record", "FILE",
	  "write the ranges of the image read to FILE, a prefetch\nprofile (every 10 s and at unmount; docs/profile.md)"),
	REMOTE("prefetch", "FILE",
	  "fetch the ranges of profile FILE in the background at mount\n"
	  "(default: IMAGE.profile, or URL.profile, if there is one)"),
	REMOTE("verity", "ROOTHASH",
	  "check every byte read against the image's dm-verity tree\nand this root hash (hex): a mismatch is EIO"),
	REMOTE("verity_file", "PATH|URL", "the verity tree is in this file, not appended to IMAGE"),
	REMOTE("verity_offset", "N", "the verity tree's superblock is N bytes into its file"),
	REMOTE("verity_sig", "FILE",
	  "FILE is a PKCS#7 signature of the root hash, as\nveritysetup open takes one: refused unless signed "
	  "by\na certificate in verity_cert="),
	REMOTE("verity_cert", "FILE",
	  "the certificates (PEM) a signature must come from or\nchain to; with --catalog, every image "
	  "needs\nNAME.roothash and a NAME.roothash.p7s signed by one"),
	{ "prefetch", OPT_SET, F(prefetch_beside), QM_BESIDE_YES, 0, NULL, NULL, NULL,
	  "look for URL.profile beside a remote image too" },
	{ "noprefetch", OPT_SET, F(prefetch_beside), QM_BESIDE_NO, 0, NULL, NULL, NULL, "do not look for IMAGE.profile" },
	{ "fsname", OPT_TEXT, F(fsname), 1, 0, NULL, NULL, "NAME",
	  "the mount table's source (default: the image, secrets hidden)" },
	{ "log", OPT_TEXT, F(log_file), 1, 0, NULL, NULL, "FILE",
	  "the daemon's messages, time-stamped, to FILE (default: syslog)" },
	{ "max_read", OPT_SIZE, F(max_read), 4096, UINT32_MAX, then_max_read, NULL, "N",
	  "largest read the kernel sends (a kernel mount option)" },
	{ "default_permissions", OPT_IGNORED, NONE, 0, 0, NULL, NULL, NULL,
	  "accepted; always on (the kernel checks the image's modes)" },
	{ "allow_other", OPT_KERNEL, NONE, 0, 0, NULL, "-o allow_other,allow_root,dev,suid,exec,...", NULL,
	  "kernel mount flags (allow_other and\nallow_root need user_allow_other in /etc/fuse.conf\nunless you are root)" },
	{ NULL, OPT_HELP, NONE, 0, 0, NULL, "-V, --version", NULL, "show the version and exit" },
	{ NULL, OPT_HELP, NONE, 0, 0, NULL, "-h, --help", NULL, "show this help and exit" },

	{ "nonotify_store", OPT_OFF, F(notify_store) },
	{ "nouring", OPT_OFF, F(uring) },
	{ "noholder", OPT_OFF, F(holder) },
	{ "nodecompress_ahead", OPT_OFF, F(decompress_ahead) },
	{ "allow_root", OPT_KERNEL }, { "dev", OPT_KERNEL }, { "nodev", OPT_KERNEL }, { "suid", OPT_KERNEL },
	{ "nosuid", OPT_KERNEL }, { "exec", OPT_KERNEL }, { "noexec", OPT_KERNEL }, { "ro", OPT_KERNEL },
	{ "auto_unmount", OPT_KERNEL },
#define IGNORED(name) { name, OPT_IGNORED }
	IGNORED("rw"), IGNORED("defaults"), IGNORED("auto"), IGNORED("noauto"), IGNORED("user"), IGNORED("nouser"),
	IGNORED("users"), IGNORED("_netdev"), IGNORED("nofail"), IGNORED("atime"), IGNORED("noatime"),
	IGNORED("relatime"), IGNORED("norelatime"), IGNORED("strictatime"), IGNORED("nodiratime"),
	IGNORED("diratime"), IGNORED("async"), IGNORED("sync"), IGNORED("clone_fd"), IGNORED("max_idle_threads"),
	IGNORED("max_threads"), IGNORED("lazytime"), IGNORED("nolazytime"),
#undef IGNORED
};

static bool takes_value(const struct mount_opt *m)
{
	return m->kind == OPT_UINT || m->kind == OPT_SIZE || m->kind == OPT_TEXT || m->kind == OPT_VALUE ||
	       m->kind == OPT_SOURCE;
}

/* The row for 'name', given with a value or not; NULL if none. */
static const struct mount_opt *find_opt(const char *name, bool has_value)
{
	for (size_t i = 0; i < sizeof(mount_opts) / sizeof(mount_opts[0]); i++) {
		const struct mount_opt *m = &mount_opts[i];

		if (m->name && strcmp(m->name, name) == 0 && (m->kind == OPT_IGNORED || takes_value(m) == has_value))
			return m;
	}
	return NULL;
}

static void store(struct qm_options *opt, const struct mount_opt *m, uint64_t n)
{
	void *field = (char *)opt + m->field;

	if (m->width == sizeof(uint64_t))
		*(uint64_t *)field = n;
	else
		*(uint32_t *)field = (uint32_t)n;
}

/* Do what row 'm' says with 'value' (NULL for a bare option): 0, -EINVAL for a bad value, or -errno. */
static int apply(struct qm_options *opt, const struct mount_opt *m, const char *value)
{
	uint64_t n;

	switch (m->kind) {
	case OPT_HELP:
	case OPT_IGNORED:
		return 0;
	case OPT_KERNEL:
		return add_kernel_opt(opt, m->name);
	case OPT_ON:
	case OPT_OFF:
		*(bool *)((char *)opt + m->field) = m->kind == OPT_ON;
		break;
	case OPT_UINT:
	case OPT_SIZE:
		if ((m->kind == OPT_UINT ? parse_u64(value, &n) : size_parse(value, &n)) || n < m->min || n > m->max)
			return -EINVAL;
		store(opt, m, n);
		break;
	case OPT_TEXT:
		if (m->min && !*value)
			return -EINVAL;
		*(const char **)((char *)opt + m->field) = value;
		break;
	case OPT_SOURCE:
		return source_opt_set(&opt->source, m->name, value);
	case OPT_SET:
		store(opt, m, m->min);
		break;
	case OPT_VALUE:
		break;
	}
	if (m->also)
		*(bool *)((char *)opt + m->also) = true;
	return m->then ? m->then(opt, value) : 0;
}

/* One "name" or "name=value" from a -o list.  'o' is writable and ours. */
static int parse_one(struct qm_options *opt, char *o)
{
	char *value = strchr(o, '=');
	const struct mount_opt *m;
	int err;

	if (value)
		*value++ = '\0';
	m = find_opt(o, value != NULL);
	/* not in the table with a value: maybe a remote option's other spelling (cache-dir=) */
	err = m ? apply(opt, m, value) : value ? source_opt_set(&opt->source, o, value) : -ENOENT;
	if (err == -EINVAL)
		return bad_value(opt, o, value);
	if (err == -ENOENT) {
		fprintf(stderr, "%s: unknown mount option '%s%s%s'\n", msgname_of(opt), o, value ? "=" : "",
			value ? value : "");
		return -EINVAL;
	}
	return err;
}

/* A comma-separated list, copied into opt->strings: subdir= and notify_pipe= point into it. */
static int parse_list(struct qm_options *opt, const char *list)
{
	size_t len = strlen(list) + 1;
	char *copy = opt->strings + opt->strings_used, *o, *save = NULL;

	if (len > sizeof(opt->strings) - opt->strings_used) {
		fprintf(stderr, "%s: mount options too long\n", msgname_of(opt));
		return -E2BIG;
	}
	memcpy(copy, list, len);
	opt->strings_used += len;
	for (o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		int err = parse_one(opt, o);

		if (err)
			return err;
	}
	return 0;
}

static int add_path(struct qm_options *opt, const char *arg)
{
	if (!opt->image) {
		opt->image = arg;
	} else if (!opt->mountpoint) {
		opt->mountpoint = arg;
	} else {
		fprintf(stderr, "%s: unexpected argument '%s'\n", msgname_of(opt), arg);
		return -EINVAL;
	}
	return 0;
}

/* -o verity_sig= and verity_cert= where they cannot work: said in one line, true. */
static bool signature_options_wrong(const struct qm_options *opt)
{
	/* A signature is checked against certificates, or it checks nothing: both, or neither. */
	if (!opt->catalog && !opt->source.verity_sig != !opt->source.verity_cert) {
		fprintf(stderr, "%s: -o %s\n", opt->msgname, opt->source.verity_sig
			? "verity_sig= needs -o verity_cert= to check the signature against"
			: "verity_cert= is given without -o verity_sig= (or --catalog)");
		return true;
	}
	/* A remote catalog's index carries root hashes but no signatures: nothing to check them against. */
	if (opt->catalog && opt->source.verity_cert && qs_source_spec_is_remote(opt->image)) {
		fprintf(stderr, "%s: -o verity_cert= is for a local catalog, whose images' root hashes are signed "
			"in NAME.roothash.p7s files\n", opt->msgname);
		return true;
	}
	return false;
}

enum qm_parse_result qm_parse_args(int argc, char **argv, bool squashfuse_compat, struct qm_options *opt)
{
	bool options_done = false;
	const char *base = strrchr(argv[0], '/');

	memset(opt, 0, sizeof(*opt));
	opt->squashfuse_compat = squashfuse_compat;
	opt->progname = squashfuse_compat ? (base ? base + 1 : argv[0]) : "quash";
	opt->msgname = squashfuse_compat ? opt->progname : "quash: mount";
	opt->notify_store = true;
	opt->holder = true;
	opt->decompress_ahead = true;
	opt->readahead_kb = QM_DEFAULT_READAHEAD_KB;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options_done || a[0] != '-' || a[1] == '\0') {
			if (add_path(opt, a))
				return QM_PARSE_ERROR;
		} else if (strcmp(a, "--") == 0) {
			options_done = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return QM_PARSE_HELP;
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			if (squashfuse_compat)
				printf("%s (quash %s)\n", opt->progname, QUASH_VERSION);
			else
				printf("quash %s\n", QUASH_VERSION);
			exit(0);
		} else if (strcmp(a, "-f") == 0) {
			opt->foreground = true;
		} else if (strcmp(a, "--catalog") == 0 && !squashfuse_compat) {
			opt->catalog = true;
		} else if (strcmp(a, "-d") == 0) {
			opt->debug = opt->foreground = true;
		} else if (strcmp(a, "-s") == 0) {
			opt->single_thread = true;
		} else if (strncmp(a, "-o", 2) == 0) {
			const char *list = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);

			if (!list) {
				fprintf(stderr, "%s: -o needs a list of options\n", opt->msgname);
				return QM_PARSE_ERROR;
			}
			if (parse_list(opt, list))
				return QM_PARSE_ERROR;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\nTry '%s --help' for more information.\n",
				opt->msgname, a, opt->squashfuse_compat ? opt->progname : "quash mount");
			return QM_PARSE_ERROR;
		}
	}
	if (!opt->image || !opt->mountpoint) {
		fprintf(stderr, "%s: need %s and a MOUNTPOINT\nTry '%s --help' for more information.\n",
			opt->msgname, opt->catalog ? "a catalog SOURCE" : "an IMAGE",
			opt->squashfuse_compat ? opt->progname : "quash mount");
		return QM_PARSE_ERROR;
	}
	if (opt->catalog && (opt->subdir || opt->offset_given || opt->source.record || opt->source.prefetch ||
			     opt->source.fallback || opt->source.verity_root || opt->source.verity_file ||
			     opt->source.verity_offset_given || opt->source.verity_sig)) {
		fprintf(stderr, "%s: -o %s is for one image, not a catalog%s\n", opt->msgname,
			opt->subdir ? "subdir=" : opt->offset_given ? "offset=" : opt->source.record ? "record=" :
			opt->source.prefetch ? "prefetch=" : opt->source.fallback ? "fallback=" :
			opt->source.verity_root ? "verity=" : opt->source.verity_file ? "verity_file=" :
			opt->source.verity_offset_given ? "verity_offset=" : "verity_sig=",
			opt->source.verity_sig ? " (its images' signatures are NAME.roothash.p7s)" : "");
		return QM_PARSE_ERROR;
	}
	if (signature_options_wrong(opt))
		return QM_PARSE_ERROR;
	if (opt->source.fallback && !qs_source_spec_is_remote(opt->image)) {
		fprintf(stderr, "%s: -o fallback= is for an image at a URL, not a file\n", opt->msgname);
		return QM_PARSE_ERROR;
	}
	if (!opt->catalog && (opt->catalog_idle || opt->catalog_refresh || opt->catalog_open_max)) {
		fprintf(stderr, "%s: -o %s is for a catalog (--catalog); for one image see -o timeout=\n",
			opt->msgname, opt->catalog_idle ? "idle=" : opt->catalog_refresh ? "refresh=" : "open_max=");
		return QM_PARSE_ERROR;
	}
	/*
	 * A profile beside the image (docs/profile.md): looked for by default
	 * beside a file, but beside a URL only when asked (-o prefetch), since
	 * a server logs each absent one as an error on every mount.
	 */
	opt->source.prefetch_beside = opt->prefetch_beside == QM_BESIDE_YES ||
				      (opt->prefetch_beside == QM_BESIDE_DEFAULT && !qs_source_spec_is_remote(opt->image));
	if (add_kernel_opt(opt, "ro") || add_kernel_opt(opt, "default_permissions")) {
		fprintf(stderr, "%s: mount options too long\n", opt->msgname);
		return QM_PARSE_ERROR;
	}
	return QM_PARSE_OK;
}

/* Row m's lines of --help: its usage in a column of 23 (or two spaces past a longer one), then its text. */
static void print_help(FILE *out, const struct mount_opt *m)
{
	char left[64];
	const char *line, *end;

	if (!m->help)
		return;
	if (m->usage)
		snprintf(left, sizeof(left), "%s", m->usage);
	else
		snprintf(left, sizeof(left), "-o %s%s%s", m->name, m->arg ? "=" : "", m->arg ? m->arg : "");
	for (line = m->help; line; line = *end ? end + 1 : NULL) {
		end = line + strcspn(line, "\n");
		if (line != m->help)
			fprintf(out, "    %-23s%.*s\n", "", (int)(end - line), line);
		else if (strlen(left) < 23)
			fprintf(out, "    %-23s%.*s\n", left, (int)(end - line), line);
		else
			fprintf(out, "    %s  %.*s\n", left, (int)(end - line), line);
	}
}

void qm_usage(const struct qm_options *opt)
{
	FILE *out = opt->squashfuse_compat ? stderr : stdout;

	if (opt->squashfuse_compat)
		fprintf(out, "%s (quash %s, compatible with squashfuse_ll)\n\n"
			"Usage: %s [options] ARCHIVE MOUNTPOINT\n", opt->progname, QUASH_VERSION, opt->progname);
	else
		fprintf(out, "Usage: quash mount [-f] [-d] [-s] [-o OPTIONS] IMAGE MOUNTPOINT\n"
			"       quash mount --catalog [-f] [-o OPTIONS] SOURCE MOUNTPOINT\n"
			"       quash mount --upgrade MOUNTPOINT\n"
			"\nWith --catalog, every image in SOURCE (a directory, an http(s):// index or an\n"
			"s3://BUCKET/PREFIX/) is a directory of MOUNTPOINT, opened on first use.\n"
			"--upgrade moves a running mount to a server from the quash now installed.\n");
	fprintf(out, "\nOptions:\n");
	for (size_t i = 0; i < sizeof(mount_opts) / sizeof(mount_opts[0]); i++)
		print_help(out, &mount_opts[i]);
}
