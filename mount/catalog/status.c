/*
 * status.c - the status text of `quash catalog ls` (the .quash-catalog
 * control file): the catalog's counters, then one line per image, every
 * name and ETag escaped so that none can forge a line.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "mount_int.h"

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void tprintf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if (t->buf && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap * 2 : 4096;

		while (cap < t->len + (size_t)n + 1)
			cap *= 2;
		char *p = realloc(t->buf, cap);

		if (!p) {
			t->failed = true;
			return;
		}
		t->buf = p;
		t->cap = cap;
	}
}

/* 's' with bytes below 0x20, 0x7f and '\\' as \xHH: no name or ETag can forge a line or reach a terminal raw. */
static void tescape(struct text *t, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= 0x20 && ch != 0x7f && ch != '\\')
			continue;
		tprintf(t, "%.*s\\x%02x", (int)(s - run), run, ch);
		run = s + 1;
	}
	tprintf(t, "%s", run);
}

static void status_node(struct text *t, const struct qc_node *n, char *path, size_t plen, int64_t now)
{
	for (uint32_t i = 0; i < n->nkids; i++) {
		const struct qc_node *k = n->kids[i];
		size_t len = strlen(k->name);

		if (plen + len + 2 > QC_KEY_MAX)
			continue;
		memcpy(path + plen, k->name, len + 1);
		if (k->is_dir) {
			path[plen + len] = '/';
			path[plen + len + 1] = '\0';
			status_node(t, k, path, plen + len + 1, now);
		} else if (k->is_alias) {
			/* shown before the column names, by status_aliases() */
		} else {
			struct qc_image *im = k->cur;
			const char *state;

			pthread_mutex_lock(&im->lock);
			state = im->view.img ? "open" : im->error ? "failed" : "closed";
			tescape(t, path);
			tprintf(t, "\t%s\t%u\t%" PRIu64 "\t%d\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t", state,
				im->version, im->size, atomic_load(&im->opens), atomic_load(&im->reads),
				atomic_load(&im->bytes_read), im->open_total ? now - im->last_used : -1);
			tescape(t, im->etag ? im->etag : "-");
			tprintf(t, "\t");
			tescape(t, im->error && im->reason ? im->reason : "-");
			tprintf(t, "\n");
			pthread_mutex_unlock(&im->lock);
		}
		path[plen] = '\0';
	}
}

/* "# alias NAME -> TARGET" for each alias, as readlink gives TARGET. */
static void status_aliases(struct text *t, const struct qc_node *n, char *path, size_t plen)
{
	for (uint32_t i = 0; i < n->nkids; i++) {
		const struct qc_node *k = n->kids[i];
		size_t len = strlen(k->name);

		if (plen + len + 2 > QC_KEY_MAX || (!k->is_dir && !k->is_alias))
			continue;
		memcpy(path + plen, k->name, len + 1);
		if (k->is_dir) {
			path[plen + len] = '/';
			path[plen + len + 1] = '\0';
			status_aliases(t, k, path, plen + len + 1);
		} else {
			tprintf(t, "# alias ");
			tescape(t, path);
			tprintf(t, " -> ");
			tescape(t, k->target);
			tprintf(t, "\n");
		}
		path[plen] = '\0';
	}
}

uint64_t qc_status_epoch(struct qm_catalog *c)
{
	struct qs_cache_stats cs;

	qs_cache_stats(c->cache, &cs);
	return XXH3_64bits_withSeed(&cs, sizeof(cs), atomic_load(&c->epoch) ^
				    atomic_load(&c->bytes_read) << 20 ^
				    __atomic_load_n(&c->remote_memory.used, __ATOMIC_RELAXED) << 40);
}

char *qc_status(struct qm_catalog *c, size_t *len)
{
	struct text t = { 0 };
	struct qs_cache_stats cs;
	char path[QC_KEY_MAX + 1] = "", err[sizeof(c->list_error)];
	unsigned open, old;
	int64_t now = qc_now_s();

	pthread_mutex_lock(&c->open_lock);
	open = c->nopen;
	old = c->nopen_old;
	pthread_mutex_unlock(&c->open_lock);
	qs_cache_stats(c->cache, &cs);
	pthread_mutex_lock(&c->nlock);
	snprintf(err, sizeof(err), "%s", c->list_error);
	pthread_mutex_unlock(&c->nlock);
	pthread_rwlock_rdlock(&c->lock);
	tprintf(&t, "# catalog %s: %zu images, %u open (%u old versions), listed %" PRId64 " s ago%s",
		c->fs->name, c->nimages, open, old, now - c->listed_at, err[0] ? "; last listing failed: " : "");
	tescape(&t, err);
	tprintf(&t, "\n");
	tprintf(&t, "# block cache %" PRIu64 " of %" PRIu64 " bytes, %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
		" let go once in the page cache; remote chunks %" PRIu64 " of %" PRIu64 " bytes; %" PRIu64
		" bytes read from sources\n", cs.bytes, cs.limit, cs.hits, cs.misses, cs.drops,
		__atomic_load_n(&c->remote_memory.used, __ATOMIC_RELAXED),
		c->remote_memory.limit, atomic_load(&c->bytes_read));
	for (size_t i = 0; i < c->nshadowed && i < QC_SHADOWED_SHOWN; i++) {
		tprintf(&t, "# no name of its own: ");
		tescape(&t, c->shadowed[i]);
		tprintf(&t, "\n");
	}
	if (c->nshadowed > QC_SHADOWED_SHOWN)
		tprintf(&t, "# no name of their own: %zu more\n", c->nshadowed - QC_SHADOWED_SHOWN);
	for (size_t i = 0; i < c->nunserved && i < QC_SHADOWED_SHOWN; i++) {
		tprintf(&t, "# not served: ");
		tescape(&t, c->unserved[i]);
		tprintf(&t, "\n");
	}
	if (c->nunserved > QC_SHADOWED_SHOWN)
		tprintf(&t, "# not served: %zu more\n", c->nunserved - QC_SHADOWED_SHOWN);
	if (c->naliases)
		status_aliases(&t, &c->root, path, 0);
	tprintf(&t, "# name\tstate\tversion\tsize\topen_files\treads\tbytes_read\tidle_s\tetag\terror\n");
	status_node(&t, &c->root, path, 0, now);
	pthread_rwlock_unlock(&c->lock);
	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	*len = t.len;
	return t.buf ? t.buf : strdup("");
}
