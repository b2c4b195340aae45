/*
 * window.c - bytes [offset, offset + size) of another source: the image
 * embedded in a larger file (-o offset=, a SIF partition).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quash.h"

struct window {
	struct qs_source *base;
	uint64_t offset;
};

static int window_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct window *w = src->priv;

	if (off > src->size || len > src->size - off)
		return qs_set_error(-EIO, "read of %zu bytes at %llu is past the end (%llu bytes)", len,
				    (unsigned long long)off, (unsigned long long)src->size);
	return qs_source_pread(w->base, buf, len, w->offset + off);
}

static int window_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct window *w = src->priv;

	return qs_source_prefetch(w->base, w->offset + off, len);
}

static int window_willneed(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct window *w = src->priv;

	return qs_source_willneed(w->base, w->offset + off, len);
}

static int window_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct window *w = src->priv;

	return qs_source_warm(w->base, w->offset + off, len);
}

/* The base's ranges, in the window's offsets; those outside it passed over. */
static int window_replayed(struct qs_source *src, size_t *next, uint64_t *off, uint64_t *len)
{
	struct window *w = src->priv;
	uint64_t o, l;
	int ret;

	while ((ret = qs_source_replayed(w->base, next, &o, &l)) > 0) {
		if (o + l <= w->offset || o >= w->offset + src->size)
			continue;
		if (o < w->offset) {
			l -= w->offset - o;
			o = w->offset;
		}
		*off = o - w->offset;
		*len = l < src->size - *off ? l : src->size - *off;
		return 1;
	}
	return ret;
}

static void window_close(struct qs_source *src)
{
	struct window *w = src->priv;

	qs_source_close(w->base);
	free(w);
}

static const struct qs_source_ops window_ops = {
	.pread = window_pread,
	.close = window_close,
	.prefetch = window_prefetch,
	.willneed = window_willneed,
	.warm = window_warm,
	.replayed = window_replayed,
};

int qs_source_open_window(struct qs_source *base, uint64_t offset, uint64_t size, struct qs_source **out)
{
	struct window *w;
	char *identity;
	size_t n;

	if (offset > base->size || size > base->size - offset) {
		qs_source_close(base);
		return qs_set_error(-EINVAL, "offset %llu is past the end of the file (%llu bytes)",
				    (unsigned long long)offset, (unsigned long long)base->size);
	}
	w = malloc(sizeof(*w));
	n = strlen(base->identity) + 48;
	identity = malloc(n);
	if (!w || !identity)
		goto nomem;
	snprintf(identity, n, "%s@%llu+%llu", base->identity, (unsigned long long)offset,
		 (unsigned long long)size);
	w->base = base;
	w->offset = offset;
	*out = qs_source_alloc(&window_ops, base->name, identity, size, w);
	free(identity);
	if (!*out)
		goto nomem;
	return 0;
nomem:
	free(w);
	free(identity);
	qs_source_close(base);
	return qs_set_error(-ENOMEM, "out of memory");
}
