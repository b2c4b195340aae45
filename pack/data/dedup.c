/*
 * dedup.c - the index of written files by size and content hash.
 *
 * Two tables, both open addressing.  The size classes count the files of
 * each size in the tree, so that only sizes seen twice are hashed at all.
 * The written files are indexed by (size, hash) together: a lookup probes
 * only the files with that key, O(1) whatever the number of files of one
 * size, where a list per size class would make many small files of
 * one size quadratic.  A file with the same key is still compared byte for byte, so a hash
 * collision can never merge two files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"
#include "tree/spill.h"

#define DEDUP_TABLE_INITIAL 4096

struct size_class {
	uint64_t size;
	uint32_t count;             /* files of this size in the tree */
	bool used;
};

struct dedup_index {
	struct spill *spill;        /* where 'files' lives under --memory (NULL: malloc()) */
	struct size_class *table;
	size_t size, used;
	size_t candidates;          /* files whose size another file has: what dedup_add() may take */
	/*
	 * Written files by (size, hash): the inode's address, its key's tag in
	 * the top 16 bits (a probe reads an inode only when the tag matches);
	 * 0 an empty slot.  Under --memory the array is the spill file's and
	 * is read and written with pread()/pwrite() only, never mapped in.
	 */
	uint64_t *files;
	size_t files_size, files_used;
};

/*
 * Slots per written file at most, as a fraction: probes stay short (5 for
 * a miss, 2 for a hit, on average), 12 bytes per file.  The table is made
 * this size for every candidate before the first file is written
 * (dedup_reserve()), any size, not a power of two, so that it never
 * doubles while the tree is held.
 */
#define DEDUP_FILES_LOAD_NUM 3
#define DEDUP_FILES_LOAD_DEN 2

static size_t slot_of(uint64_t size, size_t table_size)
{
	return (size_t)((size * 0x9e3779b97f4a7c15ull) >> 17) & (table_size - 1);
}

