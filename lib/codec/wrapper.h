/*
 * wrapper.h - what the *_wrapper.c files share and nobody else needs: the
 * interface they implement (codec.h), their per-thread contexts
 * (thread_ctx.h) and the "must come out smaller" rule.
 */
#ifndef QUASH_WRAPPER_H
#define QUASH_WRAPPER_H

#include <stddef.h>

#include "codec.h"
#include "thread_ctx.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

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
