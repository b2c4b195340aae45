/*
 * pack_main.c - the command line of `quash pack`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack.h"
#include "writer.h"
#include "squashfs_fs.h"
#include "base/util.h"

/*
 * Chosen by measurement (docs/benchmarks.md, "quash pack"; bench/pack.sh,
 * bench/pack-sizes.sh): zstd 9 is 5-10x faster than mksquashfs's gzip 9,
 * and levels above it cost 2-3x the time for under 0.3% of size.  128K
 * blocks, as mksquashfs's: at 64K, which halves the decompression behind a
 * cold 4 KiB read of the mount, the image came out larger than
 * mksquashfs's on trees of small text files (C headers +1.0%,
 * /usr/share/doc +0.6%), their fragment blocks being half the size; at
 * 128K it is 1.2-5.0% smaller on every kind of tree measured, as fast.
 * -b 64K still gives the faster random reads.
 */
#define PACK_DEFAULT_COMPRESSOR "zstd"
#define PACK_DEFAULT_LEVEL      9
#define PACK_DEFAULT_LEVEL_ANY  0        /* other compressors: their own default */
#define PACK_DEFAULT_BLOCK_SIZE (128u << 10)

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: quash pack [OPTIONS] SOURCE... IMAGE\n"
		"  SOURCE is a directory, an archive (tar, cpio, zip; gzip/bzip2/xz/zstd/lz4), or - for\n"
		"  an archive on standard input.  Later sources win where paths collide.\n"
		"  -c, --compression NAME  zstd (default), gzip, xz, lz4, lzo\n"
		"  -l, --level N           compression level (compressor's scale: zstd 1..22, default 9;\n"
		"                          gzip 1..9; xz 1..9; lz4 1..12, high compression; lzo 1..9)\n"
		"  -b, --block-size SIZE   4K .. 1M, a power of two (default 128K)\n"
		"  -j, --jobs N            threads for the directory scan and the compression\n"
		"                          (default: every core)\n"
		"      --no-fragments      store small files and tails in blocks of their own\n"
		"      --no-tail-packing   fragments only for files smaller than a block\n"
		"      --no-dedup          do not share the data of identical files\n"
		"      --no-sparse         store blocks of zeros as data, not as holes\n"
		"      --no-exports        no NFS export table\n"
		"      --no-xattrs         drop extended attributes\n"
		"      --all-root          owner and group 0 for everything\n"
		"      --uid N, --gid N    this owner / group for everything\n"
		"      --mode OCTAL        these permission bits for everything\n"
		"      --mtime SECONDS     this modification time for everything (default:\n"
		"                          $SOURCE_DATE_EPOCH if set, else as found)\n"
		"      --exclude PATTERN   leave out matching paths (repeatable; a pattern with '/'\n"
		"                          matches the path from the source root, else the name)\n"
		"      --order FILE       lay out the data of the files FILE lists (one path a\n"
		"                          line, as quash profile paths prints) first, in its order\n"
		"      --skip-unreadable   warn about unreadable files instead of failing\n"
		"      --memory SIZE       bound the buffers of the data being compressed and the\n"
		"                          tables being built (K, M, G; at least 1M); the tables\n"
		"                          spill to a temporary file beside IMAGE past it\n"
		"      --no-progress       no progress bar (it shows only on a terminal)\n"
		"      --append            add the sources to an existing IMAGE, as mksquashfs does:\n"
		"                          into its root (a name it has becomes NAME_1, NAME_2...),\n"
		"                          with its compressor, block size and settings; its data\n"
		"                          is copied, not recompressed (without it: IMAGE is replaced)\n"
		"      --endpoint URL      S3 endpoint when IMAGE is s3://BUCKET/KEY\n"
		"                          (else $AWS_ENDPOINT_URL)\n"
		"  -q, --quiet             no summary line (the progress bar stays: --no-progress)\n"
		"      --json              the summary as one JSON object on stdout: sizes, ratio,\n"
		"                          counts by type, duplicates, fragments, ids, seconds\n"
		"  -h, --help              show this help and exit\n"
		"  -V, --version           show the version and exit\n"
		"\n"
		"Exit status: 0 the image is written; 1 it could not be (nothing is left\n"
		"behind); 2 the command line is wrong.\n");
}

enum {
	OPT_NO_FRAGMENTS = 256, OPT_NO_TAIL, OPT_NO_DEDUP, OPT_NO_SPARSE, OPT_NO_EXPORTS, OPT_NO_XATTRS, OPT_ALL_ROOT,
	OPT_UID, OPT_GID, OPT_MODE, OPT_MTIME, OPT_EXCLUDE, OPT_SKIP_UNREADABLE, OPT_NO_PROGRESS,
	OPT_ENDPOINT, OPT_JSON, OPT_ORDER, OPT_APPEND, OPT_MEMORY,
};

