/*
 * exclude.c - matching excludes (exclude.h): shared by the directory walk,
 * its system-call pool and the archive reader.
 */
#include <fnmatch.h>
#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <string.h>

#include "exclude.h"
#include "scan.h"

/*
 * Does one pattern match 'relpath' or a directory above it?  A directory
 * scan never descends into an excluded directory, but an archive lists
 * "a/b/file" after "a/" and would bring "a" back as an implied directory:
 * so what lies below an excluded directory is excluded with it.
 */
static bool pattern_excludes(const char *p, const char *relpath)
{
	char prefix[PATH_MAX];
	size_t len = strlen(relpath);
	const char *name = relpath;

	if (len >= sizeof(prefix))
		return false;
	if (strchr(p, '/')) {
		memcpy(prefix, relpath, len + 1);
		for (;;) {
			char *slash;

			if (fnmatch(p[0] == '/' ? p + 1 : p, prefix, FNM_PATHNAME) == 0)
				return true;
			slash = strrchr(prefix, '/');
			if (!slash)
				return false;
			*slash = '\0';
		}
	}
	for (;;) {
		size_t n = strcspn(name, "/");

		memcpy(prefix, name, n);
		prefix[n] = '\0';
		if (fnmatch(p, prefix, 0) == 0)
			return true;
		if (!name[n])
			return false;
		name += n + 1;
	}
}

/*
 * Compiled pattern parts, by where they lie in the option strings (which
 * live as long as the pack): a part is compiled once, not once per name.
 */
#define REGEX_CACHE_SLOTS 64

struct regex_slot {
	const char *part;
	size_t len;
	bool ok;
	regex_t re;
};

static __thread struct regex_slot regex_cache[REGEX_CACHE_SLOTS];

static const regex_t *regex_part(const char *part, size_t len)
{
	struct regex_slot *s = &regex_cache[((uintptr_t)part >> 3 ^ len) % REGEX_CACHE_SLOTS];
	char pat[PATH_MAX];

	if (s->part == part && s->len == len)
		return s->ok ? &s->re : NULL;
	if (s->part && s->ok)
		regfree(&s->re);
	s->part = part;
	s->len = len;
	s->ok = false;
	if (len < sizeof(pat)) {
		memcpy(pat, part, len);
		pat[len] = '\0';
		s->ok = regcomp(&s->re, pat, REG_EXTENDED | REG_NOSUB) == 0;
	}
	return s->ok ? &s->re : NULL;       /* a bad one was refused when the options were read */
}

void scan_excluded_forget(void)
{
	for (size_t i = 0; i < REGEX_CACHE_SLOTS; i++) {
		if (regex_cache[i].part && regex_cache[i].ok)
			regfree(&regex_cache[i].re);
		regex_cache[i].part = NULL;
	}
}

/* Does the regex part [re, re + re_len) match 'name' (len bytes), anywhere in it? */
static bool regex_matches(const char *re, size_t re_len, const char *name, size_t len)
{
	const regex_t *r = regex_part(re, re_len);
	char str[NAME_MAX + 1];

	if (!r || len >= sizeof(str))
		return false;
	memcpy(str, name, len);
	str[len] = '\0';
	return regexec(r, str, 0, NULL, 0) == 0;
}

/*
 * mksquashfs -regex: the pattern's parts against the path's first names,
 * part by part (what lies below a match goes with it); a pattern of one
 * part without a leading '/' against every name of the path.
 */
static bool regex_excludes(const char *p, const char *relpath)
{
	bool anywhere = p[0] != '/';
	const char *name = relpath;

	p += strspn(p, "/");
	for (;;) {
		size_t plen = strcspn(p, "/"), n = strcspn(name, "/");
		bool match = regex_matches(p, plen, name, n);

		if (anywhere) {
			if (match)
				return true;
		} else {
			if (!match)
				return false;
			p += plen;
			p += strspn(p, "/");
			if (!*p)
				return true;
		}
		if (!name[n])
			return false;
		name += n + 1;
	}
}

bool scan_excluded(const struct scan_options *o, const char *relpath)
{
	for (size_t i = 0; i < o->exclude_count; i++)
		if (o->exclude_regex ? regex_excludes(o->excludes[i], relpath)
				     : pattern_excludes(o->excludes[i], relpath))
			return true;
	return false;
}
