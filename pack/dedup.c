/*
 * dedup.c - the index of written files by size and content hash.
 *
 * A table of size classes (open addressing on the size).  Each class
 * counts the files of that size in the tree, and lists those already
 * written; a new file is compared byte for byte only against listed files
 * whose hash matches, so a hash collision can never merge two files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"

#define DEDUP_TABLE_INITIAL 4096

struct size_class {
	uint64_t size;
	uint32_t count;             /* files of this size in the tree */
	uint32_t nfiles, cap;
	struct pack_inode **files;  /* written so far */
	bool used;
};

struct dedup_index {
	struct size_class *table;
	size_t size, used;
};

static size_t slot_of(uint64_t size, size_t table_size)
{
	return (size_t)((size * 0x9e3779b97f4a7c15ull) >> 17) & (table_size - 1);
}

int dedup_init(struct dedup_index **out)
{
	struct dedup_index *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->size = DEDUP_TABLE_INITIAL;
	d->table = calloc(d->size, sizeof(*d->table));
	if (!d->table) {
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void dedup_free(struct dedup_index *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->size; i++)
		free(d->table[i].files);
	free(d->table);
	free(d);
}

static struct size_class *find(struct dedup_index *d, uint64_t size)
{
	for (size_t i = slot_of(size, d->size);; i = (i + 1) & (d->size - 1)) {
		struct size_class *c = &d->table[i];

		if (!c->used || c->size == size)
			return c;
	}
}

static int grow(struct dedup_index *d)
{
	struct dedup_index bigger = { .size = d->size * 2 };

	bigger.table = calloc(bigger.size, sizeof(*bigger.table));
	if (!bigger.table)
		return -ENOMEM;
	for (size_t i = 0; i < d->size; i++)
		if (d->table[i].used)
			*find(&bigger, d->table[i].size) = d->table[i];
	free(d->table);
	d->table = bigger.table;
	d->size = bigger.size;
	return 0;
}

int dedup_count_size(struct dedup_index *d, uint64_t size)
{
	struct size_class *c;

	if (2 * (d->used + 1) > d->size && grow(d) < 0)
		return -ENOMEM;
	c = find(d, size);
	if (!c->used) {
		c->used = true;
		c->size = size;
		d->used++;
	}
	c->count++;
	return 0;
}

bool dedup_size_shared(struct dedup_index *d, uint64_t size)
{
	struct size_class *c = find(d, size);

	return c->used && c->count > 1;
}

struct pack_inode *dedup_find(struct dedup_index *d, struct pack_inode *file, dedup_same_fn same, void *arg,
			      int *err)
{
	struct size_class *c = find(d, file->u.file.size);

	*err = 0;
	for (uint32_t i = 0; c->used && i < c->nfiles; i++) {
		struct pack_inode *other = c->files[i];
		int r;

		if (other->u.file.hash != file->u.file.hash)
			continue;
		r = same(file, other, arg);
		if (r < 0) {
			*err = r;
			return NULL;
		}
		if (r)
			return other;
	}
	return NULL;
}

int dedup_add(struct dedup_index *d, struct pack_inode *file)
{
	struct size_class *c = find(d, file->u.file.size);

	if (!c->used)
		return 0;
	if (c->nfiles == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 4;
		void *p = realloc(c->files, cap * sizeof(*c->files));

		if (!p)
			return -ENOMEM;
		c->files = p;
		c->cap = cap;
	}
	c->files[c->nfiles++] = file;
	return 0;
}
