/*
 * cmd_info.c - quash info: the superblock of an image, in words or as JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "format/squashfs_fs.h"

static const struct {
	uint16_t bit;
	const char *name;
} super_flags[] = {
	{ SQFS_FLAG_UNCOMPRESSED_INODES,    "uncompressed-inodes" },
	{ SQFS_FLAG_UNCOMPRESSED_DATA,      "uncompressed-data" },
	{ SQFS_FLAG_CHECK,                  "check" },
	{ SQFS_FLAG_UNCOMPRESSED_FRAGMENTS, "uncompressed-fragments" },
	{ SQFS_FLAG_NO_FRAGMENTS,           "no-fragments" },
	{ SQFS_FLAG_ALWAYS_FRAGMENTS,       "always-fragments" },
	{ SQFS_FLAG_DUPLICATES,             "duplicates" },
	{ SQFS_FLAG_EXPORTABLE,             "exportable" },
	{ SQFS_FLAG_UNCOMPRESSED_XATTRS,    "uncompressed-xattrs" },
	{ SQFS_FLAG_NO_XATTRS,              "no-xattrs" },
	{ SQFS_FLAG_COMPRESSOR_OPTIONS,     "compressor-options" },
	{ SQFS_FLAG_UNCOMPRESSED_IDS,       "uncompressed-ids" },
};

#define N_SUPER_FLAGS (sizeof(super_flags) / sizeof(super_flags[0]))

/* xz's BCJ filters by bit, as mksquashfs -Xbcj names them. */
static const char *const xz_filters[] = { "x86", "powerpc", "ia64", "arm", "armthumb", "sparc" };

#define N_XZ_FILTERS (sizeof(xz_filters) / sizeof(xz_filters[0]))

/* gzip strategies by bit, as mksquashfs -Xstrategy names them. */
static const char *const gzip_strategies[] = {
	"default", "filtered", "huffman_only", "run_length_encoded", "fixed",
};

#define N_GZIP_STRATEGIES (sizeof(gzip_strategies) / sizeof(gzip_strategies[0]))

/* lzo algorithms by number, as mksquashfs -Xalgorithm names them. */
static const char *const lzo_algorithms[] = {
	"lzo1x_1", "lzo1x_1_11", "lzo1x_1_12", "lzo1x_1_15", "lzo1x_999",
};

#define N_LZO_ALGORITHMS (sizeof(lzo_algorithms) / sizeof(lzo_algorithms[0]))

static const char *lzo_algorithm_name(uint32_t algorithm)
{
	return algorithm < N_LZO_ALGORITHMS ? lzo_algorithms[algorithm] : "unknown";
}

/* The names of the set bits of mask, joined by sep; "" when none. */
static void print_bit_names(FILE *f, uint32_t mask, const char *const *names, size_t n, bool json)
{
	bool first = true;

	for (size_t i = 0; i < 32; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (!first)
			fputs(json ? ", " : " ", f);
		first = false;
		if (json)
			fputc('"', f);
		if (i < n)
			fputs(names[i], f);
		else
			fprintf(f, "bit%zu", i);
		if (json)
			fputc('"', f);
	}
}

static void print_table(const char *label, uint64_t start)
{
	if (start == SQFS_INVALID_TABLE)
		printf("%-22s absent\n", label);
	else
		printf("%-22s %llu\n", label, (unsigned long long)start);
}

