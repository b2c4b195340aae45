/*
 * test_list.c - the parsers behind qs_source_list(), fed documents without
 * a server: S3 ListObjectsV2 pages, nginx's JSON directory listings, text
 * indexes; unsafe keys dropped, entities and escapes decoded, malformed
 * answers refused with -EIO and a message naming the document.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quash.h"
#include "source_list.h"

/* What the callback saw: "KEY|SIZE|MTIME|ETAG\n" per object. */
struct seen {
	char text[8192];
	size_t len;
	int stop_after;         /* return 7 from the callback at this object (1-based), or 0 */
	int count;
};

static int collect(void *arg, const struct qs_list_entry *ent)
{
	struct seen *s = arg;
	int n = ent->target ? snprintf(s->text + s->len, sizeof(s->text) - s->len, "%s->%s\n", ent->key, ent->target)
		: ent->root_hash ? snprintf(s->text + s->len, sizeof(s->text) - s->len, "%s|%" PRIu64 "|#%s\n",
					    ent->key, ent->size, ent->root_hash)
			    : snprintf(s->text + s->len, sizeof(s->text) - s->len, "%s|%" PRIu64 "|%" PRId64 "|%s\n",
				       ent->key, ent->size, ent->mtime, ent->etag);

	assert_true(n > 0 && (size_t)n < sizeof(s->text) - s->len);
	s->len += (size_t)n;
	return ++s->count == s->stop_after ? 7 : 0;
}

static struct list_run run_for(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	return (struct list_run){ .fn = collect, .arg = s, .where = "http://h/doc" };
}

