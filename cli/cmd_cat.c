/*
 * cmd_cat.c - quash cat: copy files of an image to standard output.
 *
 * Whole blocks go from the library's cache straight to write(2), so a file
 * costs no copy beyond its decompression.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* Write all of buf to fd; 0 or -errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int cat_one(struct qs_image *img, const char *image, const char *path)
{
	const struct qs_info *info = qs_image_info(img);
	struct qs_inode inode;
	struct qs_file *file;
	uint64_t nblocks;
	int status = CLI_EXIT_OK;

	if (cli_lookup(img, image, path, &inode))
		return CLI_EXIT_ERROR;
	if (inode.type != QS_FILE) {
		cli_error(image, path, "not a regular file (%s)", cli_type_name(inode.type));
		return CLI_EXIT_ERROR;
	}
	if (qs_file_open(img, &inode, &file) < 0) {
		cli_error(image, path, "%s", qs_last_error());
		return CLI_EXIT_ERROR;
	}
	nblocks = (inode.size + info->block_size - 1) / info->block_size;
	for (uint64_t i = 0; i < nblocks; i++) {
		struct qs_block *block;
		const void *data;
		size_t size;
		int err;

		if (qs_file_block(file, i, &block, &data, &size) < 0) {
			cli_error(image, path, "%s", qs_last_error());
			status = CLI_EXIT_ERROR;
			break;
		}
		err = write_all(STDOUT_FILENO, data, size);
		qs_block_release(img, block);
		if (err) {
			fprintf(stderr, "quash: standard output: %s\n", strerror(-err));
			status = CLI_EXIT_ERROR;
			break;
		}
	}
	qs_file_close(file);
	return status;
}

static int cat_main(int argc, char **argv)
{
	struct cli_common co = { .cmd = &cmd_cat };
	struct qs_image *img;
	int st;

	st = cli_parse_common_only(&co, argc, argv);
	if (st != CLI_CONTINUE)
		return st;
	if (argc - optind < 2)
		return cli_usage(&cmd_cat, argc == optind ? "missing IMAGE" : "missing PATH");
	st = cli_open_image(&co, argv[optind], &img);
	if (st)
		return st;
	for (int i = optind + 1; i < argc; i++) {
		if (cat_one(img, argv[optind], argv[i]))
			st = CLI_EXIT_ERROR;
	}
	qs_image_close(img);
	return st;
}

const struct cli_command cmd_cat = {
	.name = "cat",
	.usage = "quash cat [--offset N] IMAGE PATH...",
	.summary = "write the contents of files in an image to standard output",
	.help =
		"Writes each regular file PATH of IMAGE to standard output, one after the other.\n"
		"Holes in sparse files come out as zeros.  A PATH that is missing or not a regular\n"
		"file (symbolic links are not followed) is reported and skipped; the others are\n"
		"still written, and the exit status is 1.\n"
		"\n"
		"Options:\n"
		CLI_COMMON_HELP
		"\n"
		CLI_EXIT_STATUS_HELP
		"\n"
		"Examples:\n"
		"  quash cat image.sqfs /etc/os-release\n"
		"  quash cat --offset 4K firmware.bin /boot/config | less\n",
	.run = cat_main,
};
