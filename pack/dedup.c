/*
 * dedup.c - the index of written files by size and content hash.
 *
 * Two tables, both open addressing.  The size classes count the files of
 * each size in the tree, so that only sizes seen twice are hashed at all.
 * The written files are indexed by (size, hash) together: a lookup probes
 * only the files with that key, O(1) whatever the number of files of one
 * size.  (Listing written files per size class and scanning the list made
 * a million 5-10 byte files quadratic: not finished after 6.7 minutes.)  A
 * file with the same key is still compared byte for byte, so a hash
 * collision can never merge two files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"

#define DEDUP_TABLE_INITIAL 4096

struct size_class {
	uint64_t size;
	uint32_t count;             /* files of this size in the tree */
	bool used;
};

struct dedup_index {
	struct size_class *table;
	size_t size, used;
	size_t candidates;          /* files whose size another file has: what dedup_add() may take */
	struct pack_inode **files;  /* written files by (size, hash); NULL: empty slot */
	size_t files_size, files_used;
};

/*
 * Slots per written file at most, as a fraction: probes stay short (5 for
 * a miss, 2 for a hit, on average), 12 bytes per file.  The table is made
 * this size for every candidate before the first file is written
 * (dedup_reserve()), any size, not a power of two: a million candidates
 * took 16 MiB at 2 slots each, and 24 MiB at the moment it doubled.
 */
#define DEDUP_FILES_LOAD_NUM 3
#define DEDUP_FILES_LOAD_DEN 2

static size_t slot_of(uint64_t size, size_t table_size)
{
	return (size_t)((size * 0x9e3779b97f4a7c15ull) >> 17) & (table_size - 1);
}

int dedup_init(struct dedup_index **out)
{
	struct dedup_index *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->size = d->files_size = DEDUP_TABLE_INITIAL;
	d->table = calloc(d->size, sizeof(*d->table));
	d->files = calloc(d->files_size, sizeof(*d->files));
	if (!d->table || !d->files) {
		free(d->table);
		free(d->files);
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
	free(d->table);
	free(d->files);
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
	d->candidates += c->count == 2 ? 2 : c->count > 2;
	return 0;
}

bool dedup_size_shared(struct dedup_index *d, uint64_t size)
{
	struct size_class *c = find(d, size);

	return c->used && c->count > 1;
}

bool dedup_size_known(struct dedup_index *d, uint64_t size)
{
	return find(d, size)->used;
}

/* The first slot for a key, in a table of any size (Lemire's multiply-shift range reduction). */
static size_t key_slot(uint64_t size, uint64_t hash, size_t table_size)
{
	uint64_t mixed = (size ^ (hash * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(((unsigned __int128)mixed * table_size) >> 64);
}

static size_t next_slot(size_t i, size_t table_size)
{
	return i + 1 == table_size ? 0 : i + 1;
}

static bool same_key(const struct pack_inode *a, const struct pack_inode *b)
{
	return a->u.file.size == b->u.file.size && a->u.file.hash == b->u.file.hash;
}

struct pack_inode *dedup_find(struct dedup_index *d, struct pack_inode *file, dedup_same_fn same, void *arg,
			      int *err)
{
	*err = 0;
	for (size_t i = key_slot(file->u.file.size, file->u.file.hash, d->files_size); d->files[i];
	     i = next_slot(i, d->files_size)) {
		struct pack_inode *other = d->files[i];
		int r;

		if (!same_key(file, other))
			continue;
		if (file->u.file.size <= DEDUP_EXACT_MAX)
			return other;
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

static void files_put(struct pack_inode **table, size_t table_size, struct pack_inode *file)
{
	size_t i = key_slot(file->u.file.size, file->u.file.hash, table_size);

	while (table[i])
		i = next_slot(i, table_size);
	table[i] = file;
}

static int files_resize(struct dedup_index *d, size_t size)
{
	struct pack_inode **bigger = calloc(size, sizeof(*bigger));

	if (!bigger)
		return -ENOMEM;
	for (size_t i = 0; i < d->files_size; i++)
		if (d->files[i])
			files_put(bigger, size, d->files[i]);
	free(d->files);
	d->files = bigger;
	d->files_size = size;
	return 0;
}

int dedup_add(struct dedup_index *d, struct pack_inode *file)
{
	if (!find(d, file->u.file.size)->used)
		return 0;
	if (DEDUP_FILES_LOAD_NUM * (d->files_used + 1) > DEDUP_FILES_LOAD_DEN * d->files_size &&
	    files_resize(d, 2 * d->files_size) < 0)
		return -ENOMEM;
	files_put(d->files, d->files_size, file);
	d->files_used++;
	return 0;
}

int dedup_reserve(struct dedup_index *d)
{
	size_t size = (d->files_used + d->candidates) * DEDUP_FILES_LOAD_NUM / DEDUP_FILES_LOAD_DEN + 1;

	return size > d->files_size ? files_resize(d, size) : 0;
}
