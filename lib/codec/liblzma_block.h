/*
 * liblzma_block.h - running one squashfs block through liblzma, shared by
 * lzma_wrapper.c (.lzma "alone" format) and xz_wrapper.c (.xz streams).
 * Defined in xz_wrapper.c.
 *
 * Each thread keeps one decoder and one encoder lzma_stream per format.
 * Re-initialising a stream with the same kind of coder reuses its memory
 * (dictionary, hash tables), which is most of the cost of a block.
 */
#ifndef QUASH_LIBLZMA_BLOCK_H
#define QUASH_LIBLZMA_BLOCK_H

#include <lzma.h>
#include <sys/types.h>

#include "wrapper.h"

/*
 * Memory a decoder may use.  squashfs dictionaries are at most the block
 * size (1 MiB); a stream asking for more is hostile.  Same limit as
 * squashfs-tools.
 */
#define QS_LZMA_MEMLIMIT	(32u << 20)

struct qs_lzma_streams {
	lzma_stream dec;
	lzma_stream enc;
};

/* This thread's pair of streams for 'slot', or NULL (-ENOMEM, message set). */
struct qs_lzma_streams *qs_lzma_streams_get(enum qs_comp_slot slot);

/*
 * Decode all of src into dst with an initialised decoder: the decoded size,
 * or -EIO naming 'what' if the data is corrupt, truncated or exceeds cap.
 */
ssize_t qs_lzma_decode(lzma_stream *strm, lzma_ret init, const char *what, const void *src, size_t len,
		       void *dst, size_t cap);

/*
 * Encode all of src into at most 'room' bytes of dst with an initialised
 * encoder: the encoded size, 0 if it does not fit, or -errno.
 */
ssize_t qs_lzma_encode(lzma_stream *strm, lzma_ret init, const char *what, const void *src, size_t len,
		       void *dst, size_t room);

#endif