int dedup_init(struct dedup_index **out, struct spill *spill)
{
	struct dedup_index *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->spill = spill;
	d->size = d->files_size = DEDUP_TABLE_INITIAL;
	d->table = calloc(d->size, sizeof(*d->table));
	d->files = spill_alloc(spill, d->files_size * sizeof(*d->files));
	if (!d->table || !d->files) {
		free(d->table);
		spill_free(spill, d->files);
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
	spill_free(d->spill, d->files);
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

/* A key's tag: other bits of the same mix, never 0 (an empty slot's). */
static uint32_t key_tag(uint64_t size, uint64_t hash)
{
	uint64_t mixed = (size ^ (hash * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)mixed | 1u;
}

static size_t next_slot(size_t i, size_t table_size)
{
	return i + 1 == table_size ? 0 : i + 1;
}

static bool same_key(const struct pack_inode *a, const struct pack_inode *b)
{
	return a->u.file.size == b->u.file.size && a->u.file.hash == b->u.file.hash;
}

/*
 * An earlier file's inode, as far as a file's goes (a file's is smaller
 * than the struct).  Under --memory it may be paged out: read from the
 * file, not faulted in.
 */
static void file_read(const struct dedup_index *d, const struct pack_inode *file, struct pack_inode *copy)
{
	memset(copy, 0, sizeof(*copy));
	spill_peek(d->spill, file, copy, offsetof(struct pack_inode, u) + sizeof(file->u.file));
}

#define SLOT_TAG_SHIFT 48
#define SLOT_BATCH     8           /* slots read with one pread() under --memory */

static uint64_t slot_value(const struct pack_inode *file, uint32_t tag)
{
	return (uint64_t)(uintptr_t)file | (uint64_t)(tag & 0xffff ? tag & 0xffff : 1) << SLOT_TAG_SHIFT;
}

static struct pack_inode *slot_inode(uint64_t v)
{
	return (struct pack_inode *)(uintptr_t)(v & ((1ull << SLOT_TAG_SHIFT) - 1));
}

/* Slots [i, i+n) (n clipped to the table's end) into buf; the count read. */
static size_t slots_read(struct dedup_index *d, uint64_t *table, size_t i, uint64_t *buf, size_t n)
{
	if (n > d->files_size - i)
		n = d->files_size - i;
	spill_peek(d->spill, table + i, buf, n * sizeof(*buf));
	return n;
}

static void slot_write(struct dedup_index *d, uint64_t *table, size_t i, uint64_t v)
{
	spill_poke(d->spill, table + i, &v, sizeof(v));
}

bool dedup_find(struct dedup_index *d, struct pack_inode *file, dedup_same_fn same, void *arg,
		struct dedup_hit *hit, int *err)
{
	uint32_t tag = key_tag(file->u.file.size, file->u.file.hash);
	uint64_t want = slot_value(NULL, tag), buf[SLOT_BATCH];
	size_t i = key_slot(file->u.file.size, file->u.file.hash, d->files_size), n = 0, k = 0;

	*err = 0;
	for (;; i = next_slot(i, d->files_size), k++) {
		struct pack_inode *other, copy;
		int r;

		if (k == n) {
			n = slots_read(d, d->files, i, buf, SLOT_BATCH);
			k = 0;
		}
		if (!buf[k])
			return false;
		if ((buf[k] >> SLOT_TAG_SHIFT) != (want >> SLOT_TAG_SHIFT))
			continue;
		other = slot_inode(buf[k]);
		file_read(d, other, &copy);
		if (!same_key(file, &copy))
			continue;
		if (file->u.file.size > DEDUP_EXACT_MAX) {
			r = same(file, other, arg);
			if (r < 0) {
				*err = r;
				return false;
			}
			if (!r)
				continue;
		}
		hit->blocks = tree_blocks(&copy);
		hit->fragment = copy.u.file.fragment;
		hit->frag_offset = copy.u.file.frag_offset;
		return true;
	}
}

static void files_put(struct dedup_index *d, uint64_t *table, uint64_t size, uint64_t hash, uint64_t v)
{
	size_t i = key_slot(size, hash, d->files_size), n = 0, k = 0;
	uint64_t buf[SLOT_BATCH];

	for (;; i = next_slot(i, d->files_size), k++) {
		if (k == n) {
			n = slots_read(d, table, i, buf, SLOT_BATCH);
			k = 0;
		}
		if (!buf[k])
			break;
	}
	slot_write(d, table, i, v);
}

static int files_resize(struct dedup_index *d, size_t size)
{
	uint64_t *old = d->files, *bigger = spill_alloc(d->spill, size * sizeof(*bigger));
	size_t old_size = d->files_size;

	if (!bigger)
		return -ENOMEM;
	d->files = bigger;
	d->files_size = size;
	for (size_t i = 0; i < old_size; i++) {
		uint64_t v;
		struct pack_inode copy;

		spill_peek(d->spill, old + i, &v, sizeof(v));
		if (!v)
			continue;
		file_read(d, slot_inode(v), &copy);
		files_put(d, bigger, copy.u.file.size, copy.u.file.hash, v);
	}
	spill_free(d->spill, old);
	return 0;
}

int dedup_add(struct dedup_index *d, struct pack_inode *file)
{
	if (!find(d, file->u.file.size)->used)
		return 0;
	if (DEDUP_FILES_LOAD_NUM * (d->files_used + 1) > DEDUP_FILES_LOAD_DEN * d->files_size &&
	    files_resize(d, 2 * d->files_size) < 0)
		return -ENOMEM;
	if ((uintptr_t)file >> SLOT_TAG_SHIFT)
		return 0;       /* an address the tag would overlap (never on x86-64 Linux): not indexed */
	files_put(d, d->files, file->u.file.size, file->u.file.hash,
		  slot_value(file, key_tag(file->u.file.size, file->u.file.hash)));
	d->files_used++;
	return 0;
}

int dedup_reserve(struct dedup_index *d)
{
	size_t size = (d->files_used + d->candidates) * DEDUP_FILES_LOAD_NUM / DEDUP_FILES_LOAD_DEN + 1;

	return size > d->files_size ? files_resize(d, size) : 0;
}
