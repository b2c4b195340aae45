/*
 * profile.h - the prefetch-profile wrapper (profile.c), put over a source
 * by qs_source_open() when its options ask to record or replay.
 */
#ifndef QUASH_PROFILE_H
#define QUASH_PROFILE_H

#include "source.h"

/*
 * Wrap 'base' (ownership passes, even on failure) to record the ranges read
 * and/or replay a profile, as 'opt' asks; *out may be 'base' itself when
 * there is nothing to do.  Only an unwritable -o record file is an error;
 * a profile that cannot be replayed is a line in (*out)->notice.
 */
int qs_source_open_profiled(struct qs_source *base, const char *spec, const struct qs_source_options *opt,
			    struct qs_source **out);

#endif
