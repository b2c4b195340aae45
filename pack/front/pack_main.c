/*
 * pack_main.c - the command line of `quash pack`.
 */
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack.h"
#include "writer.h"
#include "format/squashfs_fs.h"
#include "base/util.h"

/*
 * Chosen by measurement (docs/benchmarks.md, "quash pack"; bench/pack.sh,
 * bench/pack-sizes.sh): zstd 9 is much faster than mksquashfs's gzip 9,
 * and higher levels cost far more time for little size.  128K blocks, as
 * mksquashfs's: smaller ones halve the decompression behind a cold read
 * of the mount but make trees of small text files larger than
 * mksquashfs's (their fragment blocks being smaller); -b 64K still gives
 * the faster random reads.
 */
#define PACK_DEFAULT_COMPRESSOR "zstd"
#define PACK_DEFAULT_LEVEL      9
#define PACK_DEFAULT_LEVEL_ANY  0        /* other compressors: their own default */
#define PACK_DEFAULT_BLOCK_SIZE (128u << 10)

/* The command line as it is read: the options, and what is settled only at its end. */
struct pack_args {
	struct pack_options o;
	const char *comp_name;
	const char *epoch;          /* SOURCE_DATE_EPOCH, unless --mtime is given */
};

/*
 * One option: its names, whether it takes a value, what it does (set a
 * bool field of pack_options true or false, keep its value in a string
 * field, or call a handler), and its lines of --help exactly as printed
 * (NULL: shown with the option above it).  The table is read as libfuse
 * reads its fuse_opt tables: getopt_long()'s list and --help both come
 * from it.
 */
enum pack_action { SET_TRUE, SET_FALSE, SET_STRING, CALL };

struct pack_opt {
	const char *name;
	char short_name;
	bool value;
	enum pack_action action;
	size_t field;               /* offsetof(struct pack_options, ...) for SET_* */
	int (*call)(struct pack_args *a, const char *name, const char *val);
	const char *help;
};

#define PARSE_HELP (-1)      /* parse_args: --help was answered */

static int bad_option(const char *opt, const char *value)
{
	fprintf(stderr, "quash: pack: bad value for %s: '%s'\n", opt, value);
	return 2;
}

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

static int opt_level(struct pack_args *a, const char *name, const char *val)
{
	int64_t v;

	(void)name;
	/* The compressor checks its own range later (settings_work), naming it. */
	if (!parse_number(val, 10, 1, INT32_MAX, &v))
		return bad_option("--level (a whole number; zstd 1..22, gzip 1..9, xz 1..9, "
				  "lz4 1..12, lzo 1..9)", val);
	a->o.params.level = (int)v;
	return 0;
}

static int opt_block_size(struct pack_args *a, const char *name, const char *val)
{
	(void)name;
	if (!pack_parse_block_size(val, &a->o.block_size))
		return bad_option("--block-size (4K..1M, a power of two)", val);
	return 0;
}

static int opt_jobs(struct pack_args *a, const char *name, const char *val)
{
	int64_t v;

	if (!parse_number(val, 10, 1, 256, &v))
		return bad_option(name, val);
	a->o.jobs = (unsigned)v;
	return 0;
}

static int opt_memory(struct pack_args *a, const char *name, const char *val)
{
	(void)name;
	if (!pack_parse_memory(val, &a->o.memory))
		return bad_option("--memory (a size, K, M or G, at least 1M)", val);
	return 0;
}

static int opt_owner(struct pack_args *a, const char *name, const char *val)
{
	int64_t v;

	if (!parse_number(val, 10, 0, UINT32_MAX, &v))
		return bad_option(name, val);
	*(strcmp(name, "--uid") == 0 ? &a->o.overrides.uid : &a->o.overrides.gid) = v;
	return 0;
}

static int opt_mode(struct pack_args *a, const char *name, const char *val)
{
	if (!parse_number(val, 8, 0, 07777, &a->o.overrides.mode))
		return bad_option(name, val);
	return 0;
}

