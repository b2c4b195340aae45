/*
 * remote_url.c - what a remote name is and how it is shown: which specs are
 * remote, a URL without credentials or query string for messages, the key
 * that names an object in the persistent cache, S3 key encoding, and the
 * request target's proxy and cleanup.  No requests here: the source opener,
 * the profile loader and the listings all use it without the transport.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aws_auth.h"
#include "quash.h"
#include "source_remote.h"

bool qs_source_spec_is_remote(const char *spec)
{
	return !strncmp(spec, "http://", 7) || !strncmp(spec, "https://", 8) || !strncmp(spec, "s3://", 5);
}

char *remote_display_name(const char *url)
{
	const char *scheme_end = strstr(url, "://"), *host, *at, *path_end;
	char *name;

	if (!scheme_end)
		return strdup(url);
	host = scheme_end + 3;
	path_end = host + strcspn(host, "?#");
	at = memchr(host, '@', strcspn(host, "/?#"));
	if (at)
		host = at + 1;
	if (asprintf(&name, "%.*s%.*s", (int)(scheme_end + 3 - url), url, (int)(path_end - host), host) < 0)
		return NULL;
	return name;
}

/*
 * Query parameters that authorise a request rather than name an object:
 * AWS SigV4 and V2 presigning, Google Cloud Storage's, and Azure SAS
 * tokens.  Compared without case; entries ending in '*' are prefixes.
 */
static const char *const credential_params[] = {
	"x-amz-*", "x-goog-*", "signature", "expires", "awsaccesskeyid", "googleaccessid",
	"sig", "se", "st", "sp", "spr", "sv", "sr", "srt", "ss", "skoid", "sktid", "skt", "ske", "sks", "skv",
};

static bool is_credential_param(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(credential_params) / sizeof(credential_params[0]); i++) {
		const char *c = credential_params[i];
		size_t n = strlen(c);

		if (c[n - 1] == '*' ? len >= n - 1 && !strncasecmp(name, c, n - 1)
				    : len == n && !strncasecmp(name, c, n))
			return true;
	}
	return false;
}

char *remote_cache_key(const char *url)
{
	char *key = remote_display_name(url), *grown;
	const char *q = strchr(url, '?'), *end;
	size_t len;

	if (!key || !q)
		return key;
	len = strlen(key);
	end = q + 1 + strcspn(q + 1, "#");
	for (const char *p = q + 1; p < end; p++) {
		size_t n = strcspn(p, "&#");
		size_t name_len = strcspn(p, "=&#");

		if (n && !is_credential_param(p, name_len < n ? name_len : n)) {
			grown = realloc(key, len + n + 2);
			if (!grown) {
				free(key);
				return NULL;
			}
			key = grown;
			key[len++] = strchr(key, '?') ? '&' : '?';
			memcpy(key + len, p, n);
			len += n;
			key[len] = '\0';
		}
		p += n;         /* at the '&' before the next parameter, or at the end */
	}
	return key;
}

char *qs_source_display_name(const char *spec)
{
	return strstr(spec, "://") ? remote_display_name(spec) : strdup(spec);
}


int remote_append_escaped(char **dst, const char *src, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t have = *dst ? strlen(*dst) : 0, n = 0;
	char *out = realloc(*dst, have + 3 * strlen(src) + 1);

	if (!out)
		return -ENOMEM;
	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~", *p) || (*p == '/' && keep_slash)) {
			out[have + n++] = (char)*p;
		} else {
			out[have + n++] = '%';
			out[have + n++] = hex[*p >> 4];
			out[have + n++] = hex[*p & 15];
		}
	}
	out[have + n] = '\0';
	*dst = out;
	return 0;
}

int remote_append_encoded(char **dst, const char *src)
{
	return remote_append_escaped(dst, src, true);
}

int remote_set_proxy(struct remote_target *t, const char *proxy)
{
	const char *host = strstr(proxy, "://");

	host = host ? host + 3 : proxy;
	/* user:password@ would show in ps and /proc/mounts: the environment keeps it out of sight. */
	if (memchr(host, '@', strcspn(host, "/")))
		return qs_set_error(-EINVAL, "proxy: no credentials in the option; give them in "
				    "https_proxy or http_proxy instead");
	if (strncmp(proxy, "http://", 7) && strncmp(proxy, "https://", 8))
		return qs_set_error(-EINVAL, "proxy: expected http://HOST:PORT or https://HOST:PORT");
	t->proxy = strdup(proxy);
	return t->proxy ? 0 : qs_set_error(-ENOMEM, "out of memory");
}

void remote_target_clear(struct remote_target *t)
{
	free(t->url);
	free(t->name);
	free(t->sigv4);
	free(t->proxy);
	aws_creds_free(t->creds);
	memset(t, 0, sizeof(*t));
}
