/*
 * http.h - the one HTTP request engine under remote/ (http.c): what every
 * request shares, whether a range read of the remote source
 * (remote_source.c) or a remote_call() of the S3 sink and the listings.
 *
 * Not for the outside: source_remote.h is remote/'s interface.
 */
#ifndef QUASH_HTTP_H
#define QUASH_HTTP_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source_remote.h"

#define REMOTE_STALL_SECONDS    15        /* a transfer this long below the minimum rate is retried */

/* What one answer's headers said; the last answer's, after redirects and 100 Continue. */
struct http_head {
	long status;
	bool has_range;                 /* a valid "Content-Range: bytes FIRST-LAST/TOTAL" */
	uint64_t range_first, range_last, range_total;
	char etag[REMOTE_VALIDATOR_MAX];
	char last_modified[REMOTE_VALIDATOR_MAX];
	/*
	 * x-amz-meta-verity-roothash, the S3 object metadata quash takes as the
	 * image's verity root hash (docs/SECURITY.md), or "": printable ASCII
	 * only, "?" for a value too long or with anything else in it.
	 */
	char verity_root[REMOTE_ROOTHASH_MAX];
};

/* Take one header line as curl hands it over (with its CR LF) into *h. */
void http_head_line(struct http_head *h, const char *line, size_t len);

/* libcurl opened and initialised, once per process: 0, or -errno with a message. */
int http_init(void);

/* Options every request to 't' has: timeouts, CA, proxy, signing, redirects. */
void http_handle_setup(CURL *h, const struct remote_target *t, long stall_seconds);

/* 'line' appended to 'list'; NULL (and 'list' freed) when out of memory. */
struct curl_slist *http_append_header(struct curl_slist *list, const char *line);

/* What S3 needs besides the signature curl makes; frees 'list' and returns NULL on failure. */
struct curl_slist *http_s3_headers(const struct remote_target *t, struct curl_slist *list);

/* " (CODE)" for the <Code> of an S3 error body, or "". */
void http_s3_error_code(const char *body, char *code, size_t size);

/* A 401, 403 or 404 as a one-line error (-EACCES or -ENOENT); prefix: "" or "PUT: ". */
int http_refusal_error(const struct remote_target *t, const char *prefix, long status, const char *body);

/* Whether waiting can fix this curl error (a reset connection, a timeout), or not (DNS, TLS). */
bool http_retryable(CURLcode rc, const char *msg);

/* CLOCK_MONOTONIC in ms, and what is left of it before 'deadline' (at least 1). */
uint64_t http_now_ms(void);
long http_remaining_ms(uint64_t deadline);

/*
 * Call once(arg, deadline) until it returns something other than -EAGAIN,
 * backing off between attempts, within 'retry_seconds' in all: 'deadline'
 * (CLOCK_MONOTONIC ms) bounds every attempt's whole transfer too, so the
 * budget holds against a server that drips or never ends its answer.
 * 'max_attempts' 0 means as many as the budget allows.  Running out gives
 * -EIO (-EAGAIN when max_attempts is 1, so that the caller can tell
 * "unreachable" from other errors).
 */
int http_with_retries(unsigned retry_seconds, unsigned max_attempts, int (*once)(void *arg, uint64_t deadline),
		      void *arg);

#endif