static int opt_mtime(struct pack_args *a, const char *name, const char *val)
{
	if (!parse_number(val, 10, 0, UINT32_MAX, &a->o.overrides.mtime))
		return bad_option(name, val);
	a->epoch = NULL;
	return 0;
}

static int opt_compression(struct pack_args *a, const char *name, const char *val)
{
	(void)name;
	a->comp_name = val;
	return 0;
}

static int opt_exclude(struct pack_args *a, const char *name, const char *val)
{
	(void)name;
	a->o.excludes[a->o.exclude_count++] = val;
	return 0;
}

static int opt_help(struct pack_args *a, const char *name, const char *val);

static int opt_version(struct pack_args *a, const char *name, const char *val)
{
	(void)a, (void)name, (void)val;
	printf("quash %s\n", QUASH_VERSION);
	return PARSE_HELP;
}

#define FIELD(f) offsetof(struct pack_options, f)

/* In the order of --help; getopt_long() lists ambiguous abbreviations in this order too. */
static const struct pack_opt pack_opts[] = {
	{ "compression", 'c', true, CALL, 0, opt_compression,
	  "  -c, --compression NAME  zstd (default), gzip, xz, lz4, lzo\n" },
	{ "level", 'l', true, CALL, 0, opt_level,
	  "  -l, --level N           compression level (compressor's scale: zstd 1..22, default 9;\n"
	  "                          gzip 1..9; xz 1..9; lz4 1..12, high compression; lzo 1..9)\n" },
	{ "block-size", 'b', true, CALL, 0, opt_block_size,
	  "  -b, --block-size SIZE   4K .. 1M, a power of two (default 128K)\n" },
	{ "jobs", 'j', true, CALL, 0, opt_jobs,
	  "  -j, --jobs N            threads for the directory scan and the compression\n"
	  "                          (default: every core)\n" },
	{ "no-fragments", 0, false, SET_FALSE, FIELD(fragments), NULL,
	  "      --no-fragments      store small files and tails in blocks of their own\n" },
	{ "no-tail-packing", 0, false, SET_FALSE, FIELD(tail_packing), NULL,
	  "      --no-tail-packing   fragments only for files smaller than a block\n" },
	{ "no-dedup", 0, false, SET_FALSE, FIELD(dedup), NULL,
	  "      --no-dedup          do not share the data of identical files\n" },
	{ "no-sparse", 0, false, SET_FALSE, FIELD(sparse), NULL,
	  "      --no-sparse         store blocks of zeros as data, not as holes\n" },
	{ "no-exports", 0, false, SET_FALSE, FIELD(exportable), NULL,
	  "      --no-exports        no NFS export table\n" },
	{ "no-xattrs", 0, false, SET_TRUE, FIELD(overrides.no_xattrs), NULL,
	  "      --no-xattrs         drop extended attributes\n" },
	{ "all-root", 0, false, SET_TRUE, FIELD(overrides.all_root), NULL,
	  "      --all-root          owner and group 0 for everything\n" },
	{ "uid", 0, true, CALL, 0, opt_owner,
	  "      --uid N, --gid N    this owner / group for everything\n" },
	{ "gid", 0, true, CALL, 0, opt_owner, NULL },
	{ "mode", 0, true, CALL, 0, opt_mode,
	  "      --mode OCTAL        these permission bits for everything\n" },
	{ "mtime", 0, true, CALL, 0, opt_mtime,
	  "      --mtime SECONDS     this modification time for everything (default:\n"
	  "                          $SOURCE_DATE_EPOCH if set, else as found)\n" },
	{ "exclude", 0, true, CALL, 0, opt_exclude,
	  "      --exclude PATTERN   leave out matching paths (repeatable; a pattern with '/'\n"
	  "                          matches the path from the source root, else the name)\n" },
	{ "order", 0, true, SET_STRING, FIELD(order_file), NULL,
	  "      --order FILE       lay out the data of the files FILE lists (one path a\n"
	  "                          line, as quash profile paths prints) first, in its order\n" },
	{ "skip-unreadable", 0, false, SET_TRUE, FIELD(skip_unreadable), NULL,
	  "      --skip-unreadable   warn about unreadable files instead of failing\n" },
	{ "memory", 0, true, CALL, 0, opt_memory,
	  "      --memory SIZE       bound the buffers of the data being compressed and the\n"
	  "                          tables being built (K, M, G; at least 1M); the tables\n"
	  "                          spill to a temporary file beside IMAGE past it\n" },
	{ "no-progress", 0, false, SET_FALSE, FIELD(progress), NULL,
	  "      --no-progress       no progress bar (it shows only on a terminal)\n" },
	{ "append", 0, false, SET_TRUE, FIELD(append), NULL,
	  "      --append            add the sources to an existing IMAGE, as mksquashfs does:\n"
	  "                          into its root (a name it has becomes NAME_1, NAME_2...),\n"
	  "                          with its compressor, block size and settings; its data\n"
	  "                          is copied, not recompressed (without it: IMAGE is replaced)\n" },
	{ "endpoint", 0, true, SET_STRING, FIELD(endpoint), NULL,
	  "      --endpoint URL      S3 endpoint when IMAGE is s3://BUCKET/KEY\n"
	  "                          (else $AWS_ENDPOINT_URL)\n" },
	{ "quiet", 'q', false, SET_TRUE, FIELD(quiet), NULL,
	  "  -q, --quiet             no summary line (the progress bar stays: --no-progress)\n" },
	{ "json", 0, false, SET_TRUE, FIELD(json), NULL,
	  "      --json              the summary as one JSON object on stdout: sizes, ratio,\n"
	  "                          counts by type, duplicates, fragments, ids, seconds\n" },
	{ "verity", 0, false, SET_TRUE, FIELD(verity), NULL,
	  "      --verity            append a dm-verity hash tree, as quash verity format\n"
	  "                          IMAGE does, and print its root hash (a local IMAGE)\n" },
	{ "help", 'h', false, CALL, 0, opt_help,
	  "  -h, --help              show this help and exit\n" },
	{ "version", 'V', false, CALL, 0, opt_version,
	  "  -V, --version           show the version and exit\n" },
};

