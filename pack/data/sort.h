/*
 * sort.h - the data layout order of mksquashfs's -sort FILE (sort.c).
 */
#ifndef QUASH_PACK_SORT_H
#define QUASH_PACK_SORT_H

#include <stdbool.h>
#include <stddef.h>

#include "tree/tree.h"

struct sort_entry {
	struct pack_inode *inode;   /* a regular file (hard links: once per name) */
	int priority;
	size_t seq;                 /* its place in the tree's order, for a stable sort */
};

/*
 * Every regular file of the finished tree, highest priority first; 0 or
 * -errno (said).  order: FILE is an --order list (one PATH a line, first
 * first) rather than -sort's PATH PRIORITY lines.
 */
int sort_order(struct pack_tree *t, const char *file, bool order, struct sort_entry **out, size_t *count);

#endif
