/*
 * inomap.h - a map from inode numbers to a pointer, for the walks over an
 * image: the directories already visited (a hostile image may link one
 * directory from several places, or from inside itself) and the first path
 * a hard-linked inode was extracted to.
 *
 * A hash table rather than a bitmap of inode_count bits: inode_count comes
 * from the superblock of an image nobody vouches for, and the table grows
 * only with the inodes a walk actually meets.
 */
#ifndef QUASH_CLI_INOMAP_H
#define QUASH_CLI_INOMAP_H

#include <stddef.h>
#include <stdint.h>

struct inomap_slot;

struct inomap {
	struct inomap_slot *slots;
	size_t cap;             /* a power of two, or 0 before the first insert */
	size_t used;
};

/* The value stored for ino, or NULL. */
void *inomap_get(const struct inomap *map, uint32_t ino);

/* Store value (not NULL) for ino, replacing any earlier one; 0 or -ENOMEM. */
int inomap_put(struct inomap *map, uint32_t ino, void *value);

/* Free the table; free_value (if not NULL) is called on every value first. */
void inomap_free(struct inomap *map, void (*free_value)(void *));

#endif
