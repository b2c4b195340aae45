/*
 * exclude.h - mksquashfs's and quash pack's excludes: fnmatch patterns or,
 * with -regex, regex parts, matched against a path from the source's root.
 */
#ifndef QUASH_PACK_EXCLUDE_H
#define QUASH_PACK_EXCLUDE_H

#include <stdbool.h>

struct scan_options;

/* Is 'relpath' (relative to its source's root) excluded?  Patterns with a '/' match the whole path. */
bool scan_excluded(const struct scan_options *o, const char *relpath);
/* Free the calling thread's compiled patterns (a thread that called scan_excluded(), at its end). */
void scan_excluded_forget(void);

#endif
