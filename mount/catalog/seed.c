/*
 * seed.c - a held catalog's state file read back (journal.c says what it
 * is): a new server's directories and versions at the indices and slots
 * the kernel knows them by, before its first listing.  A record that does
 * not check out ends the file: it is the torn last write of a killed
 * server, and nothing it stood for had reached the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_int.h"
#include "journal.h"

struct seed {
	const uint8_t **dirs;       /* the last record of each directory index, NULL: none or gone */
	uint32_t ndirs;
	const uint8_t **slots;      /* of each slot, QC_SLOTS_MAX + 1 */
};

/* The file's records into s; a torn or unknown record ends it, as the last write of a killed server. */
static void index_records(struct seed *s, const uint8_t *p, size_t len)
{
	size_t off = 0;

	while (len - off >= sizeof(struct qc_jhdr)) {
		struct qc_jhdr h;

		memcpy(&h, p + off, sizeof(h));
		if (h.len < sizeof(h) || h.len > len - off || XXH32(p + off + 8, h.len - 8, 0) != h.sum ||
		    h.kind < QC_J_DIR || h.kind > QC_J_SLOT_GONE)
			break;
		if (h.kind == QC_J_DIR || h.kind == QC_J_DIR_GONE) {
			if (h.id == 0 || h.id >= QC_J_DIR_IDS_MAX)
				break;
			if (h.id >= s->ndirs) {
				uint32_t n = h.id + 1 > 2 * s->ndirs ? h.id + 1 : 2 * s->ndirs;
				void *q = realloc(s->dirs, n * sizeof(*s->dirs));

				if (!q)
					break;
				memset((const uint8_t **)q + s->ndirs, 0, (n - s->ndirs) * sizeof(*s->dirs));
				s->dirs = q;
				s->ndirs = n;
			}
			s->dirs[h.id] = h.kind == QC_J_DIR ? p + off : NULL;
		} else {
			if (h.id == 0 || h.id > QC_SLOTS_MAX)
				break;
			s->slots[h.id] = h.kind == QC_J_SLOT ? p + off : NULL;
		}
		off += h.len;
	}
}

/* A record's data after its header, as [*at, end). */
static const uint8_t *record_data(const uint8_t *rec, const uint8_t **end)
{
	struct qc_jhdr h;

	memcpy(&h, rec, sizeof(h));
	*end = rec + h.len;
	return rec + sizeof(h);
}

/* The string at *at, which must end before 'end'; NULL if it does not. */
static const char *take_str(const uint8_t **at, const uint8_t *end)
{
	const uint8_t *nul = *at < end ? memchr(*at, 0, (size_t)(end - *at)) : NULL;
	const char *s = (const char *)*at;

	if (!nul)
		return NULL;
	*at = nul + 1;
	return s;
}

/* The catalog directory 'path' names, with *last its final name (in path, cut off); NULL: not there. */
static struct qc_node *parent_of(struct qm_catalog *c, char *path, char **last)
{
	char *comp, *next, *save = NULL;
	struct qc_node *dir = &c->root;

	for (comp = strtok_r(path, "/", &save); comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!next)
			break;
		dir = qc_find_kid(dir, comp);
		if (!dir || !dir->is_dir)
			return NULL;
	}
	*last = comp;
	return comp ? dir : NULL;
}

/* Directories and aliases at their indices, parents first (a parent's index is always the lower). */
static int seed_dirs(struct qm_catalog *c, const struct seed *s)
{
	for (uint32_t id = 1; id < s->ndirs; id++) {
		char path[QC_KEY_MAX + 1], *last;
		const uint8_t *end, *at = s->dirs[id] ? record_data(s->dirs[id], &end) : NULL;
		const char *p, *target;
		struct qc_node *dir, *n;
		bool alias;

		if (!at || at >= end)
			continue;
		alias = *at++ != 0;
		if (!(p = take_str(&at, end)) || !(target = take_str(&at, end)) ||
		    (size_t)snprintf(path, sizeof(path), "%s", p) >= sizeof(path) ||
		    !(dir = parent_of(c, path, &last)) || qc_find_kid(dir, last))
			continue;       /* not one this program wrote: the id stays unknown */
		n = alias ? qc_add_alias_at(c, dir, last, target, id) : qc_add_kid_at(c, dir, last, true, id);
		if (!n)
			return -ENOMEM;
	}
	return 0;
}

