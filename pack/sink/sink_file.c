/*
 * sink_file.c - the image as a local file, made visible atomically.
 *
 * Bytes go to "DIR/.NAME.XXXXXX" beside the target; finish writes the
 * head at offset 0, fsyncs, renames over the target and fsyncs the
 * directory.  A target that exists stays untouched until that rename.
 * Writeback is started every few MiB while packing, so that the final
 * fsync does not begin from a whole image of dirty pages.
 * Signals that end the process remove the temporary file first, so an
 * interrupted pack leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sink.h"
#include "base/util.h"

#define WRITEBACK_CHUNK (8u << 20)      /* bytes appended between writeback starts */

struct file_sink {
	struct pack_sink sink;
	int fd;
	char *path;
	char *tmp;
	uint64_t offset;                /* where the image starts in the file (mksquashfs -offset) */
	uint64_t appended, writeback;   /* bytes appended; bytes whose writeback was started */
};

/* The one temporary file a signal must remove; the handler reads only this. */
static char cleanup_path[PATH_MAX];
static volatile sig_atomic_t cleanup_armed;

static void on_fatal_signal(int sig)
{
	if (cleanup_armed)
		unlink(cleanup_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void arm_cleanup(const char *tmp)
{
	struct sigaction sa;

	snprintf(cleanup_path, sizeof(cleanup_path), "%s", tmp);
	cleanup_armed = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void disarm_cleanup(void)
{
	cleanup_armed = 0;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
}

/* pwrite all of buf at off, or append at the file position when off < 0. */
static int write_all(int fd, const uint8_t *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = off < 0 ? write(fd, buf, len) : pwrite(fd, buf, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

static int file_append(struct pack_sink *s, const void *buf, size_t len)
{
	struct file_sink *f = (struct file_sink *)s;
	int err = write_all(f->fd, buf, len, -1);

	if (err < 0) {
		pack_error("%s: %s", f->tmp, strerror(-err));
		return err;
	}
	f->appended += len;
	if (f->appended - f->writeback >= WRITEBACK_CHUNK) {
		/* Advisory and asynchronous: a failure shows in the final fsync. */
		sync_file_range(f->fd, (off_t)(f->offset + f->writeback), (off_t)(f->appended - f->writeback),
				SYNC_FILE_RANGE_WRITE);
		f->writeback = f->appended;
	}
	return 0;
}

static void file_free(struct file_sink *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	free(f->tmp);
	free(f);
}

static void file_abort(struct pack_sink *s)
{
	struct file_sink *f = (struct file_sink *)s;

	unlink(f->tmp);
	disarm_cleanup();
	file_free(f);
}

static int sync_parent_dir(const char *path)
{
	char *copy = strdup(path);
	char *slash = copy ? strrchr(copy, '/') : NULL;
	int fd, err = 0;

	if (!copy)
		return -ENOMEM;
	if (slash == copy)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	fd = open(slash ? copy : ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return err;
}

static int file_finish(struct pack_sink *s, const uint8_t *head, size_t head_len)
{
	struct file_sink *f = (struct file_sink *)s;
	mode_t mask = umask(0);
	int err;

	umask(mask);
	err = write_all(f->fd, head, head_len, (off_t)f->offset);
	if (err == 0 && fchmod(f->fd, 0666 & ~mask) < 0)
		err = -errno;
	if (err == 0 && fsync(f->fd) < 0)
		err = -errno;
	if (err == 0 && close(f->fd) < 0)
		err = -errno;
	f->fd = -1;
	if (err == 0 && rename(f->tmp, f->path) < 0)
		err = -errno;
	if (err < 0) {
		pack_error("%s: %s", f->path, strerror(-err));
		file_abort(s);
		return err;
	}
	disarm_cleanup();
	sync_parent_dir(f->path);
	file_free(f);
	return 0;
}

static const struct pack_sink_ops file_sink_ops = {
	.append = file_append,
	.finish = file_finish,
	.abort = file_abort,
};

/*
 * mksquashfs -offset N -noappend: the image starts N bytes into the file,
 * and those bytes are zeros, for a header written there afterwards (as
 * appimagetool writes its runtime).
 */
static int skip_prefix(struct file_sink *f, uint64_t offset)
{
	int err = 0;

	if (ftruncate(f->fd, (off_t)offset) < 0 || lseek(f->fd, (off_t)offset, SEEK_SET) < 0) {
		err = -errno;
		pack_error("%s: cannot start the image %llu bytes in: %s", f->path, (unsigned long long)offset,
			   strerror(-err));
	}
	f->offset = offset;
	return err;
}

int sink_file_open(const char *path, uint64_t offset, struct pack_sink **out)
{
	struct file_sink *f = calloc(1, sizeof(*f));
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path + 1) : 0;
	sigset_t block, old;
	struct stat st;
	int err;

	if (!f)
		return -ENOMEM;
	f->fd = -1;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		pack_error("%s: is a directory", path);
		free(f);
		return -EISDIR;
	}
	f->path = strdup(path);
	if (!f->path || asprintf(&f->tmp, "%.*s.%s.XXXXXX", dirlen, path, slash ? slash + 1 : path) < 0) {
		f->tmp = NULL;
		file_free(f);
		return -ENOMEM;
	}
	if (strlen(f->tmp) >= sizeof(cleanup_path)) {
		pack_error("%s: path too long", path);
		file_free(f);
		return -ENAMETOOLONG;
	}
	/* No signal may land between creating the file and arming its removal. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	err = -errno;
	if (f->fd >= 0)
		arm_cleanup(f->tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (f->fd < 0) {
		pack_error("%s: cannot create a file beside it: %s", path, strerror(-err));
		file_free(f);
		return err;
	}
	if (offset && (err = skip_prefix(f, offset)) < 0) {
		file_abort(&f->sink);
		return err;
	}
	f->sink.ops = &file_sink_ops;
	*out = &f->sink;
	return 0;
}
