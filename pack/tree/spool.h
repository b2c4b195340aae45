/*
 * spool.h - an unlinked temporary file beside the image, for bytes the
 * data phase reads later: archive contents, pseudo files' command output
 * (and, by its open, the spill file and the metadata's overflow).
 */
#ifndef QUASH_PACK_SPOOL_H
#define QUASH_PACK_SPOOL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Small files' bytes are gathered into writes of up to this, so that a tar
 * of many tiny files is not one pwrite() and ftruncate() each.
 */
#define SPOOL_BUFFER (1u << 20)

/* Archive contents are copied here so that the data phase can read every source alike. */
struct spool {
	int fd;                     /* -1 until the first archive needs it */
	uint64_t end;               /* its size, holes at the end included */
	const char *dir;            /* created in this directory (beside the image) */
	uint8_t *buf;               /* bytes not yet written: SPOOL_BUFFER of them at most */
	uint64_t buf_pos;           /* where buf[0] goes */
	size_t buf_len;
};

/* Create the spool file (once); 0 or -errno with a message. */
int spool_open(struct spool *s);
/* 'len' bytes for offset 'pos' (buffered: read them only after spool_flush()); 0 or -errno, said. */
int spool_write(struct spool *s, const void *p, size_t len, uint64_t pos);
/* Everything written, and the size 'end' (a hole at the end); 0 or -errno, said. */
int spool_flush(struct spool *s);
void spool_close(struct spool *s);

#endif
