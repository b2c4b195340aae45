/*
 * source_file.c - a local file or block device as a byte source.
 *
 * pread(2) on one shared descriptor: it is thread-safe and keeps no file
 * position, so concurrent readers need no lock.  The identity ties the
 * bytes to this very file (device, inode, size, modification time), which
 * is what a persistent cache keys on.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quash.h"

struct file_source {
	int fd;
};

static int file_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct file_source *f = src->priv;
	uint8_t *p = buf;

	if (off > src->size || len > src->size - off)
		return qs_set_error(-EIO, "read of %zu bytes at offset %llu is past the end of the file "
				    "(%llu bytes)", len, (unsigned long long)off, (unsigned long long)src->size);
	while (len > 0) {
		ssize_t n = pread(f->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return qs_set_error(-errno, "read at offset %llu: %s", (unsigned long long)off,
					    strerror(errno));
		if (n == 0)
			return qs_set_error(-EIO, "file shrank while open (read at offset %llu)",
					    (unsigned long long)off);
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Metadata is read in 8 KiB blocks scattered over the inode and directory
 * tables, in the order a walk visits them: on a cold page cache each is a
 * separate disk (or NFS) read, and a cold `ls -lR` spends its time waiting
 * on them.  The tables sit together at the end of the image, so one
 * asynchronous readahead of that range at open brings them in while the
 * first requests are served.  Bounded, so a huge image does not flush the
 * page cache for metadata it may never need.
 */
#define FILE_PREFETCH_MAX (64u << 20)

static int file_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct file_source *f = src->priv;

	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = src->size - off;
	if (len > FILE_PREFETCH_MAX)
		len = FILE_PREFETCH_MAX;
	return -posix_fadvise(f->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static void file_close(struct qs_source *src)
{
	struct file_source *f = src->priv;

	close(f->fd);
	free(f);
}

static const struct qs_source_ops file_ops = {
	.pread = file_pread,
	.prefetch = file_prefetch,
	.close = file_close,
};

int qs_source_open_file(const char *path, struct qs_source **out)
{
	struct file_source *f;
	char identity[128];
	struct stat st;
	uint64_t size;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return qs_set_error(-errno, "%s", strerror(errno));
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return qs_set_error(err, "%s", strerror(-err));
	}
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
			err = -errno;
			close(fd);
			return qs_set_error(err, "cannot get device size: %s", strerror(-err));
		}
	} else {
		close(fd);
		return qs_set_error(S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, "not a regular file or block device");
	}
	f = malloc(sizeof(*f));
	if (!f) {
		close(fd);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	f->fd = fd;
	snprintf(identity, sizeof(identity), "file:%llu:%llu:%llu:%lld.%09ld", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino, (unsigned long long)size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	*out = qs_source_alloc(&file_ops, path, identity, size, f);
	if (!*out) {
		file_close(&(struct qs_source){ .priv = f });
		return qs_set_error(-ENOMEM, "out of memory");
	}
	return 0;
}
