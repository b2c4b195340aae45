/*
 * source_list.c - what a remote catalog holds: the objects under an S3
 * prefix, the files of an nginx directory tree, or the keys of a text index.
 *
 * Each answer is fetched whole through remote_call() (the proxy, SigV4,
 * retries, a deadline per request) and parsed here without a library: the
 * three formats are small, and their parsers only ever look inside the
 * buffer they were given.  Nothing a server sends is trusted: documents,
 * pages, requests, entries and key lengths are all bounded (source_list.h),
 * a malformed answer is -EIO naming the URL and the byte where it went
 * wrong, and a key that could escape the catalog's directory (".", "..",
 * a leading '/', control characters, NUL) is dropped before the caller
 * sees it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quash.h"
#include "source_list.h"
#include "source_remote.h"

#define LIST_FIELD_MAX 64       /* bytes kept of a JSON field name, a type or a date */

/* ---- keys and entries ------------------------------------------------------ */

bool list_key_safe(const char *key, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > LIST_KEY_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c < 0x20 || c == 0x7f)
			return false;           /* NUL included */
	}
	/* Every component non-empty and neither "." nor "..": no leading, trailing or double '/'. */
	for (size_t i = 0; i <= len; i++) {
		if (i < len && key[i] != '/')
			continue;
		if (i == start || (i - start == 1 && key[start] == '.') ||
		    (i - start == 2 && key[start] == '.' && key[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

/* Hand ent, its key (and target) copied out of the document, to run->fn. */
static int emit(struct list_run *run, struct qs_list_entry *ent, const char *key, size_t len,
		const char *target, size_t tlen)
{
	char copy[LIST_KEY_MAX + 1], tcopy[LIST_KEY_MAX + 1];

	if (!list_key_safe(key, len) || (target && !list_key_safe(target, tlen)))
		return 0;
	/* Parsers pass keys inside their documents: the caller gets strings of its own. */
	memcpy(copy, key, len);
	copy[len] = '\0';
	ent->key = copy;
	if (target) {
		memcpy(tcopy, target, tlen);
		tcopy[tlen] = '\0';
		ent->target = tcopy;
	}
	if (run->entries >= LIST_ENTRIES_MAX)
		return qs_set_error(-EIO, "%s: more than %u objects; a catalog this large is not supported",
				    run->where, LIST_ENTRIES_MAX);
	run->entries++;
	return run->fn(run->arg, ent);
}

/* One index object: a size, and a root hash (rlen hex digits, 0 for none). */
static int emit_indexed(struct list_run *run, const char *key, size_t len, uint64_t size, const char *root,
			size_t rlen)
{
	struct qs_list_entry ent = { .size = size, .etag = "" };
	char hex[LIST_ROOT_HASH_MAX + 1];

	if (rlen) {
		memcpy(hex, root, rlen);
		hex[rlen] = '\0';
		ent.root_hash = hex;
	}
	return emit(run, &ent, key, len, NULL, 0);
}

int list_emit(struct list_run *run, const char *key, size_t len, uint64_t size, int64_t mtime, const char *etag)
{
	struct qs_list_entry ent = { .size = size, .mtime = mtime, .etag = etag };

	return emit(run, &ent, key, len, NULL, 0);
}

int list_emit_alias(struct list_run *run, const char *key, size_t len, const char *target, size_t tlen)
{
	struct qs_list_entry ent = { .etag = "" };

	return emit(run, &ent, key, len, target, tlen);
}

/* ---- small parsers ----------------------------------------------------------- */

/* The UTF-8 bytes of code point cp into out (4 bytes); their number, or 0 if cp is not a character. */
static size_t utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp >= 0xd800 && cp < 0xe000)
		return 0;
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp > 0x10ffff)
		return 0;
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Append n bytes to out (cap bytes) at *len, keeping only what fits; *len counts them all. */
static void put_bytes(char *out, size_t cap, size_t *len, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++, (*len)++)
		if (*len + 1 < cap)
			out[*len] = b[i];
}

static void put_end(char *out, size_t cap, size_t len)
{
	out[len < cap ? len : cap - 1] = '\0';
}

/* An unsigned decimal number that is all of s[0, len): 0, or -1 if it is not one or overflows. */
static int parse_u64(const char *s, size_t len, uint64_t *v)
{
	*v = 0;
	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || *v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return 0;
}

/* The entity at s (just after '&') decoded into b; its length in s through ';', or 0 if malformed. */
static size_t xml_entity(const char *s, size_t len, char *b, size_t *blen)
{
	static const struct { const char *name; char c; } named[] = {
		{ "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' }, { "quot;", '"' }, { "apos;", '\'' },
	};
	const char *semi = memchr(s, ';', len < 12 ? len : 12);
	uint32_t cp = 0;
	bool hex;

	if (!semi)
		return 0;
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		size_t n = strlen(named[i].name);

		if ((size_t)(semi + 1 - s) == n && !memcmp(s, named[i].name, n)) {
			b[0] = named[i].c;
			*blen = 1;
			return n;
		}
	}
	if (s[0] != '#' || semi - s < 2)
		return 0;
	hex = s[1] == 'x';
	if (hex && semi - s < 3)
		return 0;
	for (const char *p = s + 1 + hex; p < semi; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (hex && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (hex && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			return 0;
		cp = cp * (hex ? 16 : 10) + d;
		if (cp > 0x10ffff)
			return 0;
	}
	*blen = utf8_put(cp, b);
	return *blen ? (size_t)(semi + 1 - s) : 0;
}

int list_xml_decode(const char *s, size_t len, char *out, size_t cap, size_t *out_len)
{
	size_t n = 0;

	for (size_t i = 0; i < len;) {
		char b[4];
		size_t blen = 1, used;

		if (s[i] == '<')
			return -1;
		if (s[i] != '&') {
			put_bytes(out, cap, &n, s + i++, 1);
			continue;
		}
		used = xml_entity(s + i + 1, len - i - 1, b, &blen);
		if (!used)
			return -1;
		put_bytes(out, cap, &n, b, blen);
		i += 1 + used;
	}
	put_end(out, cap, n);
	*out_len = n;
	return 0;
}

/* s[0, len) copied into buf as a string, or false if it does not fit. */
static bool copy_field(char *buf, size_t cap, const char *s, size_t len)
{
	if (len >= cap)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return true;
}

static int64_t epoch_of(int year, int mon, int day, int hour, int min, int sec)
{
	struct tm tm = { 0 };
	time_t t;

	if (year < 1970 || year > 9999 || mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 ||
	    sec > 60 || hour < 0 || min < 0 || sec < 0)
		return 0;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	t = timegm(&tm);
	return t == (time_t)-1 ? 0 : (int64_t)t;
}

int64_t list_time_iso8601(const char *s, size_t len)
{
	char buf[LIST_FIELD_MAX];
	int year, mon, day, hour, min, sec, n = 0, off_h, off_m;
	const char *p;
	int64_t t;

	if (!copy_field(buf, sizeof(buf), s, len) ||
	    sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &mon, &day, &hour, &min, &sec, &n) != 6 || !n)
		return 0;
	p = buf + n;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	t = epoch_of(year, mon, day, hour, min, sec);
	if (!strcmp(p, "Z"))
		return t;
	n = 0;
	if ((*p != '+' && *p != '-') || sscanf(p + 1, "%2d:%2d%n", &off_h, &off_m, &n) != 2 || p[1 + n] ||
	    off_h > 23 || off_m > 59 || !t)
		return 0;
	return t - (*p == '+' ? 1 : -1) * (int64_t)(off_h * 3600 + off_m * 60);
}

int64_t list_time_http(const char *s, size_t len)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char buf[LIST_FIELD_MAX], mon[4], wday[4];
	int year, day, hour, min, sec, n = 0;
	const char *m;

	if (!copy_field(buf, sizeof(buf), s, len) ||
	    sscanf(buf, "%3[A-Za-z], %2d %3[A-Za-z] %4d %2d:%2d:%2d GMT%n", wday, &day, mon, &year, &hour, &min,
		   &sec, &n) != 7 || !n || buf[n] || strlen(mon) != 3)
		return 0;
	m = strstr(months, mon);
	if (!m || (m - months) % 3)
		return 0;
	return epoch_of(year, (int)(m - months) / 3 + 1, day, hour, min, sec);
}