static const struct option long_options[] = {
	{ "compression", required_argument, NULL, 'c' },
	{ "level", required_argument, NULL, 'l' },
	{ "block-size", required_argument, NULL, 'b' },
	{ "jobs", required_argument, NULL, 'j' },
	{ "no-fragments", no_argument, NULL, OPT_NO_FRAGMENTS },
	{ "no-tail-packing", no_argument, NULL, OPT_NO_TAIL },
	{ "no-dedup", no_argument, NULL, OPT_NO_DEDUP },
	{ "no-sparse", no_argument, NULL, OPT_NO_SPARSE },
	{ "no-exports", no_argument, NULL, OPT_NO_EXPORTS },
	{ "no-xattrs", no_argument, NULL, OPT_NO_XATTRS },
	{ "all-root", no_argument, NULL, OPT_ALL_ROOT },
	{ "uid", required_argument, NULL, OPT_UID },
	{ "gid", required_argument, NULL, OPT_GID },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "mtime", required_argument, NULL, OPT_MTIME },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "skip-unreadable", no_argument, NULL, OPT_SKIP_UNREADABLE },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "order", required_argument, NULL, OPT_ORDER },
	{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
	{ "endpoint", required_argument, NULL, OPT_ENDPOINT },
	{ "append", no_argument, NULL, OPT_APPEND },
	{ "quiet", no_argument, NULL, 'q' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* A whole number in [min, max] in the given base; false if it is not one. */
static bool parse_number(const char *s, int base, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, base);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* Try the compressor once, so that a level it refuses is one clear message, not one per block. */
static bool settings_work(const struct pack_options *o)
{
	static const uint8_t probe[64] = "quash quash quash quash quash quash quash quash quash quash";
	uint8_t out[sizeof(probe)];

	if (o->comp->compress(&o->params, probe, sizeof(probe), out, sizeof(out)) < 0) {
		fprintf(stderr, "quash: pack: %s\n", qs_last_error());
		return false;
	}
	return true;
}

static int bad_option(const char *opt, const char *value)
{
	fprintf(stderr, "quash: pack: bad value for %s: '%s'\n", opt, value);
	return 2;
}

/* One line and a pointer to --help, as every command says it. */
static int usage_error(const char *what)
{
	fprintf(stderr, "quash: pack: %s\nTry 'quash pack --help' for more information.\n", what);
	return 2;
}

#define PARSE_HELP (-1)      /* parse_args: --help was answered */

/* Fill *o from the command line; 0 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct pack_options *o_out)
{
	const char *comp_name = PACK_DEFAULT_COMPRESSOR;
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	struct pack_options o = *o_out;
	struct pack_options defaults = {
		.block_size = PACK_DEFAULT_BLOCK_SIZE,
		.params.level = -1,
		.fragments = true, .tail_packing = true, .dedup = true, .exportable = true, .sparse = true,
		.overrides = { .uid = -1, .gid = -1, .mode = -1, .mtime = -1, .mtime_max = -1 },
		.mkfs_time = -1,
		.root_mode = -1, .root_uid = -1, .root_gid = -1, .root_time = -1,
		.implicit_mode = -1, .implicit_uid = -1, .implicit_gid = -1,
		.progress = true,
	};
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t v;
	int c;

	defaults.excludes = o.excludes;
	o = defaults;
	o.jobs = cores > 0 ? (unsigned)cores : 1;
	/* getopt names the program as argv[0] in its messages. */
	argv[0] = "quash: pack";
	while ((c = getopt_long(argc, argv, "c:l:b:j:qhV", long_options, NULL)) != -1) {
		switch (c) {
		case 'c':
			comp_name = optarg;
			break;
		case 'l':
			/* The compressor checks its own range below (settings_work), naming it. */
			if (!parse_number(optarg, 10, 1, INT32_MAX, &v))
				return bad_option("--level (a whole number; zstd 1..22, gzip 1..9, xz 1..9, "
						  "lz4 1..12, lzo 1..9)", optarg);
			o.params.level = (int)v;
			break;
		case 'b':
			if (!pack_parse_block_size(optarg, &o.block_size))
				return bad_option("--block-size (4K..1M, a power of two)", optarg);
			break;
		case 'j':
			if (!parse_number(optarg, 10, 1, 256, &v))
				return bad_option("--jobs", optarg);
			o.jobs = (unsigned)v;
			break;
		case OPT_NO_FRAGMENTS: o.fragments = false; break;
		case OPT_NO_TAIL: o.tail_packing = false; break;
		case OPT_NO_DEDUP: o.dedup = false; break;
		case OPT_NO_SPARSE: o.sparse = false; break;
		case OPT_MEMORY:
			if (!pack_parse_memory(optarg, &o.memory))
				return bad_option("--memory (a size, K, M or G, at least 1M)", optarg);
			break;
		case OPT_NO_EXPORTS: o.exportable = false; break;
		case OPT_NO_XATTRS: o.overrides.no_xattrs = true; break;
		case OPT_ALL_ROOT: o.overrides.all_root = true; break;
		case OPT_UID:
		case OPT_GID:
			if (!parse_number(optarg, 10, 0, UINT32_MAX, &v))
				return bad_option(c == OPT_UID ? "--uid" : "--gid", optarg);
			*(c == OPT_UID ? &o.overrides.uid : &o.overrides.gid) = v;
			break;
		case OPT_MODE:
			if (!parse_number(optarg, 8, 0, 07777, &o.overrides.mode))
				return bad_option("--mode", optarg);
			break;
		case OPT_MTIME:
			if (!parse_number(optarg, 10, 0, UINT32_MAX, &o.overrides.mtime))
				return bad_option("--mtime", optarg);
			epoch = NULL;
			break;
		case OPT_EXCLUDE:
			o.excludes[o.exclude_count++] = optarg;
			break;
		case OPT_SKIP_UNREADABLE: o.skip_unreadable = true; break;
		case OPT_NO_PROGRESS: o.progress = false; break;
		case OPT_ENDPOINT: o.endpoint = optarg; break;
		case OPT_ORDER: o.order_file = optarg; break;
		case OPT_APPEND: o.append = true; break;
		case 'q': o.quiet = true; break;
		case OPT_JSON: o.json = true; break;
		case 'h':
			usage(stdout);
			return PARSE_HELP;
		case 'V':
			printf("quash %s\n", QUASH_VERSION);
			return PARSE_HELP;
		default:
			/* getopt has said what is wrong. */
			fprintf(stderr, "Try 'quash pack --help' for more information.\n");
			return 2;
		}
	}
	if (epoch && *epoch) {
		/* As mksquashfs does: every time, and the image's own, becomes SOURCE_DATE_EPOCH. */
		if (!parse_number(epoch, 10, 0, UINT32_MAX, &o.overrides.mtime))
			return bad_option("SOURCE_DATE_EPOCH", epoch);
	}
	o.mkfs_time = o.overrides.mtime;
	if (argc - optind < 2)
		return usage_error(argc == optind ? "missing SOURCE and IMAGE" : "missing IMAGE (the last operand)");
	o.comp = qs_compressor_by_name(comp_name);
	if (!o.comp || !o.comp->compress) {
		fprintf(stderr, "quash: pack: unknown compressor '%s' (zstd, gzip, xz, lz4 or lzo)\n", comp_name);
		return 2;
	}
	if (o.params.level < 0)
		o.params.level = strcmp(o.comp->name, PACK_DEFAULT_COMPRESSOR) == 0 ? PACK_DEFAULT_LEVEL
										  : PACK_DEFAULT_LEVEL_ANY;
	o.params.block_size = o.block_size;
	if (!settings_work(&o))
		return 2;
	o.sources = (const char **)argv + optind;
	o.source_count = (size_t)(argc - optind - 1);
	o.image = argv[argc - 1];
	if (o.append && strncmp(o.image, "s3://", 5) == 0)
		return usage_error("--append: not for an s3:// image (append to a local file, then upload it)");
	*o_out = o;
	return 0;
}

int pack_main(int argc, char **argv)
{
	struct pack_options o = { .excludes = calloc((size_t)argc, sizeof(char *)) };
	int status;

	if (!o.excludes)
		return 1;
	status = parse_args(argc, argv, &o);
	if (status == 0) {
		struct stat st;
		/* Without --append an existing image is replaced, and this form says so. */
		bool existed = !o.append && strncmp(o.image, "s3://", 5) != 0 && stat(o.image, &st) == 0 &&
			       S_ISREG(st.st_mode);

		status = pack_run(&o) ? 1 : 0;
		if (status == 0 && existed && !o.quiet)
			fprintf(stderr, "quash: pack: %s: the image that was there is replaced (--append adds to it instead)\n",
				o.image);
	}
	else if (status == PARSE_HELP)
		status = 0;
	free(o.excludes);
	return status;
}
