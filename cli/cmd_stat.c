/*
 * cmd_stat.c - quash stat: everything an image records about one inode.
 *
 * One "key: value" line per field, so that scripts can pick fields with
 * grep or awk; the layout-specific fields (where a file's blocks are, where
 * a directory's listing is) come after the ones stat(1) would show.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define STAT_KEY "%-14s "

static void print_xattrs(struct qs_image *img, const char *image, const char *path,
			 const struct qs_inode *inode, int *status)
{
	struct qs_xattr *xattrs;
	size_t count;

	if (qs_xattr_list(img, inode, &xattrs, &count) < 0) {
		cli_error(image, path, "%s", qs_last_error());
		*status = CLI_EXIT_ERROR;
		return;
	}
	printf(STAT_KEY "%zu\n", "xattrs:", count);
	for (size_t i = 0; i < count; i++) {
		printf("  %s=", xattrs[i].name);
		cli_print_xattr_value(stdout, xattrs[i].value, xattrs[i].value_len);
		putchar('\n');
	}
	qs_xattr_free(xattrs, count);
}

static void print_layout(const struct qs_inode *in)
{
	if (in->type == QS_FILE) {
		printf(STAT_KEY "%llu\n", "blocks start:", (unsigned long long)in->u.file.blocks_start);
		printf(STAT_KEY "%u\n", "block count:", in->u.file.block_count);
		if (in->u.file.fragment == QS_NO_FRAGMENT)
			printf(STAT_KEY "none\n", "fragment:");
		else
			printf(STAT_KEY "%u at offset %u\n", "fragment:", in->u.file.fragment,
			       in->u.file.frag_offset);
		printf(STAT_KEY "%llu\n", "sparse bytes:", (unsigned long long)in->u.file.sparse);
	} else if (in->type == QS_DIR) {
		printf(STAT_KEY "%u\n", "parent inode:", in->u.dir.parent_ino);
		printf(STAT_KEY "block %u, offset %u\n", "listing:", in->u.dir.start_block, in->u.dir.offset);
		printf(STAT_KEY "%u\n", "index entries:", in->u.dir.index_count);
	}
}

static void print_json_layout(const struct qs_inode *in)
{
	if (in->type == QS_FILE) {
		printf(", \"blocks_start\": %llu, \"block_count\": %u", (unsigned long long)in->u.file.blocks_start,
		       in->u.file.block_count);
		if (in->u.file.fragment == QS_NO_FRAGMENT)
			fputs(", \"fragment\": null", stdout);
		else
			printf(", \"fragment\": %u, \"fragment_offset\": %u", in->u.file.fragment,
			       in->u.file.frag_offset);
		printf(", \"sparse_bytes\": %llu", (unsigned long long)in->u.file.sparse);
	} else if (in->type == QS_DIR) {
		printf(", \"parent_inode\": %u, \"listing_block\": %u, \"listing_offset\": %u, \"index_entries\": %u",
		       in->u.dir.parent_ino, in->u.dir.start_block, in->u.dir.offset, in->u.dir.index_count);
	}
}

/* A value that is text (as getfattr decides: printable, one trailing NUL
 * allowed) as a JSON string of that text; any other as "0x" and hex. */
