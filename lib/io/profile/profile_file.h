/*
 * profile_file.h - writing a prefetch profile (profile_file.c); reading one
 * is public (source.h: qs_profile_parse(), qs_profile_load()).
 */
#ifndef QUASH_PROFILE_FILE_H
#define QUASH_PROFILE_FILE_H

#include <stddef.h>

#include "source.h"

/* Write the profile to path.tmp.PID, then rename it over path: 0, or -errno with a message. */
int profile_write(const char *path, const char *identity, const struct qs_profile_range *r, size_t n);

#endif
