/*
 * source_remote.h - images on HTTP(S) servers and S3 object stores: the
 * interface of io/remote/ to the rest of the library and to the front ends.
 *
 * qs_source_open() hands every "http://", "https://" and "s3://" spec to
 * qs_source_open_remote().  Both kinds share one request engine
 * (remote/http.c: retries, errors) and one range source
 * (remote/remote_source.c: ETag pinning, Content-Range checks) with the
 * chunk cache in front of it; S3 only adds how the URL and the signature
 * are made (remote/s3.c).
 */
#ifndef QUASH_SOURCE_REMOTE_H
#define QUASH_SOURCE_REMOTE_H

#include <stdbool.h>

#include "source.h"

struct aws_creds;            /* remote/aws_auth.h */

#define REMOTE_DEFAULT_RETRY_SECONDS 30
#define REMOTE_VALIDATOR_MAX         256    /* longest ETag or Last-Modified accepted */
#define REMOTE_ROOTHASH_MAX          130    /* a verity root hash in hex (sha512's 128 digits), NUL */


int qs_source_open_remote(const char *spec, const struct qs_source_options *opt, struct qs_source **out);

/* libcurl is opened on first use (curl_loader.c, lazy_lib.h): 0, or -ENOSYS
 * with a one-line reason, so that a caller can say why before relying on it. */
int qs_curl_load(void);
const char *qs_curl_error(void);

/* Where requests go and how they are signed. */
struct remote_target {
	char *url;                  /* the request URL */
	char *name;                 /* what messages call it: never credentials or a query string */
	char *sigv4;                /* CURLOPT_AWS_SIGV4 provider ("aws:amz:REGION:s3"), or NULL */
	struct aws_creds *creds;    /* with sigv4: the keys, or anonymous */
	const bool *cancel;         /* remote_call() ends with -ECANCELED once this is true, or NULL */
	char *proxy;                /* CURLOPT_PROXY, or NULL for the environment's */
	size_t reply_max;           /* bytes of a remote_call() answer kept; 0: REMOTE_REPLY_MAX */
};

void remote_target_clear(struct remote_target *t);

/* Send every request of t through this proxy (http:// or https://, no credentials). */
int remote_set_proxy(struct remote_target *t, const char *proxy);

/* "s3://BUCKET/KEY" as a target: endpoint, region and credentials resolved. */
int s3_target(const char *spec, const struct qs_source_options *opt, struct remote_target *t);

/*
 * "s3://BUCKET", "s3://BUCKET/" or "s3://BUCKET/PREFIX" as the target of
 * bucket-level requests (ListObjectsV2): the URL is the bucket's, ending in
 * '/'; *prefix points into spec at what follows "BUCKET/" ("" if nothing).
 */
int s3_bucket_target(const char *spec, const struct qs_source_options *opt, struct remote_target *t,
		     const char **prefix);

/* 'url' without userinfo and query string, for messages; NULL when out of memory. */
char *remote_display_name(const char *url);

/*
 * What names the object at 'url', for the persistent cache: scheme, host,
 * port, path and the query parameters that are not credentials, in the
 * order given.  Userinfo, the fragment and a presigned URL's signing
 * parameters (which change with every signature) are left out.  NULL
 * when out of memory.
 */
char *remote_cache_key(const char *url);

/* An answer to remote_call(). */
#define REMOTE_REPLY_MAX (64u << 10)    /* bytes of an answer's body kept, unless t->reply_max says */
struct remote_reply {
	long status;
	char *body;                 /* NUL-terminated, or NULL */
	size_t body_len;
	size_t body_cap;            /* bytes allocated for body */
	bool cut;                   /* the body went on past the bound and was not read further */
	char etag[REMOTE_VALIDATOR_MAX];
};

/*
 * One request to 't' (its URL plus "?query" if given) with 'body' as the
 * payload of a PUT or POST; GET and DELETE take none.  Retried like reads
 * within 'retry_seconds' (0: the default).  0 for a 2xx answer, else -errno
 * with a message; *reply holds the last answer (remote_reply_clear() it).
 */
int remote_call(const struct remote_target *t, const char *method, const char *query, const void *body,
		size_t len, unsigned retry_seconds, struct remote_reply *reply);
void remote_reply_clear(struct remote_reply *reply);

/* Tell the front end's qs_source_set_retry_notice() hook, if any, that a first retry comes. */
void qs_source_retry_notice(const char *message, unsigned seconds);

/* Append 'src' to 'dst' percent-encoded as an S3 key (everything but unreserved characters and '/'). */
int remote_append_encoded(char **dst, const char *src);
/* The same, '/' encoded too unless keep_slash (a SigV4 query value); *dst may be NULL. */
int remote_append_escaped(char **dst, const char *src, bool keep_slash);

#endif
