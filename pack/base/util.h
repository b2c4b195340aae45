/*
 * util.h - limits and small helpers shared by the writer's files.
 */
#ifndef QUASH_PACK_UTIL_H
#define QUASH_PACK_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PACK_DEPTH_MAX       2048         /* directory levels accepted from any source */
#define PACK_XATTR_LIST_MAX  (64u << 10)  /* bytes of xattr names per file (Linux's limit) */
#define PACK_XATTR_VALUE_MAX (64u << 10)
#define PACK_SYMLINK_MAX     4096u        /* longest symlink target stored (PATH_MAX) */
#define PACK_MEMORY_MIN      (1u << 20)   /* --memory: less leaves no room for a block in flight */

/* "quash: pack: ..." on stderr, clearing the progress bar first; pack_warn adds "warning: ". */
void pack_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pack_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on messages start "quash: mksquashfs: ", as that form's own do (once, at its start). */
void pack_set_mksquashfs_form(void);
/* How many warnings pack_warn() has given (mksquashfs -exit-on-error makes any fatal). */
uint64_t pack_warnings(void);

/*
 * Test hook: with QUASH_TEST_PACK_PAUSE=FIFO in the environment, the first
 * call writes "paused" to FIFO and waits for a line back (util.c).
 */
void pack_test_pause(void);

/* A user (group) given as a number or a name, as mksquashfs takes them; false if neither. */
bool pack_parse_owner(const char *s, bool group, uint32_t *out);

/* A block size as "131072", "128K" or "1M": 4K .. 1M, a power of two; false otherwise. */
bool pack_parse_block_size(const char *s, uint32_t *out);
/* --memory, mksquashfs -mem: a size (K, M, G suffixes) of at least PACK_MEMORY_MIN. */
bool pack_parse_memory(const char *s, uint64_t *out);

/* A fast 64-bit hash for finding candidate duplicates (always confirmed by comparison). */
uint64_t pack_hash(uint64_t seed, const void *data, size_t len);

#endif