/* ---- S3: ListObjectsV2 pages ----------------------------------------------- */

/* An S3 page that is not one: the message names where it went wrong. */
static int xml_bad(const struct list_run *run, const char *xml, const char *at, const char *what)
{
	return qs_set_error(-EIO, "%s: malformed ListObjectsV2 answer: %s (at byte %zu)", run->where, what,
			    (size_t)(at - xml));
}

static const char *find(const char *s, const char *end, const char *what)
{
	return s < end ? memmem(s, (size_t)(end - s), what, strlen(what)) : NULL;
}

/*
 * The text of the first element <tag> in [s, end): 1 with *v and *vlen,
 * 0 if there is none, -1 if it does not close or holds markup.
 */
static int xml_element(const char *s, const char *end, const char *tag, const char **v, size_t *vlen)
{
	char open[40], close[40], empty[40];
	const char *a, *b;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	snprintf(empty, sizeof(empty), "<%s/>", tag);
	a = find(s, end, open);
	if (!a) {
		a = find(s, end, empty);
		*v = a;
		*vlen = 0;
		return a ? 1 : 0;
	}
	a += strlen(open);
	b = find(a, end, close);
	if (!b || memchr(a, '<', (size_t)(b - a)))
		return -1;
	*v = a;
	*vlen = (size_t)(b - a);
	return 1;
}