#define PACK_OPT_COUNT (sizeof(pack_opts) / sizeof(pack_opts[0]))

static void usage(FILE *f)
{
	fputs("Usage: quash pack [OPTIONS] SOURCE... IMAGE\n"
	      "  SOURCE is a directory, an archive (tar, cpio, zip; gzip/bzip2/xz/zstd/lz4), or - for\n"
	      "  an archive on standard input.  Later sources win where paths collide.\n", f);
	for (size_t i = 0; i < PACK_OPT_COUNT; i++)
		if (pack_opts[i].help)
			fputs(pack_opts[i].help, f);
	fputs("\n"
	      "Exit status: 0 the image is written; 1 it could not be (nothing is left\n"
	      "behind); 2 the command line is wrong.\n", f);
}

static int opt_help(struct pack_args *a, const char *name, const char *val)
{
	(void)a, (void)name, (void)val;
	usage(stdout);
	return PARSE_HELP;
}

/* Carry out one option with its value (NULL for none); 0, or the exit status. */
static int apply_opt(struct pack_args *a, const struct pack_opt *opt, const char *val)
{
	char name[32];

	switch (opt->action) {
	case SET_TRUE:
	case SET_FALSE:
		*(bool *)((char *)&a->o + opt->field) = opt->action == SET_TRUE;
		return 0;
	case SET_STRING:
		*(const char **)((char *)&a->o + opt->field) = val;
		return 0;
	case CALL:
		break;
	}
	snprintf(name, sizeof(name), "--%s", opt->name);
	return opt->call(a, name, val);
}

/* One line and a pointer to --help, as every command says it. */
static int usage_error(const char *what)
{
	fprintf(stderr, "quash: pack: %s\nTry 'quash pack --help' for more information.\n", what);
	return 2;
}