static void test_key_safe(void **state)
{
	static const char *const good[] = { "a", "a/b", "a.sqfs", "..a", "a..", ".hidden/x", "x/...", "é/ü" };
	static const char *const bad[] = { "", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "../a", "a/..",
					   "a\tb", "a\nb", "a\x7f" };
	char longest[LIST_KEY_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(list_key_safe(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(list_key_safe(bad[i], strlen(bad[i])));
	assert_false(list_key_safe("a\0b", 3));
	memset(longest, 'k', sizeof(longest));
	assert_true(list_key_safe(longest, LIST_KEY_MAX));
	assert_false(list_key_safe(longest, LIST_KEY_MAX + 1));
}

static void test_xml_decode(void **state)
{
	char out[64];
	size_t n;
	static const char text[] = "a&amp;b&lt;&gt;&quot;&apos;&#65;&#x42;&#xe9;&#128512;";

	(void)state;
	assert_int_equal(list_xml_decode(text, strlen(text), out, sizeof(out), &n), 0);
	assert_string_equal(out, "a&b<>\"'AB\xc3\xa9\xf0\x9f\x98\x80");
	assert_int_equal(n, strlen(out));
	assert_int_equal(list_xml_decode("&#0;x", 5, out, sizeof(out), &n), 0);
	assert_int_equal(n, 2);                 /* a NUL inside: the key check drops it */
	assert_int_equal(list_xml_decode("abcdef", 6, out, 4, &n), 0);
	assert_int_equal(n, 6);
	assert_string_equal(out, "abc");
	assert_int_equal(list_xml_decode("a<b", 3, out, sizeof(out), &n), -1);
	assert_int_equal(list_xml_decode("&bogus;", 7, out, sizeof(out), &n), -1);
	assert_int_equal(list_xml_decode("&amp", 4, out, sizeof(out), &n), -1);
	assert_int_equal(list_xml_decode("&#xZZ;", 6, out, sizeof(out), &n), -1);
	assert_int_equal(list_xml_decode("&#;", 3, out, sizeof(out), &n), -1);
	assert_int_equal(list_xml_decode("&#x110000;", 10, out, sizeof(out), &n), -1);
	assert_int_equal(list_xml_decode("&#xd800;", 8, out, sizeof(out), &n), -1);
}

static void test_times(void **state)
{
	(void)state;
	assert_int_equal(list_time_iso8601("2026-12-04T05:55:26.000Z", 24), 1796363726);
	assert_int_equal(list_time_iso8601("2026-12-04T05:55:26Z", 20), 1796363726);
	assert_int_equal(list_time_iso8601("2026-12-04T06:55:26+01:00", 25), 1796363726);
	assert_int_equal(list_time_iso8601("2026-12-04T05:55:26", 19), 0);
	assert_int_equal(list_time_iso8601("yesterday", 9), 0);
	assert_int_equal(list_time_iso8601("2026-13-04T05:55:26Z", 20), 0);
	assert_int_equal(list_time_http("Fri, 04 Dec 2026 05:55:26 GMT", 29), 1796363726);
	assert_int_equal(list_time_http("Fri, 04 Dex 2026 05:55:26 GMT", 29), 0);
	assert_int_equal(list_time_http("Fri, 04 Dec 2026 05:55:26 GMT junk", 34), 0);
	assert_int_equal(list_time_http("", 0), 0);
}

#define S3_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix>cat/</Prefix>"
#define S3_OBJ(key, size) "<Contents><Key>" key "</Key><LastModified>2026-12-04T05:55:26.000Z</LastModified>" \
	"<ETag>&quot;0123abc&quot;</ETag><Size>" size "</Size><StorageClass>STANDARD</StorageClass></Contents>"

static int parse_s3(struct seen *s, const char *xml, bool *truncated, char *token)
{
	struct list_run run = run_for(s);

	return list_parse_s3(&run, xml, strlen(xml), "cat/", truncated, token);
}

static void test_s3_page(void **state)
{
	static const char page[] = S3_HEAD "<KeyCount>9</KeyCount><MaxKeys>200</MaxKeys><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>tok&amp;1/2</NextContinuationToken>"
		S3_OBJ("cat/a.sqfs", "123")
		S3_OBJ("cat/dir/b &amp; &lt;c&gt;&#233;.sqfs", "0")
		S3_OBJ("cat/", "0")
		S3_OBJ("cat/dir/", "0")
		S3_OBJ("cat/../evil", "1")
		S3_OBJ("cat/x/./y", "1")
		S3_OBJ("cat/ctl&#1;", "1")
		S3_OBJ("cat/nul&#0;x", "1")
		"<Contents><Key>cat/bare</Key></Contents>"
		"</ListBucketResult>";
	char token[LIST_TOKEN_MAX + 1];
	struct seen s;
	bool truncated;

	(void)state;
	assert_int_equal(parse_s3(&s, page, &truncated, token), 0);
	assert_string_equal(s.text, "a.sqfs|123|1796363726|0123abc\n"
			    "dir/b & <c>\xc3\xa9.sqfs|0|1796363726|0123abc\n"
			    "bare|0|0|\n");
	assert_true(truncated);
	assert_string_equal(token, "tok&1/2");

	assert_int_equal(parse_s3(&s, S3_HEAD "<IsTruncated>false</IsTruncated></ListBucketResult>", &truncated,
				  token), 0);
	assert_false(truncated);
	assert_int_equal(s.count, 0);
}

static void test_s3_malformed(void **state)
{
	static const char *const pages[] = {
		"<html>502 Bad Gateway</html>",
		S3_HEAD S3_OBJ("cat/a", "1") "<Contents><Key>cat/b</Key><Size>1",          /* cut short */
		S3_HEAD "<Contents><Key>cat/b</Key><Size>1</Size></ListBucketResult>",     /* open Contents */
		S3_HEAD S3_OBJ("cat/a", "12x") "</ListBucketResult>",
		S3_HEAD S3_OBJ("cat/a", "-1") "</ListBucketResult>",
		S3_HEAD S3_OBJ("cat/a", "99999999999999999999") "</ListBucketResult>",
		S3_HEAD S3_OBJ("other/a", "1") "</ListBucketResult>",                      /* outside the prefix */
		S3_HEAD "<Contents><Size>1</Size></Contents></ListBucketResult>",          /* no Key */
		S3_HEAD "<Contents><Key>cat/&nope;</Key></Contents></ListBucketResult>",
		S3_HEAD "<Contents><Key>cat/<![CDATA[x]]></Key></Contents></ListBucketResult>",
		S3_HEAD "<IsTruncated>true</IsTruncated></ListBucketResult>",              /* no token */
		S3_HEAD "<IsTruncated>yes</IsTruncated></ListBucketResult>",
	};
	char token[LIST_TOKEN_MAX + 1];
	struct seen s;
	bool truncated;

	(void)state;
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		assert_int_equal(parse_s3(&s, pages[i], &truncated, token), -EIO);
		assert_non_null(strstr(qs_last_error(), "http://h/doc: malformed ListObjectsV2 answer: "));
		assert_null(strchr(qs_last_error(), '\n'));
	}
}

static void test_callback_stops(void **state)
{
	static const char page[] = S3_HEAD S3_OBJ("cat/a", "1") S3_OBJ("cat/b", "2") S3_OBJ("cat/c", "3")
		"<IsTruncated>false</IsTruncated></ListBucketResult>";
	struct seen s;
	struct list_run run = run_for(&s);
	char token[LIST_TOKEN_MAX + 1];
	bool truncated;

	(void)state;
	s.stop_after = 2;
	assert_int_equal(list_parse_s3(&run, page, strlen(page), "cat/", &truncated, token), 7);
	assert_int_equal(s.count, 2);

	/* One object past the limit is an error, not a silent cut. */
	run = run_for(&s);
	run.entries = LIST_ENTRIES_MAX - 1;
	assert_int_equal(list_parse_s3(&run, page, strlen(page), "cat/", &truncated, token), -EIO);
	assert_int_equal(s.count, 1);
	assert_non_null(strstr(qs_last_error(), "more than 1000000 objects"));
}

static void test_autoindex(void **state)
{
	static const char doc[] =
		"[\n"
		"{ \"name\":\"sub\", \"type\":\"directory\", \"mtime\":\"Fri, 04 Dec 2026 05:55:26 GMT\" },\n"
		"{ \"name\":\"a.sqfs\", \"type\":\"file\", \"mtime\":\"Fri, 04 Dec 2026 05:55:26 GMT\", \"size\":4096 },\n"
		"{ \"name\":\"q\\\"b\\\\s\\u00e9\\ud83d\\ude00\\/x\", \"type\":\"file\", \"mtime\":\"bad\", \"size\":1 },\n"
		"{ \"name\":\"q\\\"b\\\\s\", \"type\":\"file\", \"mtime\":\"bad\", \"size\":1, \"extra\":[] }\n"
		"]\n";
	static const char doc2[] =
		"[{\"name\":\"..\",\"type\":\"directory\"},{\"name\":\".\",\"type\":\"file\",\"size\":1},"
		"{\"name\":\"nl\\nx\",\"type\":\"file\",\"size\":1},{\"name\":\"nul\\u0000\",\"type\":\"file\",\"size\":1},"
		"{\"name\":\"sock\",\"type\":\"other\",\"mtime\":\"x\"},{\"type\":\"file\",\"size\":1},"
		"{\"name\":\"ok\",\"type\":\"file\",\"size\":5,\"future\":true,\"n\":-1.5e3},"
		"{\"name\":\"d2\",\"type\":\"directory\"}]";
	static const char doc3[] = "[{\"name\":\"q\\\"b\\\\\\u00e9\\ud83d\\ude00\",\"type\":\"file\",\"size\":2}]";
	struct list_dirs dirs = { 0 };
	struct seen s;
	struct list_run run = run_for(&s);

	(void)state;
	/* The first document fails at its last entry (a nested value), after the others were seen. */
	assert_int_equal(list_parse_autoindex(&run, doc, strlen(doc), "top/", &dirs), -EIO);
	assert_string_equal(s.text, "top/a.sqfs|4096|1796363726|\n");
	assert_int_equal(dirs.n, 1);
	assert_string_equal(dirs.names[0], "top/sub/");
	list_dirs_free(&dirs);

	run = run_for(&s);
	assert_int_equal(list_parse_autoindex(&run, doc2, strlen(doc2), "", &dirs), 0);
	assert_string_equal(s.text, "ok|5|0|\n");
	assert_int_equal(dirs.n, 1);
	assert_string_equal(dirs.names[0], "d2/");
	list_dirs_free(&dirs);

	run = run_for(&s);
	assert_int_equal(list_parse_autoindex(&run, " [ ] \n", 6, "", &dirs), 0);
	assert_int_equal(dirs.n, 0);
	assert_int_equal(s.count, 0);

	/* A name with an escaped quote and backslash, and UTF-8 from \u escapes. */
	run = run_for(&s);
	assert_int_equal(list_parse_autoindex(&run, doc3, strlen(doc3), "", &dirs), 0);
	assert_string_equal(s.text, "q\"b\\\xc3\xa9\xf0\x9f\x98\x80|2|0|\n");
}

static void test_autoindex_malformed(void **state)
{
	static const char *const docs[] = {
		"<html><head><title>Index of /</title></head></html>",
		"[{\"name\":\"a\",\"type\":\"file\",\"size\":1}",                 /* no ']' */
		"[{\"name\":\"a\",\"type\":\"file\",\"size\":1},",
		"[{\"name\":\"a",
		"[{\"name\":\"a\\q\",\"type\":\"file\"}]",
		"[{\"name\":\"a\\ud800\",\"type\":\"file\"}]",                    /* lone surrogate */
		"[{\"name\":\"a\",\"type\":\"file\",\"size\":-1}]",
		"[{\"name\":\"a\",\"type\":\"file\",\"size\":1.5}]",
		"[{\"name\":\"a\" \"type\":\"file\"}]",
		"[{\"name\":\"a\tb\",\"type\":\"file\"}]",                        /* raw control character */
		"[] trailing",
		"{}",
		"",
	};
	struct list_dirs dirs = { 0 };
	struct seen s;

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct list_run run = run_for(&s);

		assert_int_equal(list_parse_autoindex(&run, docs[i], strlen(docs[i]), "", &dirs), -EIO);
		assert_non_null(strstr(qs_last_error(), "http://h/doc: not an nginx JSON directory listing"));
		list_dirs_free(&dirs);
	}
}

static void test_index(void **state)
{
	static const char doc[] = "# images\n\na.sqfs 123\r\n  sub/b.sqfs\t 7  \nc.sqfs\n#x 1\n../evil 1\n/abs\n"
				  "sub//x\nsub/./y\nlast.sqfs";
	struct seen s;
	struct list_run run = run_for(&s);

	(void)state;
	assert_int_equal(list_parse_index(&run, doc, strlen(doc)), 0);
	assert_string_equal(s.text, "a.sqfs|123|0|\nsub/b.sqfs|7|0|\nc.sqfs|0|0|\nlast.sqfs|0|0|\n");

	run = run_for(&s);
	assert_int_equal(list_parse_index(&run, "a 1\nb 12k\n", 10), -EIO);
	assert_string_equal(qs_last_error(), "http://h/doc: line 2: expected KEY [SIZE [ROOTHASH]], and the size is not a byte count");
	run = run_for(&s);
	assert_int_equal(list_parse_index(&run, "a 1 2\n", 6), -EIO);
	run = run_for(&s);
	assert_int_equal(list_parse_index(&run, "a\0b\n", 4), -EIO);
	assert_non_null(strstr(qs_last_error(), "NUL"));
	run = run_for(&s);
	assert_int_equal(list_parse_index(&run, "", 0), 0);
	assert_int_equal(s.count, 0);
}

/* "NAME -> TARGET" lines: aliases, unsafe ones skipped, half ones refused. */
static void test_index_alias(void **state)
{
	static const char doc[] = "py.sqfs 10\npython.sqfs -> py.sqfs\n  latest\t->\tsub/gcc.sqfs  \r\n"
				  "evil.sqfs -> ../x.sqfs\n../up -> py.sqfs\nsub/gcc.sqfs\n";
	struct seen s;
	struct list_run run = run_for(&s);

	(void)state;
	assert_int_equal(list_parse_index(&run, doc, strlen(doc)), 0);
	assert_string_equal(s.text, "py.sqfs|10|0|\npython.sqfs->py.sqfs\nlatest->sub/gcc.sqfs\nsub/gcc.sqfs|0|0|\n");

	run = run_for(&s);
	assert_int_equal(list_parse_index(&run, "a.sqfs 1\nb.sqfs ->\n", 19), -EIO);
	assert_string_equal(qs_last_error(), "http://h/doc: line 2: expected NAME -> TARGET, one key on each side");
	run = run_for(&s);
	assert_int_equal(list_parse_index(&run, "b -> a c\n", 9), -EIO);
	assert_int_equal(s.count, 0);
}

/* "KEY SIZE ROOTHASH": the root hash handed on; anything but hex digits refused naming the line. */
static void test_index_root_hash(void **state)
{
	static const char doc[] = "a.sqfs 10 00ff\nb.sqfs 20  A1b2C3d4 \nc.sqfs 30\n";
	struct seen s;
	struct list_run run = run_for(&s);

	(void)state;
	assert_int_equal(list_parse_index(&run, doc, strlen(doc)), 0);
	assert_string_equal(s.text, "a.sqfs|10|#00ff\nb.sqfs|20|#A1b2C3d4\nc.sqfs|30|0|\n");
	static const char *const bad[] = { "a 1 xyz\n", "a 1 abc\n", "a 1 00 ff\n", "a 1 0x00\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run = run_for(&s);
		assert_int_equal(list_parse_index(&run, bad[i], strlen(bad[i])), -EIO);
		assert_string_equal(qs_last_error(), "http://h/doc: line 1: expected KEY [SIZE [ROOTHASH]], and the root "
				    "hash is not one in hex");
	}
	char longest[200];
	memset(longest, 'a', sizeof(longest));
	snprintf(longest, sizeof(longest), "k 1 %0130d\n", 0);
	run = run_for(&s);
	assert_int_equal(list_parse_index(&run, longest, strlen(longest)), -EIO);
}

static void test_bad_spec(void **state)
{
	struct seen s;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(qs_source_list("/local/dir", NULL, collect, &s), -EINVAL);
	assert_int_equal(qs_source_list("ftp://u:pw@h/x?sig=1", NULL, collect, &s), -EINVAL);
	assert_null(strstr(qs_last_error(), "pw"));
	assert_null(strstr(qs_last_error(), "sig"));
	assert_int_equal(qs_source_list("s3://Bad_Bucket/", NULL, collect, &s), -EINVAL);
	assert_int_equal(qs_source_list("http://h/", &(struct qs_source_options){ .proxy = "socks5://p" },
					collect, &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_safe),
		cmocka_unit_test(test_xml_decode),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_s3_page),
		cmocka_unit_test(test_s3_malformed),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_autoindex),
		cmocka_unit_test(test_autoindex_malformed),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_index_alias),
		cmocka_unit_test(test_index_root_hash),
		cmocka_unit_test(test_bad_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
