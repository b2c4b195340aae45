/*
 * watcher.c - the catalog's one thread besides the requests: it lists the
 * source when asked (inotify, refresh=, `quash catalog refresh`, a lookup's
 * miss; QC_LIST_MIN_MS apart at most), tells the kernel of changed names,
 * and closes idle images once a tick.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "mount_int.h"

#define QC_TICK_MS 1000             /* the watcher's clock: idle checks, refreshes */
#define QC_SETTLE_MS 100            /* inotify events are gathered this long before a listing */

static void send_notices(struct qm_catalog *c)
{
	struct notice *v;
	size_t n;
	bool all;

	pthread_mutex_lock(&c->nlock);
	v = c->notices;
	n = c->nnotices;
	all = c->flush_all;
	c->notices = NULL;
	c->nnotices = c->notices_cap = 0;
	c->flush_all = false;
	pthread_mutex_unlock(&c->nlock);
	for (size_t i = 0; i < n; i++) {
		/* -ENOENT: the kernel had nothing cached under that name */
		if (c->fs->se && c->fs->ready)
			fuse_lowlevel_notify_inval_entry(c->fs->se, v[i].parent, v[i].name, strlen(v[i].name));
		free(v[i].name);
	}
	free(v);
	if (all && c->fs->se && c->fs->ready) {
		/* too many to name: every catalog directory forgets its entries */
		pthread_rwlock_rdlock(&c->lock);
		for (uint32_t d = 0; d < c->ndirs; d++)
			if (c->dirs[d])
				fuse_lowlevel_notify_inval_inode(c->fs->se, (uint64_t)d + 1, -1, 0);
		pthread_rwlock_unlock(&c->lock);
	}
}

static bool drain(int fd)
{
	char buf[4096];
	bool any = false;

	while (read(fd, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

/*
 * Whether to list now.  Inotify, `quash catalog refresh`, lookups of names
 * not found and the refresh= period all ask; none lists sooner than
 * QC_LIST_MIN_MS after the last listing ended, so a flood of any of them
 * costs one listing a second.  *wait_ms: how long until a pending ask may
 * be served.
 */
static bool list_due(struct qm_catalog *c, bool *pending, int *wait_ms)
{
	int64_t since = qc_now_ms() - atomic_load(&c->listed_at_ms);

	if (!*pending && atomic_exchange(&c->refresh_wanted, false))
		*pending = true;
	if (!*pending && qc_now_s() - c->listed_at >= (int64_t)c->refresh)
		*pending = true;
	if (*pending && since < QC_LIST_MIN_MS) {
		*wait_ms = (int)(QC_LIST_MIN_MS - since);
		return false;
	}
	return *pending;
}

static void *watcher(void *arg)
{
	struct qm_catalog *c = arg;
	int64_t last_tick = qc_now_s();
	bool pending = false;
	int wait_ms = QC_TICK_MS;

	while (!atomic_load(&c->stop)) {
		struct pollfd p[2] = { { c->wake[0], POLLIN, 0 }, { c->inotify_fd, POLLIN, 0 } };

		if (poll(p, c->inotify_fd >= 0 ? 2 : 1, wait_ms) > 0) {
			drain(c->wake[0]);
			if (c->inotify_fd >= 0 && (p[1].revents & POLLIN)) {
				struct timespec settle = { 0, QC_SETTLE_MS * 1000000L };

				nanosleep(&settle, NULL);
				pending |= drain(c->inotify_fd);
			}
		}
		if (atomic_load(&c->stop))
			break;
		wait_ms = QC_TICK_MS;
		if (list_due(c, &pending, &wait_ms)) {
			uint64_t gen = atomic_fetch_add(&c->gen_started, 1) + 1;

			pending = false;
			int err = qc_refresh(c);

			if (err)
				qm_log(c->fs, "catalog: %s: %s; keeping the last listing", c->fs->name, c->list_error);
			send_notices(c);
			pthread_mutex_lock(&c->nlock);
			if (err)
				snprintf(c->result, sizeof(c->result), "failed %s\n", c->list_error);
			else
				snprintf(c->result, sizeof(c->result), "done %zu images\n", c->nimages);
			pthread_mutex_unlock(&c->nlock);
			atomic_store(&c->gen_done, gen);
		} else {
			send_notices(c);
		}
		if (qc_now_s() != last_tick) {
			last_tick = qc_now_s();
			qc_sweep_idle(c);
			qc_journal_tidy(c);
		}
	}
	return NULL;
}

uint64_t qc_refresh_request(struct qm_catalog *c)
{
	/* a listing under way may have read the directory before the change: the next one */
	uint64_t want = atomic_load(&c->gen_started) + 1;

	atomic_store(&c->refresh_wanted, true);
	qc_wake(c);
	return want;
}

int qc_refresh_state(struct qm_catalog *c, uint64_t gen, char *buf, size_t size)
{
	if (!c->watching)
		return snprintf(buf, size, "failed the catalog's watcher is not running\n");
	if (atomic_load(&c->gen_done) < gen)
		return snprintf(buf, size, "pending\n");
	pthread_mutex_lock(&c->nlock);
	snprintf(buf, size, "%s", c->result);
	pthread_mutex_unlock(&c->nlock);
	return (int)strlen(buf);
}

int qc_start(struct qm_catalog *c)
{
	int err = -pthread_create(&c->watcher, NULL, watcher, c);

	c->watching = err == 0;
	return err;
}

void qc_stop(struct qm_catalog *c)
{
	if (!c || !c->watching)
		return;
	atomic_store(&c->stop, true);
	qc_wake(c);
	pthread_join(c->watcher, NULL);
	c->watching = false;
}
