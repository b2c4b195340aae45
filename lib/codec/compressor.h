/*
 * compressor.h - the squashfs compressors of this build, found by id or name.
 *
 * Each compressor lives in its own *_wrapper.c and exports one
 * struct qs_compressor (codec.h).  The reader uses parse_options and
 * decompress; the writer (pack/) uses the compress side.
 */
#ifndef QUASH_COMPRESSOR_H
#define QUASH_COMPRESSOR_H

#include <stdint.h>

#include "codec.h"

/* The compressor with this id or name, or NULL if unknown to this build. */
const struct qs_compressor *qs_compressor_by_id(uint16_t id);
const struct qs_compressor *qs_compressor_by_name(const char *name);

#endif
