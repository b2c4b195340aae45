/*
 * inomap.c - open addressing with linear probing, kept at most half full.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "inomap.h"

#define INOMAP_INITIAL_CAP 64

struct inomap_slot {
	uint32_t ino;
	bool used;
	void *value;
};

static size_t inomap_hash(uint32_t ino, size_t cap)
{
	/* Fibonacci hashing spreads the dense inode numbers mksquashfs assigns. */
	return (size_t)(((uint64_t)ino * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct inomap_slot *inomap_find(const struct inomap *map, uint32_t ino)
{
	size_t i = inomap_hash(ino, map->cap);

	while (map->slots[i].used && map->slots[i].ino != ino)
		i = (i + 1) & (map->cap - 1);
	return &map->slots[i];
}

void *inomap_get(const struct inomap *map, uint32_t ino)
{
	struct inomap_slot *s;

	if (map->cap == 0)
		return NULL;
	s = inomap_find(map, ino);
	return s->used ? s->value : NULL;
}

static int inomap_grow(struct inomap *map)
{
	size_t cap = map->cap ? map->cap * 2 : INOMAP_INITIAL_CAP;
	struct inomap old = *map;

	map->slots = calloc(cap, sizeof(*map->slots));
	if (!map->slots) {
		map->slots = old.slots;
		return -ENOMEM;
	}
	map->cap = cap;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slots[i].used)
			*inomap_find(map, old.slots[i].ino) = old.slots[i];
	}
	free(old.slots);
	return 0;
}

int inomap_put(struct inomap *map, uint32_t ino, void *value)
{
	struct inomap_slot *s;

	if ((map->used + 1) * 2 > map->cap) {
		int err = inomap_grow(map);

		if (err)
			return err;
	}
	s = inomap_find(map, ino);
	if (!s->used) {
		s->used = true;
		s->ino = ino;
		map->used++;
	}
	s->value = value;
	return 0;
}

void inomap_free(struct inomap *map, void (*free_value)(void *))
{
	for (size_t i = 0; free_value && i < map->cap; i++) {
		if (map->slots[i].used)
			free_value(map->slots[i].value);
	}
	free(map->slots);
	map->slots = NULL;
	map->cap = map->used = 0;
}
