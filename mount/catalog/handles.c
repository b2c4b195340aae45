/*
 * handles.c - the file handles of the catalog's own directories and
 * control files.  The kernel keeps a number, never a pointer: a server
 * that takes over after a restart (mount/holder.h) finds no object for a
 * handle it did not make and makes the object again, where a pointer
 * would lead into memory that died with the last server.  Numbers start
 * at a random odd value per server, so that two servers' handles do not
 * meet.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "catalog_int.h"

#define QC_HANDLE_BUCKETS_MIN 64

struct qc_hentry {
	uint64_t fh;
	void *obj;
	struct qc_hentry *next;
};

static size_t bucket(const struct qc_handles *h, uint64_t fh)
{
	return (size_t)((fh * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (h->nbuckets - 1);
}

/* Twice the buckets once there are more entries than buckets (h->lock held); a failure keeps the old ones. */
static void grow(struct qc_handles *h)
{
	size_t n = h->nbuckets ? h->nbuckets * 2 : QC_HANDLE_BUCKETS_MIN;
	struct qc_hentry **old = h->buckets, **b = calloc(n, sizeof(*b));
	size_t oldn = h->nbuckets;

	if (!b)
		return;
	h->buckets = b;
	h->nbuckets = n;
	for (size_t i = 0; i < oldn; i++)
		for (struct qc_hentry *e = old[i], *next; e; e = next) {
			next = e->next;
			e->next = b[bucket(h, e->fh)];
			b[bucket(h, e->fh)] = e;
		}
	free(old);
}

static struct qc_hentry **find(struct qc_handles *h, uint64_t fh)
{
	struct qc_hentry **p = h->nbuckets ? &h->buckets[bucket(h, fh)] : NULL;

	while (p && *p && (*p)->fh != fh)
		p = &(*p)->next;
	return p && *p ? p : NULL;
}

void qc_handles_init(struct qc_handles *h)
{
	pthread_mutex_init(&h->lock, NULL);
	if (getrandom(&h->next, sizeof(h->next), 0) != sizeof(h->next))
		h->next = (uint64_t)time(NULL) << 20;
	h->next |= 1;
}

void qc_handles_destroy(struct qc_handles *h, void (*free_obj)(void *obj, void *arg), void *arg)
{
	for (size_t i = 0; i < h->nbuckets; i++)
		for (struct qc_hentry *e = h->buckets[i], *next; e; e = next) {
			next = e->next;
			free_obj(e->obj, arg);
			free(e);
		}
	free(h->buckets);
	h->buckets = NULL;
	h->nbuckets = h->count = 0;
	pthread_mutex_destroy(&h->lock);
}

void *qc_handle_set(struct qc_handles *h, uint64_t fh, void *obj)
{
	struct qc_hentry *e = malloc(sizeof(*e)), **p;
	void *have = NULL;

	pthread_mutex_lock(&h->lock);
	if ((p = find(h, fh))) {
		have = (*p)->obj;       /* another request made it first */
	} else if (e) {
		if (h->count >= h->nbuckets)
			grow(h);
		if (h->nbuckets) {
			e->fh = fh;
			e->obj = obj;
			e->next = h->buckets[bucket(h, fh)];
			h->buckets[bucket(h, fh)] = e;
			h->count++;
			have = obj;
			e = NULL;
		}
	}
	pthread_mutex_unlock(&h->lock);
	free(e);
	return have;
}

uint64_t qc_handle_add(struct qc_handles *h, void *obj)
{
	uint64_t fh;

	pthread_mutex_lock(&h->lock);
	fh = h->next;
	h->next += 2;
	pthread_mutex_unlock(&h->lock);
	return qc_handle_set(h, fh, obj) == obj ? fh : 0;
}

void *qc_handle_get(struct qc_handles *h, uint64_t fh)
{
	struct qc_hentry **p;
	void *obj;

	pthread_mutex_lock(&h->lock);
	p = find(h, fh);
	obj = p ? (*p)->obj : NULL;
	pthread_mutex_unlock(&h->lock);
	return obj;
}

void *qc_handle_take(struct qc_handles *h, uint64_t fh)
{
	struct qc_hentry **p, *e = NULL;
	void *obj = NULL;

	pthread_mutex_lock(&h->lock);
	if ((p = find(h, fh))) {
		e = *p;
		*p = e->next;
		h->count--;
		obj = e->obj;
	}
	pthread_mutex_unlock(&h->lock);
	free(e);
	return obj;
}
