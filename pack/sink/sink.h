/*
 * sink.h - where the image's bytes go.
 *
 * The writer produces the image as one append-only stream, except for its
 * first bytes (superblock and compressor options), which are only known at
 * the end.  So a sink needs just three operations:
 *
 *   append(buf, len)     the next len bytes of the image, in order.  The
 *                        writer first appends a placeholder of head_len
 *                        zero bytes where the head will go.
 *   finish(head, len)    the final bytes for offset 0 (len is the same
 *                        head_len), then make the image visible at its
 *                        name atomically and durably.  After a failed
 *                        finish nothing is visible.
 *   abort()              give up: nothing becomes visible, and whatever
 *                        was staged (temp file, multipart upload) goes.
 *
 * Exactly one of finish or abort is called, and it frees the sink.  All
 * calls come from one thread at a time.  Errors are -errno with a message
 * printed through pack_error() naming the target.  A file sink implements
 * this with a temporary file beside the target and rename(2); a multipart
 * upload sink can keep the first part in memory until finish.
 */
#ifndef QUASH_PACK_SINK_H
#define QUASH_PACK_SINK_H

#include <stddef.h>
#include <stdint.h>

struct pack_sink;

struct pack_sink_ops {
	int (*append)(struct pack_sink *s, const void *buf, size_t len);
	int (*finish)(struct pack_sink *s, const uint8_t *head, size_t head_len);
	void (*abort)(struct pack_sink *s);
};

struct pack_sink {
	const struct pack_sink_ops *ops;
	uint64_t written;           /* bytes appended so far: the next byte's image offset */
};

static inline int sink_append(struct pack_sink *s, const void *buf, size_t len)
{
	int err = s->ops->append(s, buf, len);

	if (err == 0)
		s->written += len;
	return err;
}

/*
 * A sink writing the local file 'path': a temporary file in the same
 * directory, fsync'd and renamed over 'path' by finish.  Until then a
 * SIGINT, SIGTERM or SIGHUP removes the temporary file and exits.
 */
/* offset: the image starts this far into the file, after zeros (mksquashfs -offset). */
int sink_file_open(const char *path, uint64_t offset, struct pack_sink **out);

/*
 * A sink writing "s3://BUCKET/KEY" with a multipart upload (pack/sink_s3.c);
 * 'endpoint' as for reading (NULL: AWS_ENDPOINT_URL, else AWS).  Until
 * finish, a SIGINT, SIGTERM or SIGHUP aborts the upload and ends the process.
 */
int sink_s3_open(const char *spec, const char *endpoint, struct pack_sink **out);

#endif
