/*
 * util.c - messages and hashing shared by the writer's files.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pack_util.h"
#include "progress.h"

void pack_error(const char *fmt, ...)
{
	va_list ap;

	progress_lock();
	va_start(ap, fmt);
	fputs("quash: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	progress_unlock();
}

void pack_warn(const char *fmt, ...)
{
	va_list ap;

	progress_lock();
	va_start(ap, fmt);
	fputs("quash: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	progress_unlock();
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v * 0x87c37b91114253d5ull;
	h = (h << 31 | h >> 33) * 0x4cf5ad432745937full;
	return h;
}

uint64_t pack_hash(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&v, p, 8);
		h = mix(h, v);
	}
	v = 0;
	memcpy(&v, p, len);
	h = mix(h, v ^ (uint64_t)len << 56);
	h ^= h >> 29;
	return h;
}
