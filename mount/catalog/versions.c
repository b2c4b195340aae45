/*
 * versions.c - image versions: each a slot, handed out when a listing
 * shows a new or changed image and taken back once nothing can name it
 * (the kernel has forgotten its node ids, no file or listing of it is
 * open), after QC_SLOT_QUARANTINE_S.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "mount_int.h"

void qc_image_free(struct qc_image *im)
{
	if (!im)
		return;
	qm_nodes_destroy(im->view.nodes);
	if (im->view.img)
		qs_image_close(im->view.img);
	pthread_mutex_destroy(&im->lock);
	pthread_cond_destroy(&im->opened);
	free(im->key);
	free(im->reason);
	free(im->display);
	free(im->etag);
	free(im->root_hash);
	free(im);
}

/* An ETag kept only when there is one: most catalogs (local ones) have none, and strdup("") costs 32 bytes. */
char *qc_etag_dup(const char *etag, bool *failed)
{
	char *e = etag && *etag ? strdup(etag) : NULL;

	if (etag && *etag && !e)
		*failed = true;
	return e;
}

bool qc_etag_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/*
 * The name messages give a version: the source (no secrets) and its key.
 * Made when the image is first opened, not for every entry listed: 10,000
 * never-opened entries must stay small.
 */
const char *qc_display_of(struct qc_image *im)
{
	struct qm_catalog *c = im->cat;
	char *base, *d;
	size_t len;

	if (im->display)
		return im->display;
	base = c->remote ? qs_source_display_name(c->base) : strdup(c->spec);
	if (!base)
		return im->key;
	len = strlen(base) + strlen(im->key) + 2;
	d = malloc(len);
	if (d)
		snprintf(d, len, "%s%s%s", base, base[0] && base[strlen(base) - 1] == '/' ? "" : "/", im->key);
	free(base);
	im->display = d;
	return d ? d : im->key;
}

/* A slot for a new version: one taken back over QC_SLOT_QUARANTINE_S ago, or a new one; 0: none left. */
static uint32_t take_slot(struct qm_catalog *c)
{
	uint32_t slot = 0;

	pthread_mutex_lock(&c->slot_lock);
	if (c->freed_n && qc_now_s() - c->freed[c->freed_head].at >= QC_SLOT_QUARANTINE_S) {
		slot = c->freed[c->freed_head].slot;
		c->freed_head = (c->freed_head + 1) % c->freed_cap;
		c->freed_n--;
	} else if (atomic_load(&c->nslots) <= QC_SLOTS_MAX) {
		slot = atomic_fetch_add(&c->nslots, 1);
	}
	pthread_mutex_unlock(&c->slot_lock);
	return slot;
}

/* NULL with *err: -ENOSPC when every slot holds a version the kernel or a reader still uses. */
struct qc_image *qc_new_version(struct qm_catalog *c, const char *key, const char *etag, int *err)
{
	uint32_t slot = take_slot(c);
	struct qc_image *im;

	if (!slot) {
		*err = -ENOSPC;
		return NULL;
	}
	/* c->next_serial: under c->lock, held for writing by every merge */
	im = qc_version_at(c, slot, c->next_serial + 1, key, etag, err);
	if (im)
		c->next_serial++;
	else
		qc_slot_release(c, slot);
	return im;
}

struct qc_image *qc_version_at(struct qm_catalog *c, uint32_t slot, uint64_t serial, const char *key,
				const char *etag, int *err)
{
	struct qc_image *im = calloc(1, sizeof(*im));
	bool failed = false;

	*err = -ENOMEM;
	if (!im)
		return NULL;
	im->key = strdup(key);
	im->etag = qc_etag_dup(etag, &failed);
	if (!im->key || failed) {
		free(im->key);
		free(im->etag);
		free(im);
		return NULL;
	}
	im->slot = slot;
	im->serial = serial;
	im->cat = c;
	pthread_mutex_init(&im->lock, NULL);
	pthread_cond_init(&im->opened, NULL);
	atomic_init(&im->opens, 0);
	atomic_init(&im->lookups, 0);
	im->last_used = qc_now_s();
	atomic_store_explicit(&c->slots[im->slot], im, memory_order_release);
	return im;
}

/*
 * Take a superseded version's slot back once nothing can name it: closed,
 * no request, file or listing on it, and every node id forgotten by the
 * kernel.  The watcher's alone, so no two run at once.
 */
/* Room for one more slot in the FIFO of those taken back (c->slot_lock held). */
static bool freed_room(struct qm_catalog *c)
{
	size_t cap = c->freed_cap ? c->freed_cap * 2 : 256;
	struct freed *p;

	if (c->freed_n < c->freed_cap)
		return true;
	if (!(p = malloc(cap * sizeof(*p))))
		return false;
	for (size_t i = 0; i < c->freed_n; i++)
		p[i] = c->freed[(c->freed_head + i) % c->freed_cap];
	free(c->freed);
	c->freed = p;
	c->freed_head = 0;
	c->freed_cap = cap;
	return true;
}

/* Slot 'slot', never shown to the kernel, back on the FIFO at once: nothing pushes pages to it. */
bool qc_slot_release(struct qm_catalog *c, uint32_t slot)
{
	bool ok;

	pthread_mutex_lock(&c->slot_lock);
	ok = freed_room(c);
	if (ok) {
		c->freed[(c->freed_head + c->freed_n) % c->freed_cap] =
			(struct freed){ slot, qc_now_s() - QC_SLOT_QUARANTINE_S };
		c->freed_n++;
	}
	pthread_mutex_unlock(&c->slot_lock);
	return ok;
}

bool qc_reclaim(struct qm_catalog *c, struct qc_image *im)
{
	bool free_it;

	pthread_mutex_lock(&c->slot_lock);
	pthread_mutex_lock(&im->lock);
	/* an inherited version's node ids were counted by a server before this one: never known to be forgotten */
	free_it = atomic_load(&im->superseded) && !im->inherited && !im->view.img && !im->opening &&
		  im->users == 0 && atomic_load(&im->opens) == 0 && atomic_load(&im->lookups) == 0;
	if (free_it && !freed_room(c))
		free_it = false;        /* kept for the next sweep */
	if (free_it) {
		c->freed[(c->freed_head + c->freed_n) % c->freed_cap] = (struct freed){ im->slot, qc_now_s() };
		c->freed_n++;
		atomic_store_explicit(&c->slots[im->slot], NULL, memory_order_release);
		qc_journal_gone(c, true, im->slot);
	}
	pthread_mutex_unlock(&im->lock);
	pthread_mutex_unlock(&c->slot_lock);
	if (free_it)
		qc_image_free(im);
	return free_it;
}

struct qc_image *qc_slot(struct qm_catalog *c, uint32_t slot)
{
	if (slot == 0 || slot >= atomic_load(&c->nslots))
		return NULL;
	return atomic_load_explicit(&c->slots[slot], memory_order_acquire);
}

void qc_forget(struct qm_catalog *c, uint64_t nodeid, uint64_t n)
{
	struct qc_image *im = qc_slot(c, qc_slot_of(nodeid));

	/* the last access: once at zero, the watcher may take the slot back */
	if (im)
		atomic_fetch_sub(&im->lookups, n);
}