/* A seeded version under its name: the last version of each name (by serial) is its current one. */
static void seed_name(struct qm_catalog *c, struct qc_image *im)
{
	char key[QC_KEY_MAX + 1], *last;
	struct qc_node *dir, *n = NULL;

	snprintf(key, sizeof(key), "%s", im->key);
	dir = parent_of(c, key, &last);
	if (dir) {
		qc_strip_ext(last);
		n = qc_find_kid(dir, last);
		if (!n && (n = qc_add_kid(c, dir, last, false)))
			c->nimages++;
	}
	if (!n || n->is_dir || n->is_alias) {
		atomic_store(&im->superseded, true);
		return;
	}
	if (n->cur)
		atomic_store(&n->cur->superseded, true);
	n->cur = im;
	if (im->version > n->versions)
		n->versions = im->version;
}

static int cmp_serial(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* One slot's version from its record; 0, or -ENOMEM. */
static int seed_slot(struct qm_catalog *c, uint32_t slot, const uint8_t *rec)
{
	const uint8_t *end, *at = record_data(rec, &end);
	const char *key, *etag, *hash;
	struct qc_image *im;
	struct qc_jslot j;
	int err;

	if ((size_t)(end - at) < sizeof(j))
		return 0;
	memcpy(&j, at, sizeof(j));
	at += sizeof(j);
	if (!(key = take_str(&at, end)) || !(etag = take_str(&at, end)) || !(hash = take_str(&at, end)) ||
	    strlen(key) > QC_KEY_MAX)
		return 0;
	im = qc_version_at(c, slot, j.serial, key, etag, &err);
	if (!im || (*hash && !(im->root_hash = strdup(hash))))
		return -ENOMEM;
	im->version = j.version;
	im->size = j.size;
	im->dev = j.dev;
	im->ino = j.ino;
	im->mtime = j.mtime;
	im->mode = j.mode;
	im->uid = j.uid;
	im->gid = j.gid;
	im->inherited = true;
	if (j.serial > c->next_serial)
		c->next_serial = j.serial;
	seed_name(c, im);
	return 0;
}

/* Versions in the order they came, so that each name ends at its last; the other slots are free. */
static int seed_slots(struct qm_catalog *c, const struct seed *s)
{
	uint64_t (*order)[2] = NULL;
	uint32_t n = 0, top = 0;
	int err = 0;

	for (uint32_t id = 1; id <= QC_SLOTS_MAX; id++)
		n += s->slots[id] != NULL;
	if (n && !(order = malloc(n * sizeof(*order))))
		return -ENOMEM;
	n = 0;
	for (uint32_t id = 1; id <= QC_SLOTS_MAX; id++) {
		struct qc_jslot j;
		const uint8_t *end, *at = s->slots[id] ? record_data(s->slots[id], &end) : NULL;

		if (!at || (size_t)(end - at) < sizeof(j))
			continue;
		memcpy(&j, at, sizeof(j));
		order[n][0] = j.serial;
		order[n++][1] = id;
		top = id;
	}
	if (n)
		qsort(order, n, sizeof(*order), cmp_serial);
	atomic_store(&c->nslots, top + 1);
	for (uint32_t i = 0; !err && i < n; i++)
		err = seed_slot(c, (uint32_t)order[i][1], s->slots[order[i][1]]);
	for (uint32_t id = 1; !err && id <= top; id++)
		if (!atomic_load(&c->slots[id]) && !qc_slot_release(c, id))
			err = -ENOMEM;
	free(order);
	return err;
}

int qc_journal_seed(struct qm_catalog *c, int fd)
{
	struct seed s = { 0 };
	struct stat st;
	uint8_t *p = NULL;
	size_t got = 0;
	int err = 0;

	if (fstat(fd, &st) != 0)
		return -errno;
	if ((uint64_t)st.st_size > QC_J_FILE_MAX)
		return -EFBIG;
	s.slots = calloc((size_t)QC_SLOTS_MAX + 1, sizeof(*s.slots));
	p = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!s.slots || !p)
		err = -ENOMEM;
	while (!err && got < (size_t)st.st_size) {
		ssize_t n = pread(fd, p + got, (size_t)st.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			got += (size_t)n;
	}
	if (!err) {
		index_records(&s, p, got);
		pthread_rwlock_wrlock(&c->lock);
		err = seed_dirs(c, &s);
		if (!err)
			err = seed_slots(c, &s);
		pthread_rwlock_unlock(&c->lock);
	}
	free(s.dirs);
	free(s.slots);
	free(p);
	return err;
}
