/*
 * s3.c - "s3://BUCKET/KEY": the request URL and how it is signed.
 *
 * With an endpoint (--endpoint, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the
 * profile's endpoint_url) requests use path-style addressing,
 * ENDPOINT/BUCKET/KEY, which MinIO, Ceph RGW and the others all accept;
 * without one they go to AWS itself.  Requests are signed with AWS
 * Signature V4 by libcurl, or go unsigned when no credentials are found
 * (public buckets).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws_auth.h"
#include "quash.h"
#include "source_remote.h"

#define S3_BUCKET_MIN 3
#define S3_BUCKET_MAX 63

static const char *first_set(const char *a, const char *b, const char *c, const char *d)
{
	const char *v[] = { a, b, c, d };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] && *v[i])
			return v[i];
	return NULL;
}

static bool valid_bucket(const char *b, size_t n)
{
	if (n < S3_BUCKET_MIN || n > S3_BUCKET_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-.", b[i]))
			return false;
	return true;
}

/* The base URL for the bucket: "ENDPOINT/BUCKET" or AWS's virtual-hosted name. */
static char *bucket_url(const char *endpoint, const char *region, const char *bucket, size_t bucket_len)
{
	char *url;
	int n;

	if (endpoint) {
		size_t elen = strlen(endpoint);

		while (elen && endpoint[elen - 1] == '/')
			elen--;
		n = asprintf(&url, "%.*s/%.*s", (int)elen, endpoint, (int)bucket_len, bucket);
	} else if (memchr(bucket, '.', bucket_len)) {
		/* Dots break the TLS wildcard of virtual-hosted names. */
		n = asprintf(&url, "https://s3.%s.amazonaws.com/%.*s", region, (int)bucket_len, bucket);
	} else {
		n = asprintf(&url, "https://%.*s.s3.%s.amazonaws.com", (int)bucket_len, bucket, region);
	}
	return n < 0 ? NULL : url;
}

/* Resolve endpoint, region and credentials; the URL is the bucket's plus 'path' encoded. */
static int target_for(const char *spec, size_t bucket_len, const char *path, const struct qs_source_options *opt,
		      struct remote_target *t)
{
	const char *bucket = spec + 5, *region, *endpoint;
	struct aws_profile_settings settings;
	int ret;

	memset(t, 0, sizeof(*t));
	if (!valid_bucket(bucket, bucket_len))
		return qs_set_error(-EINVAL, "bucket names are 3 to 63 of a-z, 0-9, '-' and '.'");
	ret = aws_creds_load(&t->creds, &settings);
	if (ret < 0)
		return ret;
	region = first_set(opt->region, getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"), settings.region);
	if (!region)
		region = AWS_DEFAULT_REGION;
	endpoint = first_set(opt->endpoint, getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"),
			     settings.endpoint_url);
	ret = -ENOMEM;
	t->name = strdup(spec);
	t->url = bucket_url(endpoint, region, bucket, bucket_len);
	if (t->name && t->url && asprintf(&t->sigv4, "aws:amz:%s:s3", region) >= 0)
		ret = remote_append_encoded(&t->url, path);
	else
		t->sigv4 = NULL;
	aws_profile_settings_free(&settings);
	if (ret < 0) {
		remote_target_clear(t);
		return qs_set_error(ret, "out of memory");
	}
	return 0;
}

int s3_target(const char *spec, const struct qs_source_options *opt, struct remote_target *t)
{
	const char *slash = strchr(spec + 5, '/');

	memset(t, 0, sizeof(*t));
	if (!slash || !slash[1])
		return qs_set_error(-EINVAL, "expected s3://BUCKET/KEY");
	return target_for(spec, slash - (spec + 5), slash, opt, t);
}

int s3_bucket_target(const char *spec, const struct qs_source_options *opt, struct remote_target *t,
		     const char **prefix)
{
	const char *slash = strchr(spec + 5, '/');
	size_t bucket_len = slash ? (size_t)(slash - (spec + 5)) : strlen(spec + 5);

	*prefix = slash ? slash + 1 : "";
	return target_for(spec, bucket_len, "/", opt, t);
}
