/*
 * source.c - what every byte source shares: allocation and closing, the
 * front end's retry-notice hook and the per-thread interrupt flag that remote
 * requests poll.
 */
#include <stdlib.h>
#include <string.h>

#include "quash.h"
#include "source_remote.h"   /* qs_source_retry_notice() */

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

/* qs_source_set_event_notice(): set once at start by a front end, read when a source tells. */
static _Atomic qs_source_event_fn event_notice;

void qs_source_set_event_notice(qs_source_event_fn fn)
{
	event_notice = fn;
}

void qs_source_event(const char *name, const char *message)
{
	qs_source_event_fn fn = event_notice;

	if (fn)
		fn(name, message);
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
