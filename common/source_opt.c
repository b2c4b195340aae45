/*
 * source_opt.c - one table from option names to struct qs_source_options.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"
#include "source_opt.h"

enum kind { TEXT, PATH, URL, SIZE, COUNT, SECONDS, HEX, VERITY_OFFSET };

static const struct {
	const char *key;
	enum kind kind;
	size_t field;
	size_t width;       /* sizeof the field for SIZE and COUNT */
} source_opts[] = {
#define F(name) offsetof(struct qs_source_options, name), sizeof(((struct qs_source_options *)0)->name)
	{ "endpoint",        TEXT,    F(endpoint) },
	{ "region",          TEXT,    F(region) },
	{ "cache_dir",       TEXT,    F(cache_dir) },
	{ "proxy",           TEXT,    F(proxy) },
	{ "fallback",        URL,     F(fallback) },
	{ "record",          PATH,    F(record) },
	{ "prefetch",        PATH,    F(prefetch) },
	{ "cache_dir_limit", SIZE,    F(cache_dir_limit) },
	{ "remote_cache",    SIZE,    F(memory_cache) },
	{ "chunk_size",      COUNT,   F(chunk_size) },
	{ "retry_seconds",   SECONDS, F(retry_seconds) },
	{ "verity",          HEX,     F(verity_root) },
	{ "verity_file",     PATH,    F(verity_file) },
	{ "verity_offset",   VERITY_OFFSET, F(verity_offset) },
	{ "verity_sig",      PATH,    F(verity_sig) },
	{ "verity_cert",     PATH,    F(verity_cert) },
#undef F
};

/* KEY with '-' read as '_', so that --cache-dir and cache_dir= are one option. */
static int key_is(const char *key, const char *name)
{
	for (; *key && *name; key++, name++)
		if (*key != *name && !(*key == '-' && *name == '_'))
			return 0;
	return *key == *name;
}

static int set_number(void *field, size_t width, uint64_t v)
{
	if (width == sizeof(uint64_t)) {
		*(uint64_t *)field = v;
	} else if (width == sizeof(unsigned)) {
		if (v > (unsigned)-1)
			return -EINVAL;
		*(unsigned *)field = (unsigned)v;
	} else {
		return -EINVAL;
	}
	return 0;
}

int source_opt_set(struct qs_source_options *o, const char *key, const char *value)
{
	for (size_t i = 0; i < sizeof(source_opts) / sizeof(source_opts[0]); i++) {
		void *field = (char *)o + source_opts[i].field;
		uint64_t v;
		char *end;

		if (!key_is(key, source_opts[i].key))
			continue;
		if (!value)
			return -EINVAL;
		switch (source_opts[i].kind) {
		case HEX:
			/* a root hash: hex digits, as many as some hash's digest has (checked at open) */
			if (!*value || value[strspn(value, "0123456789abcdefABCDEF")])
				return -EINVAL;
			*(const char **)field = value;
			return 0;
		case VERITY_OFFSET:
			if (size_parse(value, &v))
				return -EINVAL;
			o->verity_offset = v;
			o->verity_offset_given = true;
			return 0;
		case URL:
			if (!qs_source_spec_is_remote(value))
				return -EINVAL;
			/* fall through */
		case PATH:
			if (!*value)
				return -EINVAL;
			/* fall through */
		case TEXT:
			*(const char **)field = value;
			return 0;
		case SIZE:
			return size_parse(value, &v) ? -EINVAL : set_number(field, source_opts[i].width, v);
		case COUNT:
			if (size_parse(value, &v) || v == 0 || v > SIZE_MAX)
				return -EINVAL;
			return set_number(field, source_opts[i].width, v);
		case SECONDS:
			if (*value < '0' || *value > '9')
				return -EINVAL;
			errno = 0;
			v = strtoull(value, &end, 10);
			if (errno || *end || v == 0)
				return -EINVAL;
			return set_number(field, source_opts[i].width, v);
		}
	}
	return -ENOENT;
}
