/*
 * cmd_ls.c - quash ls: list a directory of an image, or a whole subtree.
 *
 * The long format is unsquashfs -lln's (which is ls -l's with ISO times and
 * numeric owners, the only owners an image knows), so the two can be
 * compared line by line.  Entries come in the order the image stores them,
 * which mksquashfs sorts by name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "inomap.h"

/* Width of "uid/gid size" in the long format, as unsquashfs pads it. */
#define LS_OWNER_SIZE_WIDTH 25

struct lister {
	struct qs_image *img;
	const char *image;
	bool long_format, recursive, json;
	bool listed_one;                /* for the commas between JSON entries */
	struct cli_path path;           /* of the entry being listed, from the root */
	struct inomap visited;          /* directories listed already */
	char *target;                   /* QS_SYMLINK_MAX + 1 bytes for symlink targets */
	int status;
};

static void print_long(struct lister *l, const struct qs_inode *inode, const char *name)
{
	char mode[CLI_MODE_STRING_LEN], owner[32], when[32];
	int pad;

	cli_mode_string(inode->mode, mode);
	pad = snprintf(owner, sizeof(owner), "%u/%u", inode->uid, inode->gid);
	pad = LS_OWNER_SIZE_WIDTH - (pad - 1);
	cli_format_time(inode->mtime, false, when, sizeof(when));
	if (inode->type == QS_BLKDEV || inode->type == QS_CHRDEV)
		printf("%s %s %*s%3u,%3u %s %s", mode, owner, pad - 7 > 0 ? pad - 7 : 0, " ",
		       cli_dev_major(inode->rdev), cli_dev_minor(inode->rdev), when, name);
	else
		printf("%s %s %*llu %s %s", mode, owner, pad > 0 ? pad : 0, (unsigned long long)inode->size,
		       when, name);
	if (inode->type == QS_SYMLINK) {
		if (qs_readlink(l->img, inode, l->target, QS_SYMLINK_MAX + 1) < 0) {
			putchar('\n');
			cli_error(l->image, l->path.buf, "%s", qs_last_error());
			l->status = CLI_EXIT_ERROR;
			return;
		}
		printf(" -> %s", l->target);
	}
	putchar('\n');
}

/* One element of the JSON array: the full path, the name and the inode's fields. */
static void print_json(struct lister *l, const struct qs_inode *inode, const char *name)
{
	const char *target = NULL;

	if (inode->type == QS_SYMLINK) {
		if (qs_readlink(l->img, inode, l->target, QS_SYMLINK_MAX + 1) < 0) {
			cli_error(l->image, l->path.buf, "%s", qs_last_error());
			l->status = CLI_EXIT_ERROR;
			return;
		}
		target = l->target;
	}
	fputs(l->listed_one ? ",\n" : "\n", stdout);
	l->listed_one = true;
	cli_print_json_inode(stdout, l->path.buf, inode, target);
	fputs(", \"name\": ", stdout);
	json_print_string(stdout, name);
	putchar('}');
}

static void print_entry(struct lister *l, const struct qs_inode *inode, const char *name)
{
	if (l->json)
		print_json(l, inode, name);
	else if (l->long_format)
		print_long(l, inode, name);
	else
		puts(name);
}

static void list_dir(struct lister *l, const struct qs_inode *dir, unsigned depth);

/* Descend into a directory met while listing recursively, once only. */
static void list_subdir(struct lister *l, const struct qs_inode *dir, unsigned depth)
{
	if (inomap_get(&l->visited, dir->ino)) {
		cli_error(l->image, l->path.buf, "directory appears twice in the tree (a loop?)");
		l->status = CLI_EXIT_ERROR;
		return;
	}
	if (depth > CLI_DEPTH_MAX) {
		cli_error(l->image, l->path.buf, "directories nested deeper than %d", CLI_DEPTH_MAX);
		l->status = CLI_EXIT_ERROR;
		return;
	}
	list_dir(l, dir, depth);
}