static void print_comp_options_text(const struct qs_info *in)
{
	const struct qs_comp_options *c = &in->comp;

	if (!c->present) {
		printf("%-22s none (defaults)\n", "compressor options:");
		return;
	}
	switch (in->compressor) {
	case SQFS_COMP_GZIP:
		printf("%-22s level %u, window size %u, strategies ", "compressor options:",
		       c->level, c->window_size);
		print_bit_names(stdout, c->strategies, gzip_strategies, N_GZIP_STRATEGIES, false);
		putchar('\n');
		break;
	case SQFS_COMP_XZ:
		printf("%-22s dictionary size %u, filters ", "compressor options:", c->dictionary_size);
		if (c->filters)
			print_bit_names(stdout, c->filters, xz_filters, N_XZ_FILTERS, false);
		else
			fputs("none", stdout);
		putchar('\n');
		break;
	case SQFS_COMP_LZO:
		printf("%-22s algorithm %s, level %u\n", "compressor options:", lzo_algorithm_name(c->algorithm),
		       c->level);
		break;
	case SQFS_COMP_LZ4:
		printf("%-22s version %u%s\n", "compressor options:", c->version,
		       c->flags & 1 ? ", high compression" : "");
		break;
	case SQFS_COMP_ZSTD:
		printf("%-22s level %u\n", "compressor options:", c->level);
		break;
	default:
		printf("%-22s present\n", "compressor options:");
		break;
	}
}

static void print_text(const char *image, const struct qs_info *in)
{
	char when[64];

	cli_format_time(in->mkfs_time, true, when, sizeof(when));
	printf("%-22s %s\n", "image:", image);
	printf("%-22s %llu\n", "offset:", (unsigned long long)in->offset);
	printf("%-22s %u.%u\n", "version:", in->version_major, in->version_minor);
	printf("%-22s %s\n", "compressor:", in->compressor_name);
	print_comp_options_text(in);
	printf("%-22s %u (log %u)\n", "block size:", in->block_size, in->block_log);
	printf("%-22s 0x%04x", "flags:", in->flags);
	for (size_t i = 0; i < N_SUPER_FLAGS; i++) {
		if (in->flags & super_flags[i].bit)
			printf(" %s", super_flags[i].name);
	}
	putchar('\n');
	printf("%-22s %s (%u)\n", "created:", when, in->mkfs_time);
	printf("%-22s %llu\n", "bytes used:", (unsigned long long)in->bytes_used);
	printf("%-22s %u\n", "inodes:", in->inode_count);
	printf("%-22s %u\n", "fragments:", in->fragment_count);
	printf("%-22s %u\n", "ids:", in->id_count);
	printf("%-22s %u\n", "xattr ids:", in->xattr_id_count);
	printf("%-22s 0x%llx\n", "root inode:", (unsigned long long)in->root_inode_ref);
	print_table("inode table:", in->inode_table_start);
	print_table("directory table:", in->directory_table_start);
	if (in->fragment_table_start != SQFS_INVALID_TABLE && in->fragment_count == 0)
		printf("%-22s %llu (0 fragments)\n", "fragment table:", (unsigned long long)in->fragment_table_start);
	else
		print_table("fragment table:", in->fragment_table_start);
	print_table("export table:", in->export_table_start);
	print_table("id table:", in->id_table_start);
	print_table("xattr id table:", in->xattr_id_table_start);
}

static void print_json_table(const char *key, uint64_t start, bool last)
{
	if (start == SQFS_INVALID_TABLE)
		printf("    \"%s\": null%s\n", key, last ? "" : ",");
	else
		printf("    \"%s\": %llu%s\n", key, (unsigned long long)start, last ? "" : ",");
}

static void print_json_comp_options(const struct qs_info *in)
{
	const struct qs_comp_options *c = &in->comp;

	fputs("  \"compressor_options\": ", stdout);
	if (!c->present) {
		fputs("null,\n", stdout);
		return;
	}
	switch (in->compressor) {
	case SQFS_COMP_GZIP:
		printf("{\"level\": %u, \"window_size\": %u, \"strategies\": [", c->level, c->window_size);
		print_bit_names(stdout, c->strategies, gzip_strategies, N_GZIP_STRATEGIES, true);
		fputs("]},\n", stdout);
		break;
	case SQFS_COMP_XZ:
		printf("{\"dictionary_size\": %u, \"filters\": [", c->dictionary_size);
		print_bit_names(stdout, c->filters, xz_filters, N_XZ_FILTERS, true);
		fputs("]},\n", stdout);
		break;
	case SQFS_COMP_LZO:
		printf("{\"algorithm\": \"%s\", \"level\": %u},\n", lzo_algorithm_name(c->algorithm), c->level);
		break;
	case SQFS_COMP_LZ4:
		printf("{\"version\": %u, \"high_compression\": %s},\n", c->version, c->flags & 1 ? "true" : "false");
		break;
	case SQFS_COMP_ZSTD:
		printf("{\"level\": %u},\n", c->level);
		break;
	default:
		fputs("{},\n", stdout);
		break;
	}
}