/* The ETag of an object as the caller gets it: decoded, without its quotes, "" if too long. */
static void s3_etag(const char *v, size_t vlen, char etag[LIST_ETAG_MAX + 1])
{
	size_t n;

	if (list_xml_decode(v, vlen, etag, LIST_ETAG_MAX + 1, &n) < 0 || n > LIST_ETAG_MAX) {
		etag[0] = '\0';
		return;
	}
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
		memmove(etag, etag + 1, n - 2);
		etag[n - 2] = '\0';
	}
}

/* One <Contents> element, [s, end) between its tags. */
static int s3_contents(struct list_run *run, const char *xml, const char *s, const char *end, const char *prefix)
{
	char key[2 * LIST_KEY_MAX + 2], etag[LIST_ETAG_MAX + 1] = "";
	size_t plen = strlen(prefix), vlen, klen;
	uint64_t size = 0;
	int64_t mtime = 0;
	const char *v;
	int found;

	found = xml_element(s, end, "Key", &v, &vlen);
	if (found <= 0 || list_xml_decode(v, vlen, key, sizeof(key), &klen) < 0)
		return xml_bad(run, xml, s, found ? "a Key that is not text" : "an object without a Key");
	if (klen >= sizeof(key))
		return 0;                       /* longer than any key S3 allows: skipped */
	if (klen < plen || memcmp(key, prefix, plen))
		return xml_bad(run, xml, v, "a key outside the prefix asked for");
	found = xml_element(s, end, "Size", &v, &vlen);
	if (found < 0 || (found && parse_u64(v, vlen, &size) < 0))
		return xml_bad(run, xml, v ? v : s, "a Size that is not a number");
	if (xml_element(s, end, "LastModified", &v, &vlen) > 0)
		mtime = list_time_iso8601(v, vlen);
	if (xml_element(s, end, "ETag", &v, &vlen) > 0)
		s3_etag(v, vlen, etag);
	return list_emit(run, key + plen, klen - plen, size, mtime, etag);
}

/* IsTruncated and NextContinuationToken of a page. */
static int s3_next(struct list_run *run, const char *xml, const char *s, const char *end, bool *truncated,
		   char token[LIST_TOKEN_MAX + 1])
{
	const char *v = NULL;
	size_t vlen = 0, n;
	int found = xml_element(s, end, "IsTruncated", &v, &vlen);

	if (found < 0 || (found && !(vlen == 4 && !memcmp(v, "true", 4)) && !(vlen == 5 && !memcmp(v, "false", 5))))
		return xml_bad(run, xml, v ? v : s, "IsTruncated is neither true nor false");
	*truncated = found && vlen == 4;
	token[0] = '\0';
	if (!*truncated)
		return 0;
	found = xml_element(s, end, "NextContinuationToken", &v, &vlen);
	if (found <= 0 || vlen == 0)
		return xml_bad(run, xml, s, "a truncated page without a NextContinuationToken");
	if (list_xml_decode(v, vlen, token, LIST_TOKEN_MAX + 1, &n) < 0 || n > LIST_TOKEN_MAX ||
	    strlen(token) != n)
		return xml_bad(run, xml, v, "a NextContinuationToken that is not a short text");
	return 0;
}

