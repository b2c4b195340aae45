/*
 * model.c - the model without a session, for tests/unit/test_catalog.c:
 * listings merged by hand, names looked up, slots swept as time passes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "mount_int.h"

static const struct qm_options model_opt = { .msgname = "quash mount", .image = "model" };
static struct qm_fs model_fs = { .opt = &model_opt, .name = (char *)"model", .log_fd = -1 };

struct qm_catalog *qc_model_new(void)
{
	return qc_catalog_new(&model_fs, &model_opt);
}

void qc_model_free(struct qm_catalog *c)
{
	qc_destroy(c);
}

int qc_model_merge(struct qm_catalog *c, const struct qc_listed *v, size_t n)
{
	struct items items = { .v = calloc(n ? n : 1, sizeof(struct item)), .n = n };
	int err;

	if (!items.v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		items.v[i].key = (char *)v[i].key;
		items.v[i].size = v[i].size;
		items.v[i].mtime = v[i].mtime;
		items.v[i].etag = v[i].etag && *v[i].etag ? (char *)v[i].etag : NULL;
		items.v[i].mode = 0444;
	}
	qsort(items.v, items.n, sizeof(*items.v), qc_cmp_item);
	err = qc_merge(c, &items);
	free(items.v);
	return err;
}

int qc_model_find(struct qm_catalog *c, const char *path, const char **key, uint32_t *version, uint32_t *slot)
{
	char buf[QC_KEY_MAX + 1], *comp, *save = NULL;
	struct qc_node *n = &c->root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (comp = strtok_r(buf, "/", &save); comp && n; comp = strtok_r(NULL, "/", &save))
		n = n->is_dir ? qc_find_kid(n, comp) : NULL;
	if (!n)
		return 0;
	if (n->is_dir)
		return 1;
	if (n->is_alias)
		return 0;
	*key = n->cur->key;
	*version = n->cur->version;
	*slot = n->cur->slot;
	return 2;
}

size_t qc_model_shadowed(struct qm_catalog *c)
{
	return c->nshadowed;
}

uint64_t qc_model_dir(struct qm_catalog *c, const char *path)
{
	char buf[QC_KEY_MAX + 1], *comp, *save = NULL;
	struct qc_node *n = &c->root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (comp = strtok_r(buf, "/", &save); comp && n; comp = strtok_r(NULL, "/", &save))
		n = n->is_dir ? qc_find_kid(n, comp) : NULL;
	return n && n->is_dir ? qc_dir_nodeid(n) : 0;
}

void qc_model_journal(struct qm_catalog *c, int fd)
{
	c->jfd = fd;
}

void qc_model_lookups(struct qm_catalog *c, uint32_t slot, int64_t n)
{
	struct qc_image *im = qc_slot(c, slot);

	if (im)
		atomic_fetch_add(&im->lookups, (uint64_t)n);
}

size_t qc_model_sweep(struct qm_catalog *c, int64_t age_s)
{
	unsigned n = atomic_load(&c->nslots);
	size_t taken = 0;

	for (unsigned s = 1; s < n; s++) {
		struct qc_image *im = atomic_load(&c->slots[s]);

		if (im && atomic_load(&im->superseded) && !atomic_load(&im->open) && qc_reclaim(c, im))
			taken++;
	}
	for (size_t i = 0; i < c->freed_n; i++)
		c->freed[(c->freed_head + i) % c->freed_cap].at -= age_s;
	return taken;
}
