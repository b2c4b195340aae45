/*
 * compressor.c - finding a compressor of this build by id or name.
 */
#include <string.h>

#include "compressor.h"

static const struct qs_compressor *const compressors[] = {
	&qs_gzip_compressor,
	&qs_lzma_compressor,
	&qs_lzo_compressor,
	&qs_xz_compressor,
	&qs_lz4_compressor,
	&qs_zstd_compressor,
};

#define COMPRESSOR_COUNT (sizeof(compressors) / sizeof(compressors[0]))

const struct qs_compressor *qs_compressor_by_id(uint16_t id)
{
	for (size_t i = 0; i < COMPRESSOR_COUNT; i++)
		if (compressors[i]->id == id)
			return compressors[i];
	return NULL;
}

const struct qs_compressor *qs_compressor_by_name(const char *name)
{
	for (size_t i = 0; i < COMPRESSOR_COUNT; i++)
		if (strcmp(compressors[i]->name, name) == 0)
			return compressors[i];
	return NULL;
}
