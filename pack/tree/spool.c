/*
 * spool.c - the spool file: made with O_TMPFILE (or made and unlinked at
 * once), written through a buffer that gathers small files' bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spool.h"
#include "base/util.h"

void spool_close(struct spool *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->buf);
	s->buf = NULL;
	s->buf_len = 0;
}

static int spool_pwrite(struct spool *s, const uint8_t *p, size_t len, uint64_t pos)
{
	while (len > 0) {
		ssize_t n = pwrite(s->fd, p, len, (off_t)pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			pack_error("spool: %s", strerror(errno));
			return err;
		}
		p += n;
		len -= (size_t)n;
		pos += (uint64_t)n;
	}
	return 0;
}

int spool_write(struct spool *s, const void *p, size_t len, uint64_t pos)
{
	int err;

	if (s->buf && pos == s->buf_pos + s->buf_len && len <= SPOOL_BUFFER - s->buf_len) {
		memcpy(s->buf + s->buf_len, p, len);
		s->buf_len += len;
		return 0;
	}
	err = spool_pwrite(s, s->buf, s->buf_len, s->buf_pos);
	s->buf_len = 0;
	if (err || len >= SPOOL_BUFFER / 2)
		return err ? err : spool_pwrite(s, p, len, pos);
	if (!s->buf && !(s->buf = malloc(SPOOL_BUFFER)))
		return spool_pwrite(s, p, len, pos);    /* no buffer: each write its own */
	memcpy(s->buf, p, len);
	s->buf_pos = pos;
	s->buf_len = len;
	return 0;
}

int spool_flush(struct spool *s)
{
	int err;

	if (s->fd < 0)
		return 0;
	err = spool_pwrite(s, s->buf, s->buf_len, s->buf_pos);
	s->buf_len = 0;
	if (!err && ftruncate(s->fd, (off_t)s->end) < 0) {
		err = -errno;
		pack_error("spool: %s", strerror(errno));
	}
	return err;
}

int spool_open(struct spool *s)
{
	char *tmpl;

	if (s->fd >= 0)
		return 0;
	s->fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->fd >= 0)
		return 0;
	/* No O_TMPFILE on this file system: a named file, unlinked at once. */
	if (asprintf(&tmpl, "%s/.quash-spool.XXXXXX", s->dir) < 0)
		return -ENOMEM;
	s->fd = mkostemp(tmpl, O_CLOEXEC);
	if (s->fd >= 0)
		unlink(tmpl);
	free(tmpl);
	if (s->fd < 0) {
		int err = -errno;

		pack_error("%s: cannot create a temporary file: %s", s->dir, strerror(errno));
		return err;
	}
	return 0;
}
