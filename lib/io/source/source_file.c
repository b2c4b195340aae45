/*
 * source_file.c - a local file or block device as a byte source.
 *
 * pread(2) on one shared descriptor: it is thread-safe and keeps no file
 * position, so concurrent readers need no lock.  The identity ties the
 * bytes to this very file (device, inode, size, modification time), which
 * is what a persistent cache keys on.
 *
 * The metadata tables are also held in memory once read (see file_prefetch).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quash.h"

/* Bytes [off, off + len) of the file, copied into memory by a loader thread. */
struct file_pin {
	uint64_t off, len;
	uint8_t *data;
	pthread_t loader;
	bool started;
	atomic_bool ready;          /* data holds the range: set once, with release order */
	atomic_bool stop;           /* closing: the loader gives up */
};

struct file_source {
	int fd;
	struct file_pin pin;
};

/* The loader's reads: small enough that closing never waits long. */
#define FILE_PIN_PIECE (1u << 20)

static int read_fully(int fd, uint8_t *p, size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);

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

static int file_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct file_source *f = src->priv;
	const struct file_pin *pin = &f->pin;

	if (off > src->size || len > src->size - off)
		return qs_set_error(-EIO, "read of %zu bytes at offset %llu is past the end of the file "
				    "(%llu bytes)", len, (unsigned long long)off, (unsigned long long)src->size);
	if (atomic_load_explicit(&f->pin.ready, memory_order_acquire) && off >= pin->off &&
	    off + len <= pin->off + pin->len) {
		memcpy(buf, pin->data + (off - pin->off), len);
		return 0;
	}
	return read_fully(f->fd, buf, len, off);
}

/*
 * Metadata is read in 8 KiB blocks scattered over the inode and directory
 * tables, in the order a walk visits them: on a cold page cache each is a
 * separate disk (or NFS) read, and a cold `ls -lR` spends its time waiting
 * on them.  The tables sit together at the end of the image (a small
 * fraction of it), so a thread reads that range in one
 * sequential pass at open, while the first requests are served from the
 * file, and keeps it: from then on a walk never waits on the disk or the
 * NFS server for metadata, even after the page cache has dropped the image
 * (the kernel's own squashfs, reading through the page cache, does).  On a
 * fast local disk it changes little; it matters where a read costs a seek
 * or a server round trip.
 * Bounded: a larger range is only read ahead (WILLNEED), not held.
 */
#define FILE_PREFETCH_MAX (64u << 20)

static void *pin_loader(void *arg)
{
	struct file_source *f = arg;
	struct file_pin *pin = &f->pin;

	for (uint64_t done = 0; done < pin->len; done += FILE_PIN_PIECE) {
		size_t n = pin->len - done < FILE_PIN_PIECE ? (size_t)(pin->len - done) : FILE_PIN_PIECE;

		if (atomic_load_explicit(&pin->stop, memory_order_relaxed) ||
		    read_fully(f->fd, pin->data + done, n, pin->off + done) < 0)
			return NULL;   /* reads keep going to the file */
	}
	atomic_store_explicit(&pin->ready, true, memory_order_release);
	return NULL;
}

static int file_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct file_source *f = src->priv;
	struct file_pin *pin = &f->pin;

	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = src->size - off;
	if (len > FILE_PREFETCH_MAX)
		return -posix_fadvise(f->fd, (off_t)off, FILE_PREFETCH_MAX, POSIX_FADV_WILLNEED);
	if (pin->data || len == 0)
		return 0;      /* one range per source: the opener asks once */
	pin->data = malloc(len);
	if (!pin->data)
		return -ENOMEM;
	pin->off = off;
	pin->len = len;
	if (pthread_create(&pin->loader, NULL, pin_loader, f) != 0) {
		free(pin->data);
		pin->data = NULL;
		return -posix_fadvise(f->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
	}
	pin->started = true;
	return 0;
}

/* A profile's replay: the kernel's readahead is enough for a local file. */
static int file_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct file_source *f = src->priv;

	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = src->size - off;
	return -posix_fadvise(f->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static void file_close(struct qs_source *src)
{
	struct file_source *f = src->priv;

	if (f->pin.started) {
		atomic_store_explicit(&f->pin.stop, true, memory_order_relaxed);
		pthread_join(f->pin.loader, NULL);
	}
	free(f->pin.data);
	close(f->fd);
	free(f);
}

static const struct qs_source_ops file_ops = {
	.pread = file_pread,
	.prefetch = file_prefetch,
	.warm = file_warm,
	.close = file_close,
};

int qs_source_open_file(const char *path, struct qs_source **out)
{
	struct file_source *f;
	char identity[128];
	struct stat st;
	uint64_t size;
	int fd, err;

	/*
	 * O_NONBLOCK so that a FIFO (or a device that waits for a peer)
	 * named as the image cannot block the open before fstat() says
	 * what it is; O_NOCTTY so that a terminal cannot become ours.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return qs_set_error(-errno, "%s", strerror(errno));
	if (fstat(fd, &st) < 0 || fcntl(fd, F_SETFL, 0) < 0) {
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
	f = calloc(1, sizeof(*f));
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