int list_parse_s3(struct list_run *run, const char *xml, size_t len, const char *prefix, bool *truncated,
		  char token[LIST_TOKEN_MAX + 1])
{
	const char *end = xml + len, *root = find(xml, end, "<ListBucketResult"), *p, *s, *e;
	int ret;

	*truncated = false;
	if (!root)
		return xml_bad(run, xml, xml, "no ListBucketResult element");
	end = find(root, end, "</ListBucketResult>");
	if (!end)
		return xml_bad(run, xml, xml + len, "it ends before </ListBucketResult>");
	for (p = root; (s = find(p, end, "<Contents>")) != NULL; p = e + strlen("</Contents>")) {
		s += strlen("<Contents>");
		e = find(s, end, "</Contents>");
		if (!e)
			return xml_bad(run, xml, s, "a Contents element that does not close");
		ret = s3_contents(run, xml, s, e, prefix);
		if (ret)
			return ret;
	}
	return s3_next(run, xml, root, end, truncated, token);
}

/* ---- nginx: autoindex_format json -------------------------------------------- */

/* A JSON document being read. */
struct json {
	struct list_run *run;
	const char *start, *p, *end;
};

static int json_bad(const struct json *j, const char *what)
{
	return qs_set_error(-EIO, "%s: not an nginx JSON directory listing (autoindex_format json): %s "
			    "(at byte %zu)", j->run->where, what, (size_t)(j->p - j->start));
}

static void json_ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
		j->p++;
}

