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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount_int.h"
#include "size.h"
#include "source_opt.h"

#define QM_MAX_READAHEAD_KB (64u << 10)

/* Handed to the kernel's FUSE mount as they are. */
static const char *const kernel_flags[] = {
	"allow_other", "allow_root", "dev", "nodev", "suid", "nosuid", "exec", "noexec", "ro",
	"auto_unmount",
};

/* mount(8) and fstab vocabulary, and squashfuse_ll's threading knobs: accepted, no effect. */
static const char *const ignored[] = {
	"rw", "defaults", "auto", "noauto", "user", "nouser", "users", "_netdev", "nofail",
	"atime", "noatime", "relatime", "norelatime", "strictatime", "nodiratime", "diratime",
	"async", "sync", "clone_fd", "max_idle_threads", "max_threads", "lazytime", "nolazytime",
	"default_permissions",      /* always on: the image's modes are enforced by the kernel */
};

static const char *msgname_of(const struct qm_options *opt)
{
	return opt->msgname ? opt->msgname : "quash: mount";
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
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

/* One "name" or "name=value" from a -o list.  'o' is writable and ours. */
static int parse_one(struct qm_options *opt, char *o)
{
	char *value = strchr(o, '='), kopt[32];
	uint64_t n;

	if (value)
		*value++ = '\0';
	if (!value && in_list(o, kernel_flags, sizeof(kernel_flags) / sizeof(kernel_flags[0])))
		return add_kernel_opt(opt, o);
	if (in_list(o, ignored, sizeof(ignored) / sizeof(ignored[0])))
		return 0;
	if (!value) {
		if (strcmp(o, "debug") == 0)
			opt->debug = opt->foreground = true;
		else if (strcmp(o, "notify_store") == 0)
			opt->notify_store = true;
		else if (strcmp(o, "nonotify_store") == 0)
			opt->notify_store = false;
		else if (strcmp(o, "uring") == 0)
			opt->uring = true;
		else if (strcmp(o, "nouring") == 0)
			opt->uring = false;
		else if (strcmp(o, "catalog") == 0)
			opt->catalog = true;
		else if (strcmp(o, "noprefetch") == 0 || strcmp(o, "prefetch") == 0)
			opt->prefetch_beside = o[0] == 'p' ? QM_BESIDE_YES : QM_BESIDE_NO;
		else
			goto unknown;
		return 0;
	}
	if (strcmp(o, "offset") == 0) {
		if (size_parse(value, &opt->offset))
			return bad_value(opt, o, value);
		opt->offset_given = true;
		opt->source.image_offset = opt->offset;      /* where a profile finds the superblock */
		opt->source.image_offset_given = true;
	} else if (strcmp(o, "cache_size") == 0) {
		if (size_parse(value, &n) || n > SIZE_MAX)
			return bad_value(opt, o, value);
		opt->cache_bytes = n;
	} else if (strcmp(o, "threads") == 0) {
		if (parse_u64(value, &n) || n < 1 || n > QM_MAX_THREADS)
			return bad_value(opt, o, value);
		opt->threads = (unsigned)n;
	} else if (strcmp(o, "uid") == 0) {
		if (parse_u64(value, &n) || n > UINT32_MAX)
			return bad_value(opt, o, value);
		opt->uid = (uid_t)n;
		opt->uid_set = true;
	} else if (strcmp(o, "gid") == 0) {
		if (parse_u64(value, &n) || n > UINT32_MAX)
			return bad_value(opt, o, value);
		opt->gid = (gid_t)n;
		opt->gid_set = true;
	} else if (strcmp(o, "timeout") == 0) {
		if (parse_u64(value, &n) || n > UINT32_MAX)
			return bad_value(opt, o, value);
		opt->idle_timeout = (unsigned)n;
	} else if (strcmp(o, "idle") == 0 || strcmp(o, "refresh") == 0 || strcmp(o, "open_max") == 0) {
		if (parse_u64(value, &n) || n < 1 || n > UINT32_MAX)
			return bad_value(opt, o, value);
		if (o[0] == 'i')
			opt->catalog_idle = (unsigned)n;
		else if (o[0] == 'r')
			opt->catalog_refresh = (unsigned)n;
		else
			opt->catalog_open_max = (unsigned)n;
	} else if (strcmp(o, "image_access") == 0) {
		if (strcmp(value, "all") != 0 && strcmp(value, "file") != 0)
			return bad_value(opt, o, value);
		opt->catalog_any_reader = strcmp(value, "all") == 0;
	} else if (strcmp(o, "readahead") == 0) {
		if (parse_u64(value, &n) || n > QM_MAX_READAHEAD_KB)
			return bad_value(opt, o, value);
		opt->readahead_kb = (int)n;
		opt->readahead_given = true;
	} else if (strcmp(o, "max_read") == 0) {
		/* squashfuse_ll passes it to the kernel; so do we, checked. */
		if (size_parse(value, &n) || n < 4096 || n > UINT32_MAX)
			return bad_value(opt, o, value);
		opt->max_read = (unsigned)n;
		snprintf(kopt, sizeof(kopt), "max_read=%u", opt->max_read);
		return add_kernel_opt(opt, kopt);
	} else if (strcmp(o, "fsname") == 0) {
		if (!*value)
			return bad_value(opt, o, value);
		opt->fsname = value;
	} else if (strcmp(o, "log") == 0) {
		if (!*value)
			return bad_value(opt, o, value);
		opt->log_file = value;
	} else if (strcmp(o, "subdir") == 0) {
		opt->subdir = value;
	} else if (strcmp(o, "notify_pipe") == 0) {
		opt->notify_pipe = value;
	} else {
		int err = source_opt_set(&opt->source, o, value);

		if (err == -EINVAL)
			return bad_value(opt, o, value);
		if (err)
			goto unknown;
	}
	return 0;
unknown:
	fprintf(stderr, "%s: unknown mount option '%s%s%s'\n", msgname_of(opt), o, value ? "=" : "",
		value ? value : "");
	return -EINVAL;
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

enum qm_parse_result qm_parse_args(int argc, char **argv, bool squashfuse_compat, struct qm_options *opt)
{
	bool options_done = false;
	const char *base = strrchr(argv[0], '/');

	memset(opt, 0, sizeof(*opt));
	opt->squashfuse_compat = squashfuse_compat;
	opt->progname = squashfuse_compat ? (base ? base + 1 : argv[0]) : "quash";
	opt->msgname = squashfuse_compat ? opt->progname : "quash: mount";
	opt->notify_store = true;
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
			     opt->source.fallback)) {
		fprintf(stderr, "%s: -o %s is for one image, not a catalog\n", opt->msgname,
			opt->subdir ? "subdir=" : opt->offset_given ? "offset=" : opt->source.record ? "record=" :
			opt->source.prefetch ? "prefetch=" : "fallback=");
		return QM_PARSE_ERROR;
	}
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
	/* Only root may write a mount's readahead (/sys/class/bdi): say so, not ignore it. */
	if (opt->readahead_given && geteuid() != 0)
		fprintf(stderr, "%s: -o readahead=%d needs root; the kernel's default (128 KiB) stays\n",
			opt->msgname, opt->readahead_kb);
	return QM_PARSE_OK;
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
			"\nWith --catalog, every image in SOURCE (a directory, an http(s):// index or an\n"
			"s3://BUCKET/PREFIX/) is a directory of MOUNTPOINT, opened on first use.\n");
	fprintf(out,
		"\nOptions:\n"
		"    -f                     foreground operation\n"
		"    -d   -o debug          enable debug output (implies -f)\n"
		"    -s                     one worker thread\n"
		"    -o offset=N            offset N bytes into ARCHIVE to mount (suffix K, M, G;\n"
		"                           0x for hexadecimal)\n"
		"    -o subdir=PATH         mount subdirectory PATH of ARCHIVE\n"
		"    -o notify_pipe=PATH    named pipe that will receive 's' (success)\n"
		"                           or 'f' (failure) when the mountpoint is ready\n"
		"    -o timeout=N           idle N seconds for automatic unmount\n"
		"    --catalog  -o catalog  SOURCE is a catalog of images (see quash-mount(1))\n"
		"    -o idle=N              catalog: close an image unused for N seconds (default %d)\n"
		"    -o refresh=N           catalog: list SOURCE again every N seconds (default %d)\n"
		"    -o open_max=N          catalog: images open at once (default %d)\n"
		"    -o image_access=all    catalog with allow_other: serve every image to every user\n"
		"                           (default 'file': only to those who may read its file)\n"
		"    -o uid=N               set file owner to uid N\n"
		"    -o gid=N               set file group to gid N\n"
		"    -o cache_size=SIZE     bytes of decompressed blocks held (K, M, G suffixes)\n"
		"    -o threads=N           worker threads (default %d)\n"
		"    -o [no]notify_store    push whole decompressed blocks into the page cache (default on)\n"
		"    -o [no]uring           serve over FUSE io_uring where the kernel offers it (default off)\n"
		"    -o readahead=KB        the mount's readahead (default: the kernel's, 128; root only)\n"
		"    -o endpoint=URL        S3 endpoint for s3:// images (else AWS_ENDPOINT_URL)\n"
		"    -o region=NAME         S3 region (else AWS_REGION)\n"
		"    -o cache_dir=DIR       keep fetched parts of remote images in DIR (shared)\n"
		"    -o proxy=URL           remote requests through this HTTP proxy or caching tier\n"
		"                           (else http_proxy, https_proxy, no_proxy)\n"
		"    -o fallback=URL        the same image elsewhere (the origin behind a caching\n"
		"                           tier), read while IMAGE's server does not answer\n"
		"    -o cache_dir_limit=SIZE  bound on cache_dir\n"
		"    -o chunk_size=SIZE     remote fetch size (default 4M)\n"
		"    -o remote_cache=SIZE   remote chunks held in memory (default 256M)\n"
		"    -o retry_seconds=N     give up a remote read after N seconds of retries\n"
		"    -o record=FILE         write the ranges of the image read to FILE, a prefetch\n"
		"                           profile (every 10 s and at unmount; docs/profile.md)\n"
		"    -o prefetch=FILE       fetch the ranges of profile FILE in the background at mount\n"
		"                           (default: IMAGE.profile, or URL.profile, if there is one)\n"
		"    -o prefetch            look for URL.profile beside a remote image too\n"
		"    -o noprefetch          do not look for IMAGE.profile\n"
		"    -o fsname=NAME         the mount table's source (default: the image, secrets hidden)\n"
		"    -o log=FILE            the daemon's messages, time-stamped, to FILE (default: syslog)\n"
		"    -o max_read=N          largest read the kernel sends (a kernel mount option)\n"
		"    -o default_permissions accepted; always on (the kernel checks the image's modes)\n"
		"    -o allow_other,allow_root,dev,suid,exec,...  kernel mount flags (allow_other and\n"
		"                           allow_root need user_allow_other in /etc/fuse.conf\n"
		"                           unless you are root)\n"
		"    -V, --version          show the version and exit\n"
		"    -h, --help             show this help and exit\n",
		QC_DEFAULT_IDLE, QC_DEFAULT_REFRESH, QC_DEFAULT_OPEN_MAX, QM_DEFAULT_THREADS);
}
