/*
 * source.c - what every byte source shares: allocation, closing, choosing an
 * implementation from the name the user gave, and the offset window that
 * exposes an image embedded in a larger file.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "quash.h"
#include "profile.h"
#include "source_remote.h"
#include "verity.h"

struct qs_source *qs_source_alloc(const struct qs_source_ops *ops, const char *name, const char *identity,
				  uint64_t size, void *priv)
{
	struct qs_source *src = calloc(1, sizeof(*src));

	if (!src)
		return NULL;
	src->ops = ops;
	src->size = size;
	src->priv = priv;
	src->name = strdup(name);
	src->identity = strdup(identity);
	if (!src->name || !src->identity) {
		free(src->name);
		free(src->identity);
		free(src);
		return NULL;
	}
	return src;
}

void qs_source_close(struct qs_source *src)
{
	if (!src)
		return;
	if (src->ops->close)
		src->ops->close(src);
	free(src->name);
	free(src->identity);
	free(src);
}

/*
 * "ftp://host/x" that is no local file: a URL of a scheme quash does not
 * speak, said as such rather than as a missing file.
 */
static bool unknown_scheme(const char *spec)
{
	size_t n = strspn(spec, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	return n > 0 && isalpha((unsigned char)spec[0]) && strncmp(spec + n, "://", 3) == 0;
}

int qs_source_open(const char *spec, const struct qs_source_options *opt, struct qs_source **out)
{
	struct qs_source *src;
	int ret;

	if (qs_source_spec_is_remote(spec)) {
		/* libcurl is opened only now (lazy_lib.h): say so if it cannot be. */
		if (qs_curl_load() < 0)
			return qs_set_error(-ENOSYS, "%s", qs_curl_error());
		ret = qs_source_open_remote(spec, opt, &src);
	} else {
		ret = qs_source_open_file(spec, &src);
		if (ret == -ENOENT && unknown_scheme(spec))
			return qs_set_error(-EPROTONOSUPPORT, "unsupported URL scheme '%.*s' (http, https and s3 are)",
					    (int)strcspn(spec, ":"), spec);
	}
	if (ret < 0)
		return ret;
	/* Verification sits above the remote chunk cache, so nothing unverified reaches a reader. */
	if (opt && (opt->verity_root || opt->verity_file || opt->verity_offset_given) &&
	    (ret = qs_source_open_verified(src, opt, &src)) < 0)
		return ret;
	/* Recording and replaying profiles wrap whatever was opened (profile.c). */
	if (opt && (opt->record || opt->prefetch || opt->prefetch_beside))
		return qs_source_open_profiled(src, spec, opt, out);
	*out = src;
	return 0;
}

/* qs_source_set_retry_notice(): set once at start by a front end, read by every request. */
static _Atomic qs_retry_notice_fn retry_notice;

void qs_source_set_retry_notice(qs_retry_notice_fn fn)
{
	retry_notice = fn;
}

void qs_source_retry_notice(const char *message, unsigned seconds)
{
	qs_retry_notice_fn fn = retry_notice;

	if (fn)
		fn(message, seconds);
}

/* qs_source_set_interrupt(): this thread's remote requests end once *flag is true. */
static __thread const bool *thread_interrupt;

void qs_source_set_interrupt(const bool *flag)
{
	thread_interrupt = flag;
}

bool qs_source_interrupted(void)
{
	return thread_interrupt && __atomic_load_n(thread_interrupt, __ATOMIC_RELAXED);
}

char *qs_source_display_name(const char *spec)
{
	return strstr(spec, "://") ? remote_display_name(spec) : strdup(spec);
}

/* ---- window: bytes [offset, offset + size) of another source ---- */

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
