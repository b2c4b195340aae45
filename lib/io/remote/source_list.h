/*
 * source_list.h - listing a remote catalog (source_list.c): the limits and
 * the parsers of the three kinds of answer, outside the public contract so
 * that the unit tests can feed them documents without a server.
 */
#ifndef QUASH_SOURCE_LIST_H
#define QUASH_SOURCE_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source.h"

/*
 * What one listing may cost, whatever the server sends.  A catalog holds
 * images, not files: a million of them is far beyond any real one.
 */
#define LIST_ENTRIES_MAX   1000000u         /* objects handed out; one more is an error */
#define LIST_KEY_MAX       1024             /* bytes of a key (S3's own bound); longer ones are skipped */
#define LIST_DEPTH_MAX     16               /* directories an HTTP listing descends below the listed one */
#define LIST_REQUESTS_MAX  10000u           /* S3 pages or HTTP directories fetched by one listing */
#define LIST_DOCUMENT_MAX  (64u << 20)      /* bytes of one directory listing or index file */
#define LIST_BYTES_MAX     (1ull << 30)     /* bytes of all the answers of one listing */
/*
 * Keys asked for per S3 page.  1000 would save requests, but a page of
 * 200 keys stays small (about 70 KiB for usual keys, 1.3 MiB at worst with
 * every character of 1024-byte keys an entity), and catalogs are short.
 */
#define LIST_S3_PAGE_KEYS  200
#define LIST_S3_PAGE_MAX   (8u << 20)       /* bytes of one S3 page */
#define LIST_TOKEN_MAX     1024             /* bytes of a continuation token */
#define LIST_ETAG_MAX      256              /* bytes of an ETag; longer ones are given as "" */
#define LIST_ROOT_HASH_MAX 128              /* hex digits of a root hash: sha512's */

/* One listing in progress. */
struct list_run {
	qs_list_fn fn;
	void *arg;
	const char *where;          /* the document being parsed, for messages: no credentials, no query */
	uint64_t entries;           /* objects handed to fn so far */
	uint64_t bytes;             /* bytes of answers read so far */
	unsigned requests;          /* requests sent so far */
};

/* Is 'key' (len bytes) one a caller may use as a relative path? */
bool list_key_safe(const char *key, size_t len);

/* Hand one object to run->fn unless its key is unsafe: 0, fn's non-zero return, or -EIO past LIST_ENTRIES_MAX. */
int list_emit(struct list_run *run, const char *key, size_t len, uint64_t size, int64_t mtime, const char *etag);

/* The same for an alias of key for target (tlen bytes): skipped when either is unsafe. */
int list_emit_alias(struct list_run *run, const char *key, size_t len, const char *target, size_t tlen);

/*
 * XML character data with its entities decoded into out (cap bytes, NUL
 * added); *out_len is the decoded length, which exceeds cap - 1 when out
 * holds only its start.  -1 for a '<' or an entity that is not one.
 */
int list_xml_decode(const char *s, size_t len, char *out, size_t cap, size_t *out_len);

/* "2026-12-04T05:55:26.000Z" (S3) and "Fri, 04 Dec 2026 05:55:26 GMT" (HTTP): seconds, or 0 if not that. */
int64_t list_time_iso8601(const char *s, size_t len);
int64_t list_time_http(const char *s, size_t len);

/*
 * One ListObjectsV2 page: its objects, keys made relative to 'prefix'
 * (what was asked for, so every key must start with it); *truncated and the
 * next page's token.  0, fn's non-zero return, or -EIO with a message.
 */
int list_parse_s3(struct list_run *run, const char *xml, size_t len, const char *prefix, bool *truncated,
		  char token[LIST_TOKEN_MAX + 1]);

/* Subdirectories found in a directory listing, as keys ending in '/'. */
struct list_dirs {
	char **names;
	size_t n, cap;
};

void list_dirs_free(struct list_dirs *dirs);

/*
 * One directory as nginx lists it with autoindex_format json: its files
 * are handed out as 'dir' plus their names ('dir' is "" or ends in '/'),
 * its directories added to *dirs.  0, fn's non-zero return, or -errno.
 */
int list_parse_autoindex(struct list_run *run, const char *json, size_t len, const char *dir,
			 struct list_dirs *dirs);

/* A text index: one key per line, optionally a size after blanks; '#' comments. */
int list_parse_index(struct list_run *run, const char *text, size_t len);

#endif
