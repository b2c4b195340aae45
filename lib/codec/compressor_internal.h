/*
 * compressor_internal.h - what the *_wrapper.c files share and nobody else
 * needs: per-thread codec contexts and the "must come out smaller" rule.
 *
 * A decoder or encoder context (zstd's DCtx, liblzma's state, libdeflate's
 * tables) is costly to build and not safe to share, so each thread keeps its
 * own, made on first use and freed when the thread exits.  No lock is taken
 * on the decompression path.
 */
#ifndef QUASH_COMPRESSOR_INTERNAL_H
#define QUASH_COMPRESSOR_INTERNAL_H

#include <stddef.h>

#include "compressor.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* One slot per kind of context a thread may hold. */
enum qs_comp_slot {
	QS_SLOT_GZIP_DEC,
	QS_SLOT_GZIP_ENC,
	QS_SLOT_ZLIB_ENC,
	QS_SLOT_LZMA,
	QS_SLOT_LZO,
	QS_SLOT_XZ,
	QS_SLOT_LZ4_HC,
	QS_SLOT_ZSTD_DEC,
	QS_SLOT_ZSTD_ENC,
	QS_SLOT_COUNT
};

/* This thread's context in 'slot', or NULL if it has none yet. */
void *qs_thread_ctx(enum qs_comp_slot slot);

/*
 * Give 'ctx' to this thread's 'slot' (replacing and destroying any earlier
 * one); 'destroy' frees it when the thread exits.  On failure (-ENOMEM) ctx
 * has been destroyed already.
 */
int qs_thread_ctx_set(enum qs_comp_slot slot, void *ctx, void (*destroy)(void *ctx));

/*
 * Room a compressor may use for a block of len bytes: a result that is not
 * smaller than the input is worthless (the block is stored raw instead), so
 * encoders are never given more than len - 1 bytes.
 */
static inline size_t qs_comp_room(size_t len, size_t cap)
{
	if (len == 0)
		return 0;
	return cap < len - 1 ? cap : len - 1;
}

#endif
