/*
 * aws_auth.h - AWS credentials, region and endpoint, found the way the AWS
 * tools find them.
 *
 * Secrets live in one page that is excluded from core dumps and wiped when
 * freed; they are never copied into messages.
 */
#ifndef QUASH_AWS_AUTH_H
#define QUASH_AWS_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AWS_DEFAULT_REGION "us-east-1"

struct aws_creds {
	const char *access_key;     /* NULL: anonymous, requests go unsigned */
	const char *secret_key;
	const char *session_token;  /* NULL unless temporary credentials */
	void *page;                 /* where the three strings live */
	size_t page_len;
};

/* Settings of the profile in ~/.aws/config that quash uses. */
struct aws_profile_settings {
	char *region;               /* "region", or NULL */
	char *endpoint_url;         /* "endpoint_url", or NULL */
};

/*
 * Credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN,
 * else from the profile (AWS_PROFILE, else "default") in
 * AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) or AWS_CONFIG_FILE
 * (~/.aws/config), else anonymous.  A profile named in AWS_PROFILE that
 * exists nowhere is an error.  Also fills *settings from the config file.
 */
int aws_creds_load(struct aws_creds **out, struct aws_profile_settings *settings);
void aws_creds_free(struct aws_creds *creds);
void aws_profile_settings_free(struct aws_profile_settings *settings);

/*
 * Find 'key' in section 'section' of INI text.  Returns 1 and the value as
 * a span of 'text' (so a secret is never copied out of its page), 0 if
 * absent; *section_found tells whether the section exists at all.
 */
int aws_ini_find(const char *text, size_t len, const char *section, const char *key,
		 const char **value, size_t *value_len, bool *section_found);

#endif
