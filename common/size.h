/*
 * size.h - the one parser for sizes and offsets on every command line
 * (pack's --memory, mount's cache_dir_limit=, the offline tools' --offset).
 */
#ifndef QUASH_COMMON_SIZE_H
#define QUASH_COMMON_SIZE_H

#include <stdint.h>

/*
 * "123", "0x7b", "4K", "1M", "2G" (K, M, G: KiB, MiB, GiB, either case):
 * returns 0 with the bytes in *out, or -EINVAL for anything else, an
 * overflow included.  *out is left alone on failure.
 */
int size_parse(const char *s, uint64_t *out);

#endif
