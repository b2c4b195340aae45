/*
 * dedup.h - whole-file deduplication: same size, same hash, same bytes.
 */
#ifndef QUASH_PACK_DEDUP_H
#define QUASH_PACK_DEDUP_H

#include <stdbool.h>
#include <stdint.h>

#include "tree/tree.h"

struct dedup_index;

/*
 * Files of up to DEDUP_EXACT_MAX bytes are keyed by their bytes, not a
 * hash of them (data.c): for them an equal key is equal contents, and
 * dedup_find() compares nothing.  In a tree of many tiny files that
 * saves reopening a third of them.
 */
#define DEDUP_EXACT_MAX 8u

/* Exact comparison of two files' contents: 1 equal, 0 different, -errno. */
typedef int (*dedup_same_fn)(struct pack_inode *a, struct pack_inode *b, void *arg);

struct spill;
/* Its tables come from 'spill' (NULL: malloc()). */
int dedup_init(struct dedup_index **out, struct spill *spill);
void dedup_free(struct dedup_index *d);

/* First pass: every file size in the tree.  Only sizes seen twice are worth hashing. */
int dedup_count_size(struct dedup_index *d, uint64_t size);
bool dedup_size_shared(struct dedup_index *d, uint64_t size);
/* Has dedup_count_size() seen this size at all? */
bool dedup_size_known(struct dedup_index *d, uint64_t size);

/* An earlier written file with file's size and hash and the same bytes, or NULL (or *err). */
/* Where an earlier file's data is, as a duplicate of it copies it. */
struct dedup_hit {
	const struct pack_extra *blocks;
	uint32_t fragment, frag_offset;
};

/*
 * An earlier written file with file's size and hash and the same bytes:
 * true, and where its data is in *hit; false if none (or *err).
 */
bool dedup_find(struct dedup_index *d, struct pack_inode *file, dedup_same_fn same, void *arg,
		struct dedup_hit *hit, int *err);
/* Make room for every file dedup_count_size() has counted so far, in one allocation. */
int dedup_reserve(struct dedup_index *d);
/* Remember a written file (its size and u.file.hash) as a candidate for later ones. */
int dedup_add(struct dedup_index *d, struct pack_inode *file);

#endif
