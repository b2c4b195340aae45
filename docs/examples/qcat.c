/*
 * qcat.c - libquash's example: print one file of a squashfs image.
 *
 *   cc qcat.c $(pkg-config --cflags --libs quash) -o qcat
 *   ./qcat IMAGE PATH          IMAGE: a file, or an http(s):// or s3:// URL
 *
 * Open a byte source, open the image on it, resolve the path, read the
 * file in pieces.  Every call returns 0 or a count, or a negative errno
 * with a one-line reason in qs_last_error(); the library never prints.
 * tests/t-libquash.sh builds it against the installed library and runs it.
 */
#include <stdio.h>

#include <quash.h>

/* The library's message says what went wrong, not where: the caller adds that. */
static int fail(const char *image, const char *what)
{
	fprintf(stderr, "qcat: %s: %s: %s\n", image, what, qs_last_error());
	return 1;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	struct qs_source *src;
	struct qs_image *img;
	struct qs_inode inode;
	struct qs_file *file;
	uint64_t off = 0;
	ssize_t n;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: qcat IMAGE PATH  (libquash %s)\n", QUASH_VERSION);
		return 2;
	}
	/* Zeroed options are the defaults: no cache directory, the image's own block cache. */
	err = qs_source_open(argv[1], &(struct qs_source_options){ 0 }, &src);
	if (err < 0)
		return fail(argv[1], "open");
	err = qs_image_open(src, &(struct qs_image_options){ 0 }, &img);   /* takes src, even on failure */
	if (err < 0)
		return fail(argv[1], "open");
	err = qs_lookup_path(img, argv[2], &inode);
	if (err == 0)
		err = qs_file_open(img, &inode, &file);
	if (err < 0) {
		fail(argv[1], argv[2]);
		qs_image_close(img);
		return 1;
	}
	while ((n = qs_file_pread(file, buf, sizeof(buf), off)) > 0) {
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
		off += (uint64_t)n;
	}
	if (n < 0)
		fail(argv[1], argv[2]);
	qs_file_close(file);
	qs_image_close(img);
	return n < 0 || fflush(stdout) != 0 ? 1 : 0;
}
