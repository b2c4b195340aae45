/*
 * walk.h - the hostile-image walk shared by the libFuzzer target, the
 * regression driver and the thread stress test: open an image held in
 * memory and touch every part of the reader library reachable from it.
 */
#ifndef QUASH_FUZZ_WALK_H
#define QUASH_FUZZ_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "quash.h"

/* A source over bytes the caller keeps alive until the source is closed. */
struct qs_source *walk_memory_source(const uint8_t *data, size_t size, const char *name);

/*
 * Open data as an image and walk all of it, within a fixed work budget.
 * Returns the number of operations done (for the caller's curiosity); every
 * failure the library reports is expected and ignored.
 */
unsigned long walk_image(const uint8_t *data, size_t size);

/* The walk of an image already open, for callers that open it themselves. */
unsigned long walk_open_image(struct qs_image *img);

#endif