/* The table as getopt_long() takes it: a long option returns its short name, or 256 + its index. */
static void getopt_table(struct option *longs, char *shorts)
{
	for (size_t i = 0; i < PACK_OPT_COUNT; i++) {
		const struct pack_opt *opt = &pack_opts[i];

		longs[i] = (struct option){ opt->name, opt->value ? required_argument : no_argument, NULL,
					    opt->short_name ? opt->short_name : 256 + (int)i };
		if (opt->short_name) {
			*shorts++ = opt->short_name;
			if (opt->value)
				*shorts++ = ':';
		}
	}
	longs[PACK_OPT_COUNT] = (struct option){ 0 };
	*shorts = '\0';
}

static const struct pack_opt *opt_of(int c)
{
	for (size_t i = 0; i < PACK_OPT_COUNT; i++)
		if (c == (pack_opts[i].short_name ? pack_opts[i].short_name : 256 + (int)i))
			return &pack_opts[i];
	return NULL;
}

/* What is settled once every option is read: the time, the operands, the compressor; 0 or the exit status. */
static int finish_args(struct pack_args *a, int argc, char **argv)
{
	struct pack_options *o = &a->o;

	if (a->epoch && *a->epoch) {
		/* As mksquashfs does: every time, and the image's own, becomes SOURCE_DATE_EPOCH. */
		if (!parse_number(a->epoch, 10, 0, UINT32_MAX, &o->overrides.mtime))
			return bad_option("SOURCE_DATE_EPOCH", a->epoch);
	}
	o->mkfs_time = o->overrides.mtime;
	if (argc - optind < 2)
		return usage_error(argc == optind ? "missing SOURCE and IMAGE" : "missing IMAGE (the last operand)");
	o->comp = qs_compressor_by_name(a->comp_name);
	if (!o->comp || !o->comp->compress) {
		fprintf(stderr, "quash: pack: unknown compressor '%s' (zstd, gzip, xz, lz4 or lzo)\n", a->comp_name);
		return 2;
	}
	if (o->params.level < 0)
		o->params.level = strcmp(o->comp->name, PACK_DEFAULT_COMPRESSOR) == 0 ? PACK_DEFAULT_LEVEL
										    : PACK_DEFAULT_LEVEL_ANY;
	o->params.block_size = o->block_size;
	if (!settings_work(o))
		return 2;
	o->sources = (const char **)argv + optind;
	o->source_count = (size_t)(argc - optind - 1);
	o->image = argv[argc - 1];
	if (o->append && strncmp(o->image, "s3://", 5) == 0)
		return usage_error("--append: not for an s3:// image (append to a local file, then upload it)");
	if (o->verity && strncmp(o->image, "s3://", 5) == 0)
		return usage_error("--verity: not for an s3:// image (pack to a local file, then upload it)");
	return 0;
}

/* Fill *o from the command line; 0 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct pack_options *o_out)
{
	struct pack_args a = {
		.o = {
			.block_size = PACK_DEFAULT_BLOCK_SIZE,
			.params.level = -1,
			.fragments = true, .tail_packing = true, .dedup = true, .exportable = true, .sparse = true,
			.overrides = { .uid = -1, .gid = -1, .mode = -1, .mtime = -1, .mtime_max = -1 },
			.mkfs_time = -1,
			.root_mode = -1, .root_uid = -1, .root_gid = -1, .root_time = -1,
			.implicit_mode = -1, .implicit_uid = -1, .implicit_gid = -1,
			.progress = true,
			.excludes = o_out->excludes,
		},
		.comp_name = PACK_DEFAULT_COMPRESSOR,
		.epoch = getenv("SOURCE_DATE_EPOCH"),
	};
	struct option longs[PACK_OPT_COUNT + 1];
	char shorts[2 * PACK_OPT_COUNT + 1];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int c, status;

	a.o.jobs = cores > 0 ? (unsigned)cores : 1;
	getopt_table(longs, shorts);
	/* getopt names the program as argv[0] in its messages. */
	argv[0] = "quash: pack";
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		const struct pack_opt *opt = opt_of(c);

		if (!opt) {
			/* getopt has said what is wrong. */
			fprintf(stderr, "Try 'quash pack --help' for more information.\n");
			return 2;
		}
		if ((status = apply_opt(&a, opt, optarg)) != 0)
			return status;
	}
	if ((status = finish_args(&a, argc, argv)) != 0)
		return status;
	*o_out = a.o;
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