static void list_dir(struct lister *l, const struct qs_inode *dir, unsigned depth)
{
	struct qs_dir_iter it;
	struct qs_dirent ent;
	struct qs_inode inode;
	int err;

	if (inomap_put(&l->visited, dir->ino, l) < 0 || qs_dir_open(l->img, dir, &it) < 0) {
		cli_error(l->image, l->path.buf, "%s", qs_last_error());
		l->status = CLI_EXIT_ERROR;
		return;
	}
	while ((err = qs_dir_next(&it, &ent)) > 0) {
		ssize_t back = cli_path_push(&l->path, ent.name, ent.name_len);

		if (back < 0) {
			err = qs_set_error(-ENOMEM, "out of memory");
			break;
		}
		if (qs_inode_read(l->img, ent.ref, &inode) < 0) {
			cli_error(l->image, l->path.buf, "%s", qs_last_error());
			l->status = CLI_EXIT_ERROR;
		} else {
			print_entry(l, &inode, l->recursive && !l->json ? l->path.buf : ent.name);
			if (l->recursive && inode.type == QS_DIR)
				list_subdir(l, &inode, depth + 1);
		}
		cli_path_pop(&l->path, (size_t)back);
	}
	if (err < 0) {
		cli_error(l->image, l->path.buf, "%s", qs_last_error());
		l->status = CLI_EXIT_ERROR;
	}
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static int ls_path(struct lister *l, const char *path)
{
	struct qs_inode inode;

	if (cli_path_set_image(&l->path, path) < 0) {
		cli_error(l->image, path, "out of memory");
		return CLI_EXIT_ERROR;
	}
	if (cli_lookup(l->img, l->image, path, &inode))
		return CLI_EXIT_ERROR;
	if (inode.type == QS_DIR)
		list_dir(l, &inode, 0);
	else
		print_entry(l, &inode, l->json ? base_name(l->path.buf) : path);
	return l->status;
}

static int ls_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "long", no_argument, NULL, 'l' },
		{ "recursive", no_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'j' },
		CLI_COMMON_LONGOPTS,
		{ 0 }
	};
	struct cli_common co = { .cmd = &cmd_ls };
	struct lister l = { 0 };
	int opt, st;

	while ((opt = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS "lRj", longopts, NULL)) != -1) {
		if (opt == 'l') {
			l.long_format = true;
		} else if (opt == 'j') {
			l.json = true;
		} else if (opt == 'R') {
			l.recursive = true;
		} else {
			st = cli_common_option(&co, opt, optarg);
			if (st != CLI_CONTINUE)
				return st;
		}
	}
	if (argc - optind < 1 || argc - optind > 2)
		return cli_usage(&cmd_ls, argc == optind ? "missing IMAGE" : "too many arguments");
	l.image = argv[optind];
	l.target = malloc(QS_SYMLINK_MAX + 1);
	if (!l.target) {
		cli_error(l.image, NULL, "out of memory");
		return CLI_EXIT_ERROR;
	}
	st = cli_open_image(&co, l.image, &l.img);
	if (st == CLI_EXIT_OK) {
		if (l.json)
			putchar('[');
		st = ls_path(&l, argc - optind == 2 ? argv[optind + 1] : "/");
		if (l.json)
			fputs(l.listed_one ? "\n]\n" : "]\n", stdout);
		qs_image_close(l.img);
	}
	inomap_free(&l.visited, NULL);
	cli_path_free(&l.path);
	free(l.target);
	return cli_finish_stdout(st);
}

const struct cli_command cmd_ls = {
	.name = "ls",
	.usage = "quash ls [-l] [-R] [--json] [--offset N] IMAGE [PATH]",
	.summary = "list the entries of a directory in an image",
	.help =
		"Lists the directory PATH of IMAGE (default: the root), or shows PATH itself if it\n"
		"is not a directory.  Symbolic links are never followed.\n"
		"\n"
		"Options:\n"
		"  -l, --long            one line per entry as unsquashfs -lln prints it: mode,\n"
		"                        uid/gid, size (major,minor for devices), modification\n"
		"                        time, name, and '-> target' for symbolic links\n"
		"  -R, --recursive       list the whole tree below PATH, one full path per line,\n"
		"                        each directory before its contents\n"
		"  -j, --json            one JSON array, an object per entry: path, name, type,\n"
		"                        inode, mode, nlink, uid, gid, size, mtime, and target,\n"
		"                        major, minor where they apply (bytes of a name that are\n"
		"                        not UTF-8 come as U+DC80..U+DCFF, Python's surrogateescape)\n"
		CLI_COMMON_HELP
		"\n"
		"Times are local times; set TZ=UTC for UTC.\n"
		"\n"
		CLI_EXIT_STATUS_HELP
		"\n"
		"Examples:\n"
		"  quash ls image.sqfs /etc\n"
		"  quash ls -lR image.sqfs\n"
		"  quash ls --json -R image.sqfs | jq -r '.[] | select(.size > 1000000) | .path'\n",
	.run = ls_main,
};
