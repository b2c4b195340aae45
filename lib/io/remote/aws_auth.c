/*
 * aws_auth.c - where S3 credentials come from.
 *
 * The order is the AWS CLI's: the environment, then the named profile in
 * the shared credentials file and the config file, then nothing (anonymous
 * requests, for public buckets).  Files are read into a page excluded from
 * core dumps, the secrets are copied into another such page, and both are
 * wiped before they are unmapped.  libcurl keeps its own copy of the key
 * it signs with, which we cannot mark, so loading a secret also makes the
 * process non-dumpable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "aws_auth.h"
#include "quash.h"

#define AWS_FILE_MAX (256u << 10)       /* larger credentials/config files are refused */
#define AWS_SECRET_PAGE 4096u           /* room for key id, secret and session token */

/* An anonymous mapping kept out of core dumps and, if allowed, out of swap. */
static void *secret_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_DONTDUMP);
	mlock(p, len);          /* best effort: RLIMIT_MEMLOCK may forbid it */
	return p;
}

static void secret_unmap(void *p, size_t len)
{
	if (!p)
		return;
	explicit_bzero(p, len);
	munlock(p, len);
	munmap(p, len);
}

/* Read a whole file into a secret mapping; -ENOENT if it does not exist. */
static int read_secret_file(const char *path, char **text, size_t *len, size_t *map_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	char *buf;

	if (fd < 0)
		return -errno;
	*map_len = AWS_FILE_MAX + 1;
	buf = secret_map(*map_len);
	if (!buf) {
		close(fd);
		return qs_set_error(-ENOMEM, "%s: cannot map a buffer", path);
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, *map_len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			close(fd);
			secret_unmap(buf, *map_len);
			return qs_set_error(err, "%s: %s", path, strerror(-err));
		}
		if (n == 0)
			break;
		got += n;
		if (got > AWS_FILE_MAX) {
			close(fd);
			secret_unmap(buf, *map_len);
			return qs_set_error(-EFBIG, "%s: larger than %u bytes", path, AWS_FILE_MAX);
		}
	}
	close(fd);
	*text = buf;
	*len = got;
	return 0;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static const char *trim_end(const char *start, const char *end)
{
	while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	return end;
}

static bool span_equals(const char *s, const char *e, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(e - s) == n && memcmp(s, word, n) == 0;
}

int aws_ini_find(const char *text, size_t len, const char *section, const char *key,
		 const char **value, size_t *value_len, bool *section_found)
{
	const char *p = text, *end = text + len;
	bool in_section = false;

	*section_found = false;
	while (p < end) {
		const char *eol = memchr(p, '\n', end - p);
		const char *s, *e;

		if (!eol)
			eol = end;
		s = skip_blanks(p, eol);
		e = trim_end(s, eol);
		p = eol + 1;
		if (s == e || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			const char *close = memchr(s, ']', e - s);

			if (!close)
				continue;
			s = skip_blanks(s + 1, close);
			in_section = span_equals(s, trim_end(s, close), section);
			*section_found |= in_section;
			continue;
		}
		if (in_section) {
			const char *eq = memchr(s, '=', e - s);

			if (!eq || !span_equals(s, trim_end(s, eq), key))
				continue;
			s = skip_blanks(eq + 1, e);
			*value = s;
			*value_len = e - s;
			return 1;
		}
	}
	return 0;
}

/* $NAME if set, else ~/DEFAULT_REL. */
static char *aws_file_path(const char *env_name, const char *default_rel)
{
	const char *v = getenv(env_name), *home;
	char *path;

	if (v && *v)
		return strdup(v);
	home = getenv("HOME");
	if (!home || !*home)
		return NULL;
	if (asprintf(&path, "%s/%s", home, default_rel) < 0)
		return NULL;
	return path;
}

struct secret_builder {
	struct aws_creds *creds;
	size_t used;
};

/* Copy a span into the secret page; NULL when it does not fit. */
static const char *secret_put(struct secret_builder *b, const char *s, size_t n)
{
	char *dst = (char *)b->creds->page + b->used;

	if (b->used + n + 1 > b->creds->page_len)
		return NULL;
	memcpy(dst, s, n);
	dst[n] = '\0';
	b->used += n + 1;
	return dst;
}

static int creds_from_env(struct secret_builder *b)
{
	const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
	const char *token = getenv("AWS_SESSION_TOKEN");

	if (!id || !*id || !secret || !*secret)
		return 0;
	b->creds->access_key = secret_put(b, id, strlen(id));
	b->creds->secret_key = secret_put(b, secret, strlen(secret));
	if (token && *token)
		b->creds->session_token = secret_put(b, token, strlen(token));
	if (!b->creds->access_key || !b->creds->secret_key || (token && *token && !b->creds->session_token))
		return qs_set_error(-E2BIG, "AWS credentials in the environment are too long");
	return 1;
}

