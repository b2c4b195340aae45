/*
 * thread_ctx.c - the per-thread context slots the wrappers keep their codec
 * state in.
 *
 * The slots are one malloc'd array per thread.  A __thread pointer finds it
 * without a call; a pthread key exists only so that its destructor frees the
 * contexts of threads that exit (FUSE worker threads come and go).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "quash.h"
#include "thread_ctx.h"

struct thread_slots {
	void *ctx[QS_SLOT_COUNT];
	void (*destroy[QS_SLOT_COUNT])(void *ctx);
};

static __thread struct thread_slots *this_thread;
static pthread_key_t slots_key;
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static int slots_key_err;

static void free_slots(void *arg)
{
	struct thread_slots *slots = arg;

	for (int i = 0; i < QS_SLOT_COUNT; i++)
		if (slots->ctx[i])
			slots->destroy[i](slots->ctx[i]);
	free(slots);
	this_thread = NULL;
}

static void make_slots_key(void)
{
	slots_key_err = pthread_key_create(&slots_key, free_slots);
}

void *qs_thread_ctx(enum qs_comp_slot slot)
{
	return this_thread ? this_thread->ctx[slot] : NULL;
}

static struct thread_slots *thread_slots_get(void)
{
	struct thread_slots *slots;

	if (this_thread)
		return this_thread;
	pthread_once(&slots_once, make_slots_key);
	if (slots_key_err)
		return NULL;
	slots = calloc(1, sizeof(*slots));
	if (!slots)
		return NULL;
	if (pthread_setspecific(slots_key, slots) != 0) {
		free(slots);
		return NULL;
	}
	this_thread = slots;
	return slots;
}

int qs_thread_ctx_set(enum qs_comp_slot slot, void *ctx, void (*destroy)(void *ctx))
{
	struct thread_slots *slots = thread_slots_get();

	if (!slots) {
		destroy(ctx);
		return qs_set_error(-ENOMEM, "out of memory for per-thread compressor state");
	}
	if (slots->ctx[slot])
		slots->destroy[slot](slots->ctx[slot]);
	slots->ctx[slot] = ctx;
	slots->destroy[slot] = destroy;
	return 0;
}