static void print_json(const char *image, const struct qs_info *in)
{
	fputs("{\n  \"image\": ", stdout);
	json_print_string(stdout, image);
	printf(",\n  \"offset\": %llu,\n", (unsigned long long)in->offset);
	printf("  \"version\": \"%u.%u\",\n", in->version_major, in->version_minor);
	printf("  \"compressor\": \"%s\",\n", in->compressor_name);
	printf("  \"compressor_id\": %u,\n", in->compressor);
	print_json_comp_options(in);
	printf("  \"block_size\": %u,\n  \"block_log\": %u,\n", in->block_size, in->block_log);
	printf("  \"flags\": %u,\n  \"flag_names\": [", in->flags);
	for (size_t i = 0, n = 0; i < N_SUPER_FLAGS; i++) {
		if (in->flags & super_flags[i].bit)
			printf("%s\"%s\"", n++ ? ", " : "", super_flags[i].name);
	}
	printf("],\n  \"mkfs_time\": %u,\n", in->mkfs_time);
	printf("  \"bytes_used\": %llu,\n", (unsigned long long)in->bytes_used);
	printf("  \"inode_count\": %u,\n  \"fragment_count\": %u,\n", in->inode_count, in->fragment_count);
	printf("  \"id_count\": %u,\n  \"xattr_id_count\": %u,\n", in->id_count, in->xattr_id_count);
	printf("  \"root_inode_ref\": %llu,\n", (unsigned long long)in->root_inode_ref);
	fputs("  \"tables\": {\n", stdout);
	print_json_table("inode", in->inode_table_start, false);
	print_json_table("directory", in->directory_table_start, false);
	print_json_table("fragment", in->fragment_table_start, false);
	print_json_table("export", in->export_table_start, false);
	print_json_table("id", in->id_table_start, false);
	print_json_table("xattr_id", in->xattr_id_table_start, true);
	fputs("  }\n}\n", stdout);
}

static int info_main(int argc, char **argv)
{
	struct cli_common co = { .cmd = &cmd_info };
	struct qs_image *img;
	bool json = false;
	int st = cli_parse_common_json(&co, argc, argv, &json);

	if (st != CLI_CONTINUE)
		return st;
	if (argc - optind != 1)
		return cli_usage(&cmd_info, argc == optind ? "missing IMAGE" : "too many arguments");
	st = cli_open_image(&co, argv[optind], &img);
	if (st)
		return st;
	if (json)
		print_json(argv[optind], qs_image_info(img));
	else
		print_text(argv[optind], qs_image_info(img));
	qs_image_close(img);
	return cli_finish_stdout(CLI_EXIT_OK);
}

const struct cli_command cmd_info = {
	.name = "info",
	.usage = "quash info [--json] [--offset N] IMAGE",
	.summary = "show an image's superblock: compressor, block size, counts, tables",
	.help =
		"Reads and validates the superblock of IMAGE and prints what it records: the\n"
		"format version, the compressor and its options, the block size, the flags, the\n"
		"creation time, the size in bytes, the counts of inodes, fragments, ids and\n"
		"xattr ids, and where each table starts (a byte offset from the superblock).\n"
		"\n"
		"Options:\n"
		"  -j, --json            print one JSON object instead (absent tables are null)\n"
		CLI_COMMON_HELP
		"\n"
		CLI_EXIT_STATUS_HELP
		"\n"
		"Examples:\n"
		"  quash info rootfs.sqfs\n"
		"  quash info --json https://example.com/app.sqfs | python3 -m json.tool\n"
		"  quash info --offset 1M disk.img\n",
	.run = info_main,
};