/* Keys of 'section' in one file; returns 1 if the section has a key id and secret. */
static int creds_from_text(struct secret_builder *b, const char *text, size_t len, const char *section)
{
	const char *id, *secret, *token;
	size_t id_len, secret_len, token_len;
	bool found;

	if (aws_ini_find(text, len, section, "aws_access_key_id", &id, &id_len, &found) <= 0 ||
	    aws_ini_find(text, len, section, "aws_secret_access_key", &secret, &secret_len, &found) <= 0)
		return 0;
	b->creds->access_key = secret_put(b, id, id_len);
	b->creds->secret_key = secret_put(b, secret, secret_len);
	if (aws_ini_find(text, len, section, "aws_session_token", &token, &token_len, &found) > 0)
		b->creds->session_token = secret_put(b, token, token_len);
	if (!b->creds->access_key || !b->creds->secret_key)
		return qs_set_error(-E2BIG, "AWS credentials of profile %s are too long", section);
	return 1;
}

static char *dup_span(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* One file: credentials of the profile (if wanted) and, for the config file, its settings. */
static int load_file(struct secret_builder *b, const char *env_name, const char *rel, const char *section,
		     bool want_creds, struct aws_profile_settings *settings, bool *section_found)
{
	char *path = aws_file_path(env_name, rel), *text = NULL;
	size_t len = 0, map_len = 0, vlen;
	const char *v;
	bool found;
	int ret;

	if (!path)
		return 0;
	ret = read_secret_file(path, &text, &len, &map_len);
	free(path);
	if (ret == -ENOENT || ret == -ENOTDIR)
		return 0;
	if (ret < 0)
		return ret;
	aws_ini_find(text, len, section, "", &v, &vlen, &found);
	*section_found |= found;
	ret = want_creds ? creds_from_text(b, text, len, section) : 0;
	if (settings && !settings->region &&
	    aws_ini_find(text, len, section, "region", &v, &vlen, &found) > 0)
		settings->region = dup_span(v, vlen);
	if (settings && !settings->endpoint_url &&
	    aws_ini_find(text, len, section, "endpoint_url", &v, &vlen, &found) > 0)
		settings->endpoint_url = dup_span(v, vlen);
	secret_unmap(text, map_len);
	return ret;
}

/* The profile's settings apply even when the keys came from the environment. */
static int creds_from_profile(struct secret_builder *b, bool want_creds,
			      struct aws_profile_settings *settings)
{
	const char *env_profile = getenv("AWS_PROFILE");
	const char *profile = env_profile && *env_profile ? env_profile : "default";
	char config_section[256];
	bool found = false;
	int ret;

	if (strcmp(profile, "default") == 0)
		snprintf(config_section, sizeof(config_section), "default");
	else if ((size_t)snprintf(config_section, sizeof(config_section), "profile %s", profile) >=
		 sizeof(config_section))
		return qs_set_error(-ENAMETOOLONG, "AWS_PROFILE is too long");

	ret = load_file(b, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials", profile, want_creds, NULL,
			&found);
	if (ret < 0)
		return ret;
	/* The config file holds credentials too, used only if the first file had none. */
	ret = load_file(b, "AWS_CONFIG_FILE", ".aws/config", config_section, want_creds && ret == 0, settings,
			&found);
	if (ret < 0)
		return ret;
	if (!found && env_profile && *env_profile && want_creds)
		return qs_set_error(-ENOENT, "AWS profile %s not found in ~/.aws/credentials or "
				    "~/.aws/config", profile);
	return 0;
}

int aws_creds_load(struct aws_creds **out, struct aws_profile_settings *settings)
{
	struct aws_creds *creds = calloc(1, sizeof(*creds));
	struct secret_builder b = { .creds = creds };
	int ret;

	memset(settings, 0, sizeof(*settings));
	if (!creds)
		return qs_set_error(-ENOMEM, "out of memory");
	creds->page_len = AWS_SECRET_PAGE;
	creds->page = secret_map(creds->page_len);
	if (!creds->page) {
		free(creds);
		return qs_set_error(-ENOMEM, "cannot map a page for credentials");
	}
	ret = creds_from_env(&b);
	if (ret >= 0)
		ret = creds_from_profile(&b, ret == 0, settings);
	if (ret < 0) {
		aws_creds_free(creds);
		aws_profile_settings_free(settings);
		return ret;
	}
	if (creds->secret_key)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	*out = creds;
	return 0;
}

void aws_creds_free(struct aws_creds *creds)
{
	if (!creds)
		return;
	secret_unmap(creds->page, creds->page_len);
	free(creds);
}

void aws_profile_settings_free(struct aws_profile_settings *settings)
{
	free(settings->region);
	free(settings->endpoint_url);
	memset(settings, 0, sizeof(*settings));
}
