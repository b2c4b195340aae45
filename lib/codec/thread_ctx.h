/*
 * thread_ctx.h - per-thread codec contexts for the *_wrapper.c files.
 *
 * A decoder or encoder context (zstd's DCtx, liblzma's state, libdeflate's
 * tables) is costly to build and not safe to share, so each thread keeps its
 * own, made on first use and freed when the thread exits.  No lock is taken
 * on the decompression path.
 */
#ifndef QUASH_THREAD_CTX_H
#define QUASH_THREAD_CTX_H

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

#endif