static bool json_eat(struct json *j, char c)
{
	json_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

static int json_hex4(struct json *j, uint32_t *cp)
{
	*cp = 0;
	if (j->end - j->p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = *j->p++;

		*cp <<= 4;
		if (c >= '0' && c <= '9')
			*cp |= (uint32_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			*cp |= (uint32_t)((c | 0x20) - 'a' + 10);
		else
			return -1;
	}
	return 0;
}

/* A \u escape (after the 'u'), a surrogate pair joined: its UTF-8 bytes into b. */
static int json_unicode(struct json *j, char *b, size_t *blen)
{
	uint32_t cp, lo;

	if (json_hex4(j, &cp) < 0)
		return -1;
	if (cp >= 0xd800 && cp < 0xdc00) {
		if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
			return -1;
		j->p += 2;
		if (json_hex4(j, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
			return -1;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*blen = utf8_put(cp, b);
	return *blen ? 0 : -1;
}

/* A string decoded into out (cap bytes, NUL added); *len its whole length, past cap - 1 if cut. */
static int json_string(struct json *j, char *out, size_t cap, size_t *len)
{
	static const char escapes[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	size_t n = 0;

	if (!json_eat(j, '"'))
		return json_bad(j, "expected a string");
	while (j->p < j->end && *j->p != '"') {
		char c = *j->p++, b[4];
		size_t blen = 1;

		b[0] = c;
		if ((unsigned char)c < 0x20)
			return json_bad(j, "a control character in a string");
		if (c == '\\') {
			const char *e = j->p < j->end ? strchr(escapes, *j->p) : NULL;

			if (j->p < j->end && *j->p == 'u') {
				j->p++;
				if (json_unicode(j, b, &blen) < 0)
					return json_bad(j, "a \\u escape that is not a character");
			} else if (e && *j->p && (e - escapes) % 2 == 0) {
				b[0] = e[1];
				j->p++;
			} else {
				return json_bad(j, "an unknown escape");
			}
		}
		put_bytes(out, cap, &n, b, blen);
	}
	if (j->p >= j->end)
		return json_bad(j, "a string that does not end");
	j->p++;
	put_end(out, cap, n);
	*len = n;
	return 0;
}

/* A number; *v and *is_u64 when it is a non-negative integer that fits. */
static int json_number(struct json *j, uint64_t *v, bool *is_u64)
{
	const char *s;

	json_ws(j);
	s = j->p;
	if (j->p < j->end && *j->p == '-')
		j->p++;
	while (j->p < j->end && ((*j->p >= '0' && *j->p <= '9') || strchr(".eE+-", *j->p)) && *j->p)
		j->p++;
	if (j->p == s || (j->p == s + 1 && *s == '-'))
		return json_bad(j, "expected a value");
	*is_u64 = parse_u64(s, (size_t)(j->p - s), v) == 0;
	return 0;
}

/* A value of a field we do not use: a string, a number, true, false or null. */
static int json_skip_value(struct json *j)
{
	static const char *const words[] = { "true", "false", "null" };
	char scratch[LIST_FIELD_MAX];
	uint64_t v;
	size_t n;
	bool u;

	json_ws(j);
	if (j->p < j->end && *j->p == '"')
		return json_string(j, scratch, sizeof(scratch), &n);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		n = strlen(words[i]);
		if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, words[i], n)) {
			j->p += n;
			return 0;
		}
	}
	return json_number(j, &v, &u);
}

/* One entry of a listing, as read. */
struct autoindex_entry {
	char name[LIST_KEY_MAX + 1];
	size_t name_len;
	bool has_name;
	char type[LIST_FIELD_MAX];
	char mtime[LIST_FIELD_MAX];
	size_t mtime_len;
	uint64_t size;
};

/* One "field": value of an entry. */
static int autoindex_field(struct json *j, struct autoindex_entry *e)
{
	char field[LIST_FIELD_MAX];
	size_t flen, n;
	bool is_u64;
	int ret;

	ret = json_string(j, field, sizeof(field), &flen);
	if (ret < 0)
		return ret;
	if (!json_eat(j, ':'))
		return json_bad(j, "expected ':'");
	if (!strcmp(field, "name")) {
		e->has_name = true;
		return json_string(j, e->name, sizeof(e->name), &e->name_len);
	}
	if (!strcmp(field, "type"))
		return json_string(j, e->type, sizeof(e->type), &n);
	if (!strcmp(field, "mtime"))
		return json_string(j, e->mtime, sizeof(e->mtime), &e->mtime_len);
	if (!strcmp(field, "size")) {
		ret = json_number(j, &e->size, &is_u64);
		return ret < 0 || is_u64 ? ret : json_bad(j, "a size that is not a byte count");
	}
	return json_skip_value(j);
}

static int autoindex_add_dir(struct list_dirs *dirs, const char *dir, const char *name)
{
	char *key, **grown;

	if (dirs->n == dirs->cap) {
		size_t cap = dirs->cap ? 2 * dirs->cap : 16;

		grown = realloc(dirs->names, cap * sizeof(*grown));
		if (!grown)
			return qs_set_error(-ENOMEM, "out of memory");
		dirs->names = grown;
		dirs->cap = cap;
	}
	if (asprintf(&key, "%s%s/", dir, name) < 0)
		return qs_set_error(-ENOMEM, "out of memory");
	dirs->names[dirs->n++] = key;
	return 0;
}

/* What an entry read means: a file handed out, a directory remembered, anything else ignored. */
static int autoindex_use(struct list_run *run, const struct autoindex_entry *e, const char *dir,
			 struct list_dirs *dirs)
{
	size_t dlen = strlen(dir);
	char key[2 * LIST_KEY_MAX + 2];

	/* A name is one component: one holding '/' (or NUL, cut or empty) is not nginx's. */
	if (!e->has_name || e->name_len == 0 || e->name_len > LIST_KEY_MAX || memchr(e->name, '/', e->name_len) ||
	    strlen(e->name) != e->name_len || dlen + e->name_len > LIST_KEY_MAX ||
	    !list_key_safe(e->name, e->name_len))
		return 0;
	if (!strcmp(e->type, "directory"))
		/* Room for "/" and a name of at least one byte below it, or nothing there can be listed. */
		return dlen + e->name_len + 2 > LIST_KEY_MAX ? 0 : autoindex_add_dir(dirs, dir, e->name);
	if (strcmp(e->type, "file"))
		return 0;
	memcpy(key, dir, dlen);
	memcpy(key + dlen, e->name, e->name_len);
	return list_emit(run, key, dlen + e->name_len, e->size, list_time_http(e->mtime, e->mtime_len), "");
}

static int autoindex_entry(struct json *j, const char *dir, struct list_dirs *dirs)
{
	struct autoindex_entry *e = calloc(1, sizeof(*e));
	int ret = 0;

	if (!e)
		return qs_set_error(-ENOMEM, "out of memory");
	if (!json_eat(j, '{')) {
		ret = json_bad(j, "expected an object");
	} else if (!json_eat(j, '}')) {
		do
			ret = autoindex_field(j, e);
		while (!ret && json_eat(j, ','));
		if (!ret && !json_eat(j, '}'))
			ret = json_bad(j, "expected ',' or '}'");
	}
	if (!ret)
		ret = autoindex_use(j->run, e, dir, dirs);
	free(e);
	return ret;
}

int list_parse_autoindex(struct list_run *run, const char *json, size_t len, const char *dir,
			 struct list_dirs *dirs)
{
	struct json j = { run, json, json, json + len };
	int ret = 0;

	json_ws(&j);
	if (j.p < j.end && *j.p == '<')
		return json_bad(&j, "an HTML page (nginx's default autoindex_format html)");
	if (!json_eat(&j, '['))
		return json_bad(&j, "expected '['");
	if (!json_eat(&j, ']')) {
		do
			ret = autoindex_entry(&j, dir, dirs);
		while (!ret && json_eat(&j, ','));
		if (ret)
			return ret;
		if (!json_eat(&j, ']'))
			return json_bad(&j, "expected ',' or ']'");
	}
	json_ws(&j);
	return j.p == j.end ? 0 : json_bad(&j, "more after the closing ']'");
}

void list_dirs_free(struct list_dirs *dirs)
{
	for (size_t i = 0; i < dirs->n; i++)
		free(dirs->names[i]);
	free(dirs->names);
	memset(dirs, 0, sizeof(*dirs));
}

/* ---- text index ---------------------------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The next blank-separated word of [*s, e): its start, with *s past it and *len its length; NULL at the end. */
static const char *index_word(const char **s, const char *e, size_t *len)
{
	const char *w = *s;

	while (w < e && is_blank(*w))
		w++;
	if (w == e)
		return NULL;
	for (*s = w; *s < e && !is_blank(**s); (*s)++)
		;
	*len = (size_t)(*s - w);
	return w;
}

/* Is [s, s + len) a root hash: an even number of hex digits, at most LIST_ROOT_HASH_MAX? */
static bool root_hash_ok(const char *s, size_t len)
{
	if (len < 2 || len > LIST_ROOT_HASH_MAX || len % 2)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/*
 * One line without its end: "KEY", "KEY SIZE", "KEY SIZE ROOTHASH" or
 * "NAME -> TARGET" with blanks between the words; '#' starts a comment line.
 */
static int index_line(struct list_run *run, const char *s, const char *e, unsigned long line)
{
	const char *key, *second, *target, *root = NULL;
	size_t klen, slen, tlen, rlen = 0;
	uint64_t size = 0;

	while (e > s && e[-1] == '\r')
		e--;
	key = index_word(&s, e, &klen);
	if (!key || *key == '#')
		return 0;
	second = index_word(&s, e, &slen);
	if (second && slen == 2 && memcmp(second, "->", 2) == 0) {
		target = index_word(&s, e, &tlen);
		if (!target || index_word(&s, e, &slen))
			return qs_set_error(-EIO, "%s: line %lu: expected NAME -> TARGET, one key on each side",
					    run->where, line);
		return list_emit_alias(run, key, klen, target, tlen);
	}
	if (second && parse_u64(second, slen, &size) < 0)
		return qs_set_error(-EIO, "%s: line %lu: expected KEY [SIZE [ROOTHASH]], and the size is not a byte count",
				    run->where, line);
	if (second && (root = index_word(&s, e, &rlen)) && (!root_hash_ok(root, rlen) || index_word(&s, e, &tlen)))
		return qs_set_error(-EIO, "%s: line %lu: expected KEY [SIZE [ROOTHASH]], and the root hash is not "
				    "one in hex", run->where, line);
	return emit_indexed(run, key, klen, size, root, rlen);
}

int list_parse_index(struct list_run *run, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	unsigned long line = 0;
	int ret;

	if (memchr(text, '\0', len))
		return qs_set_error(-EIO, "%s: not a text index (it holds NUL bytes)", run->where);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;

		ret = index_line(run, p, e, ++line);
		if (ret)
			return ret;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* ---- fetching ------------------------------------------------------------------------ */

/*
 * GET t's URL (plus "?query"), at most 'max' bytes: 0 with the answer in
 * *reply (body never NULL), or -errno with a message naming t.
 */
static int list_get(struct list_run *run, struct remote_target *t, const char *query, size_t max,
		    unsigned retry_seconds, struct remote_reply *reply)
{
	char why[256];
	int ret;

	if (run->requests >= LIST_REQUESTS_MAX)
		return qs_set_error(-EIO, "%s: more than %u requests for one listing; giving up", t->name,
				    LIST_REQUESTS_MAX);
	run->requests++;
	t->reply_max = max;
	ret = remote_call(t, "GET", query, NULL, 0, retry_seconds, reply);
	if (ret < 0) {
		snprintf(why, sizeof(why), "%s", qs_last_error());
		return qs_set_error(ret, "%s: %s", t->name, why);
	}
	if (reply->cut)
		return qs_set_error(-EIO, "%s: answer longer than %zu MiB; not a listing this tool reads",
				    t->name, max >> 20);
	run->bytes += reply->body_len;
	if (run->bytes > LIST_BYTES_MAX)
		return qs_set_error(-EIO, "%s: more than %llu MiB of listings; giving up", t->name,
				    (unsigned long long)(LIST_BYTES_MAX >> 20));
	if (!reply->body) {
		reply->body = strdup("");
		if (!reply->body)
			return qs_set_error(-ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- S3 ------------------------------------------------------------------------------- */

/* "&name=value" (no '&' first), value percent-encoded as SigV4 wants a query: '/' too. */
static int query_add(char **q, const char *name, const char *value)
{
	size_t have = *q ? strlen(*q) : 0;
	char *out = realloc(*q, have + strlen(name) + 3);

	if (!out)
		return qs_set_error(-ENOMEM, "out of memory");
	snprintf(out + have, strlen(name) + 3, "%s%s=", have ? "&" : "", name);
	*q = out;
	if (remote_append_escaped(q, value, false) < 0)
		return qs_set_error(-ENOMEM, "out of memory");
	return 0;
}

/* A page's query: parameters in the sorted order of SigV4's canonical query (curl 7.88 does not sort). */
static int s3_query(const char *token, const char *prefix, char **q)
{
	char keys[16];
	int ret = 0;

	*q = NULL;
	snprintf(keys, sizeof(keys), "%d", LIST_S3_PAGE_KEYS);
	if (token[0])
		ret = query_add(q, "continuation-token", token);
	if (!ret)
		ret = query_add(q, "list-type", "2");
	if (!ret)
		ret = query_add(q, "max-keys", keys);
	if (!ret && prefix[0])
		ret = query_add(q, "prefix", prefix);
	if (ret) {
		free(*q);
		*q = NULL;
	}
	return ret;
}

/* Every page under 'prefix' (a PREFIX/ or ""). */
static int s3_pages(struct list_run *run, struct remote_target *t, const char *prefix, unsigned retry_seconds)
{
	char *token = calloc(2, LIST_TOKEN_MAX + 1), *next = token + LIST_TOKEN_MAX + 1, *query;
	struct remote_reply reply;
	bool truncated = true;
	int ret = 0;

	if (!token)
		return qs_set_error(-ENOMEM, "out of memory");
	run->where = t->name;
	while (!ret && truncated) {
		ret = s3_query(token, prefix, &query);
		if (ret)
			break;
		ret = list_get(run, t, query, LIST_S3_PAGE_MAX, retry_seconds, &reply);
		free(query);
		if (!ret)
			ret = list_parse_s3(run, reply.body, reply.body_len, prefix, &truncated, next);
		remote_reply_clear(&reply);
		if (!ret && truncated && !strcmp(next, token))
			ret = qs_set_error(-EIO, "%s: the server sends the same continuation token again; "
					   "its listing would never end", t->name);
		memcpy(token, next, LIST_TOKEN_MAX + 1);
	}
	free(token);
	return ret;
}

static int list_s3(struct list_run *run, const char *spec, const struct qs_source_options *opt)
{
	struct remote_target t;
	const char *given;
	char *prefix = NULL, why[256];
	size_t plen;
	int ret;

	ret = s3_bucket_target(spec, opt, &t, &given);
	if (ret == 0 && opt->proxy)
		ret = remote_set_proxy(&t, opt->proxy);
	if (ret < 0) {
		snprintf(why, sizeof(why), "%s", qs_last_error());
		remote_target_clear(&t);
		return qs_set_error(ret, "%s: %s", spec, why);
	}
	/* "s3://b/imgs" lists imgs/..., not imgs-old/...: the keys are paths below it. */
	plen = strlen(given);
	if (plen > LIST_KEY_MAX)
		ret = qs_set_error(-EINVAL, "%s: prefix longer than %d bytes", spec, LIST_KEY_MAX);
	else if (asprintf(&prefix, "%s%s", given, plen && given[plen - 1] != '/' ? "/" : "") < 0)
		ret = qs_set_error(-ENOMEM, "out of memory");
	if (!ret)
		ret = s3_pages(run, &t, prefix, opt->retry_seconds);
	free(prefix);
	remote_target_clear(&t);
	return ret;
}

/* ---- HTTP ------------------------------------------------------------------------------ */

/* A directory tree or index being listed. */
struct http_list {
	struct list_run *run;
	struct remote_target t;
	char *base;                 /* the spec up to its query: the listed directory's URL, or the index's */
	char *query;                /* what followed '?', sent again with every request, or NULL */
	unsigned retry_seconds;
};

/* Point h->t at base + the encoded 'dir'. */
static int http_aim(struct http_list *h, const char *dir)
{
	free(h->t.url);
	free(h->t.name);
	h->t.name = NULL;
	h->t.url = strdup(h->base);
	if (!h->t.url || remote_append_encoded(&h->t.url, dir) < 0 || !(h->t.name = remote_display_name(h->t.url)))
		return qs_set_error(-ENOMEM, "out of memory");
	h->run->where = h->t.name;
	return 0;
}

/* The directory 'dir' ("" or "a/b/") and, depth first, those below it. */
static int http_dir(struct http_list *h, const char *dir, unsigned depth)
{
	struct list_dirs dirs = { 0 };
	struct remote_reply reply = { 0 };
	int ret;

	ret = http_aim(h, dir);
	if (!ret)
		ret = list_get(h->run, &h->t, h->query, LIST_DOCUMENT_MAX, h->retry_seconds, &reply);
	if (!ret)
		ret = list_parse_autoindex(h->run, reply.body, reply.body_len, dir, &dirs);
	remote_reply_clear(&reply);
	for (size_t i = 0; i < dirs.n && !ret; i++) {
		if (depth >= LIST_DEPTH_MAX) {
			char *shown = remote_display_name(h->base);

			ret = qs_set_error(-EIO, "%s%s: directories nested deeper than %d (a symlink loop?)",
					   shown ? shown : "", dirs.names[i], LIST_DEPTH_MAX);
			free(shown);
		} else {
			ret = http_dir(h, dirs.names[i], depth + 1);
		}
	}
	list_dirs_free(&dirs);
	return ret;
}

static int http_index(struct http_list *h)
{
	struct remote_reply reply = { 0 };
	int ret;

	ret = http_aim(h, "");
	if (!ret)
		ret = list_get(h->run, &h->t, h->query, LIST_DOCUMENT_MAX, h->retry_seconds, &reply);
	if (!ret)
		ret = list_parse_index(h->run, reply.body, reply.body_len);
	remote_reply_clear(&reply);
	return ret;
}

static int list_http(struct list_run *run, const char *spec, const struct qs_source_options *opt)
{
	struct http_list h = { .run = run, .retry_seconds = opt->retry_seconds };
	size_t path_len = strcspn(spec, "?#");
	char *shown, why[256];
	int ret = 0;

	h.base = strndup(spec, path_len);
	/* A fragment is never sent; remote_call() adds the '?' itself. */
	if (spec[path_len] == '?')
		h.query = strndup(spec + path_len + 1, strcspn(spec + path_len + 1, "#"));
	if (!h.base || (spec[path_len] == '?' && !h.query))
		ret = qs_set_error(-ENOMEM, "out of memory");
	if (!ret && opt->proxy && (ret = remote_set_proxy(&h.t, opt->proxy)) < 0) {
		snprintf(why, sizeof(why), "%s", qs_last_error());
		shown = remote_display_name(spec);
		qs_set_error(ret, "%s: %s", shown ? shown : "catalog", why);
		free(shown);
	}
	if (!ret)
		ret = path_len && spec[path_len - 1] == '/' ? http_dir(&h, "", 0) : http_index(&h);
	remote_target_clear(&h.t);
	free(h.base);
	free(h.query);
	return ret;
}

int qs_source_list(const char *spec, const struct qs_source_options *opt, qs_list_fn fn, void *arg)
{
	static const struct qs_source_options defaults;
	struct list_run run = { .fn = fn, .arg = arg, .where = "catalog" };
	char *shown;

	if (!opt)
		opt = &defaults;
	if (!strncmp(spec, "s3://", 5))
		return list_s3(&run, spec, opt);
	if (!strncmp(spec, "http://", 7) || !strncmp(spec, "https://", 8))
		return list_http(&run, spec, opt);
	shown = remote_display_name(spec);
	qs_set_error(-EINVAL, "%s: expected s3://BUCKET/PREFIX/, http(s)://HOST/DIR/ or http(s)://HOST/INDEX",
		     shown ? shown : "catalog");
	free(shown);
	return -EINVAL;
}