static void print_json_xattr_value(const struct qs_xattr *x)
{
	const unsigned char *v = x->value;
	size_t n = x->value_len;
	bool text = true;
	char *copy;

	if (n > 0 && v[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++) {
		if (!isprint(v[i]) && v[i] != '\t' && v[i] != '\n')
			text = false;
	}
	copy = text ? strndup((const char *)v, n) : NULL;
	if (copy) {
		json_print_string(stdout, copy);
		free(copy);
		return;
	}
	fputs("\"0x", stdout);
	for (size_t i = 0; i < x->value_len; i++)
		printf("%02x", v[i]);
	putchar('"');
}

static void print_json_xattrs(struct qs_image *img, const char *image, const char *path,
			      const struct qs_inode *inode, int *status)
{
	struct qs_xattr *xattrs;
	size_t count;

	if (qs_xattr_list(img, inode, &xattrs, &count) < 0) {
		cli_error(image, path, "%s", qs_last_error());
		*status = CLI_EXIT_ERROR;
		fputs(", \"xattrs\": null", stdout);
		return;
	}
	fputs(", \"xattrs\": {", stdout);
	for (size_t i = 0; i < count; i++) {
		fputs(i ? ", " : "", stdout);
		json_print_string(stdout, xattrs[i].name);
		fputs(": ", stdout);
		print_json_xattr_value(&xattrs[i]);
	}
	putchar('}');
	qs_xattr_free(xattrs, count);
}

static int stat_json(struct qs_image *img, const char *image, const char *path, char *target, bool *printed)
{
	struct qs_inode in;
	int status = CLI_EXIT_OK;

	if (cli_lookup(img, image, path, &in))
		return CLI_EXIT_ERROR;
	if (in.type == QS_SYMLINK && qs_readlink(img, &in, target, QS_SYMLINK_MAX + 1) < 0) {
		cli_error(image, path, "%s", qs_last_error());
		return CLI_EXIT_ERROR;
	}
	fputs(*printed ? ",\n" : "\n", stdout);
	*printed = true;
	cli_print_json_inode(stdout, path, &in, in.type == QS_SYMLINK ? target : NULL);
	printf(", \"extended\": %s, \"inode_ref\": %llu, \"blocks\": %llu", in.extended ? "true" : "false",
	       (unsigned long long)in.ref, (unsigned long long)qs_inode_blocks512(&in));
	print_json_layout(&in);
	print_json_xattrs(img, image, path, &in, &status);
	putchar('}');
	return status;
}

static int stat_one(struct qs_image *img, const char *image, const char *path, char *target)
{
	struct qs_inode in;
	char mode[CLI_MODE_STRING_LEN], when[64];
	int status = CLI_EXIT_OK;

	if (cli_lookup(img, image, path, &in))
		return CLI_EXIT_ERROR;
	cli_mode_string(in.mode, mode);
	cli_format_time(in.mtime, true, when, sizeof(when));
	printf(STAT_KEY "%s\n", "path:", path);
	printf(STAT_KEY "%s%s\n", "type:", cli_type_name(in.type), in.extended ? " (extended inode)" : "");
	printf(STAT_KEY "%u\n", "inode:", in.ino);
	printf(STAT_KEY "0x%llx\n", "inode ref:", (unsigned long long)in.ref);
	printf(STAT_KEY "%04o (%s)\n", "mode:", in.mode & 07777, mode);
	printf(STAT_KEY "%u\n", "links:", in.nlink);
	printf(STAT_KEY "%u\n", "uid:", in.uid);
	printf(STAT_KEY "%u\n", "gid:", in.gid);
	printf(STAT_KEY "%llu\n", "size:", (unsigned long long)in.size);
	printf(STAT_KEY "%llu\n", "blocks:", (unsigned long long)qs_inode_blocks512(&in));
	if (in.type == QS_BLKDEV || in.type == QS_CHRDEV)
		printf(STAT_KEY "%u,%u\n", "device:", cli_dev_major(in.rdev), cli_dev_minor(in.rdev));
	printf(STAT_KEY "%s (%u)\n", "modified:", when, in.mtime);
	if (in.type == QS_SYMLINK) {
		if (qs_readlink(img, &in, target, QS_SYMLINK_MAX + 1) < 0) {
			cli_error(image, path, "%s", qs_last_error());
			status = CLI_EXIT_ERROR;
		} else {
			printf(STAT_KEY "%s\n", "target:", target);
		}
	}
	print_layout(&in);
	print_xattrs(img, image, path, &in, &status);
	return status;
}

static int stat_main(int argc, char **argv)
{
	struct cli_common co = { .cmd = &cmd_stat };
	struct qs_image *img;
	bool json = false, printed = false;
	char *target;
	int st = cli_parse_common_json(&co, argc, argv, &json);

	if (st != CLI_CONTINUE)
		return st;
	if (argc - optind < 2)
		return cli_usage(&cmd_stat, argc == optind ? "missing IMAGE" : "missing PATH");
	target = malloc(QS_SYMLINK_MAX + 1);
	if (!target) {
		cli_error(argv[optind], NULL, "out of memory");
		return CLI_EXIT_ERROR;
	}
	st = cli_open_image(&co, argv[optind], &img);
	if (st == CLI_EXIT_OK && json) {
		putchar('[');
		for (int i = optind + 1; i < argc; i++) {
			if (stat_json(img, argv[optind], argv[i], target, &printed))
				st = CLI_EXIT_ERROR;
		}
		fputs(printed ? "\n]\n" : "]\n", stdout);
		qs_image_close(img);
	} else if (st == CLI_EXIT_OK) {
		for (int i = optind + 1; i < argc; i++) {
			if (i > optind + 1)
				putchar('\n');
			if (stat_one(img, argv[optind], argv[i], target))
				st = CLI_EXIT_ERROR;
		}
		qs_image_close(img);
	}
	free(target);
	return cli_finish_stdout(st);
}

const struct cli_command cmd_stat = {
	.name = "stat",
	.usage = "quash stat [--json] [--offset N] IMAGE PATH...",
	.summary = "show all an image records about a file: inode, mode, owner, times, xattrs",
	.help =
		"Prints, for each PATH in IMAGE (symbolic links are not followed), one line per\n"
		"field: path, type (and whether the inode is of the extended kind), inode number and\n"
		"reference, mode, link count, uid, gid, size, 512-byte blocks as the kernel's mount\n"
		"reports them, device numbers, modification time, symlink target; for regular files\n"
		"where their blocks and fragment are, for directories their parent and listing;\n"
		"then the count of extended attributes and each as name=value, values as getfattr\n"
		"shows them (\"text\" if printable, else 0xHEX).\n"
		"\n"
		"Options:\n"
		"  -j, --json            one JSON array, an object per PATH with the same fields\n"
		"                        (mode and times as numbers; xattrs as an object, a text\n"
		"                        value as its text, any other as \"0x\" and hex)\n"
		CLI_COMMON_HELP
		"\n"
		CLI_EXIT_STATUS_HELP
		"\n"
		"Examples:\n"
		"  quash stat image.sqfs /usr/bin/env\n"
		"  quash stat image.sqfs / /etc | grep '^inode:'\n",
	.run = stat_main,
};
