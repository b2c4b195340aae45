/*
 * source_opt.h - the remote options (endpoint, region, caches, retries,
 * proxy, fallback, profiles, verity) mapped into struct qs_source_options once, for
 * mount's -o KEY=VALUE and the offline tools' --KEY VALUE alike.
 */
#ifndef QUASH_COMMON_SOURCE_OPT_H
#define QUASH_COMMON_SOURCE_OPT_H

#include "source.h"

/*
 * Set the option KEY (mount's spelling "cache_dir" or the long option's
 * "cache-dir") to VALUE in *o; VALUE is kept by pointer, not copied.
 * Returns 0, -EINVAL when VALUE is not valid for KEY (a size, a count of
 * seconds from 1, an http://, https:// or s3:// URL for fallback, a
 * non-empty path for record, prefetch, verity_file, verity_sig and
 * verity_cert, hex digits for
 * verity, a size for verity_offset), or -ENOENT when KEY is not a
 * source option, for the caller's own table to try.
 */
int source_opt_set(struct qs_source_options *o, const char *key, const char *value);

#endif
