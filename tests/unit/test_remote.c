/*
 * test_remote.c - the parts of the remote sources that need no server:
 * INI lookup for AWS files, S3 URLs and key encoding, names without
 * secrets, the persistent cache directory, and the memory bound chunk
 * caches share (over an in-memory fetcher).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>

#include "aws_auth.h"
#include "chunk_cache.h"
#include "disk_cache.h"
#include "quash.h"
#include "source_remote.h"

static void expect_ini(const char *text, const char *section, const char *key, const char *want)
{
	const char *v;
	size_t n;
	bool found;
	int ret = aws_ini_find(text, strlen(text), section, key, &v, &n, &found);

	if (!want) {
		assert_int_equal(ret, 0);
		return;
	}
	assert_int_equal(ret, 1);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(v, want, n);
}

static void test_ini(void **state)
{
	const char *text = "# comment\n[default]\naws_access_key_id = AKIA1\r\n"
			   "aws_secret_access_key=s3cr3t \n\n[ profile ci ]\n; other\nregion\t=  eu-west-1\n"
			   "[broken\nregion = no\n";
	const char *v;
	size_t n;
	bool found;

	(void)state;
	expect_ini(text, "default", "aws_access_key_id", "AKIA1");
	expect_ini(text, "default", "aws_secret_access_key", "s3cr3t");
	expect_ini(text, "profile ci", "region", "eu-west-1");
	expect_ini(text, "profile ci", "aws_access_key_id", NULL);
	expect_ini(text, "default", "region", NULL);
	assert_int_equal(aws_ini_find(text, strlen(text), "nosuch", "region", &v, &n, &found), 0);
	assert_false(found);
	assert_int_equal(aws_ini_find(text, strlen(text), "profile ci", "x", &v, &n, &found), 0);
	assert_true(found);
}

static void test_display_name(void **state)
{
	char *n;

	(void)state;
	n = remote_display_name("https://user:pw@example.com:8443/a/b.sqfs?X-Amz-Signature=abc#frag");
	assert_string_equal(n, "https://example.com:8443/a/b.sqfs");
	free(n);
	n = remote_display_name("http://example.com/x@y/z");
	assert_string_equal(n, "http://example.com/x@y/z");
	free(n);
}

/* The persistent cache's key: the object's name without what only authorises the request. */
static void test_cache_key(void **state)
{
	static const char *const cases[][2] = {
		{ "https://u:pw@h:8443/a.sqfs?v=1#frag", "https://h:8443/a.sqfs?v=1" },
		{ "https://h/a.sqfs?v=2", "https://h/a.sqfs?v=2" },
		{ "https://h/a.sqfs", "https://h/a.sqfs" },
		{ "https://h/a.sqfs?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261203&"
		  "X-Amz-Date=20261203T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
		  "X-Amz-Signature=0123abcd&versionId=7", "https://h/a.sqfs?versionId=7" },
		{ "https://h/a.sqfs?AWSAccessKeyId=AKIA&Expires=1&Signature=abc", "https://h/a.sqfs" },
		{ "https://h/a.sqfs?sv=2022&sig=xyz&se=2026&sp=r&tag=b", "https://h/a.sqfs?tag=b" },
		{ "https://h/a.sqfs?&&x-goog-signature=1&&b=2&", "https://h/a.sqfs?b=2" },
		{ "https://h/a.sqfs?signatures=keep", "https://h/a.sqfs?signatures=keep" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *k = remote_cache_key(cases[i][0]);

		assert_non_null(k);
		assert_string_equal(k, cases[i][1]);
		free(k);
	}
}

static void test_encode(void **state)
{
	char *s = strdup("http://h/b");

	(void)state;
	assert_int_equal(remote_append_encoded(&s, "/dir/a b+c=d~e_f.-%\xc3\xa9"), 0);
	assert_string_equal(s, "http://h/b/dir/a%20b%2Bc%3Dd~e_f.-%25%C3%A9");
	free(s);
}

static void test_s3_target(void **state)
{
	struct qs_source_options opt = { 0 };
	struct remote_target t;

	(void)state;
	setenv("HOME", "/nonexistent", 1);
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_DEFAULT_REGION");
	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_REGION", "eu-central-1", 1);

	assert_int_equal(s3_target("s3://my-bucket/k/x y", &opt, &t), 0);
	assert_string_equal(t.url, "https://my-bucket.s3.eu-central-1.amazonaws.com/k/x%20y");
	assert_string_equal(t.sigv4, "aws:amz:eu-central-1:s3");
	assert_string_equal(t.name, "s3://my-bucket/k/x y");
	assert_null(t.creds->access_key);
	remote_target_clear(&t);

	opt.endpoint = "http://127.0.0.1:9000/";
	opt.region = "r1";
	setenv("AWS_ACCESS_KEY_ID", "id", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	assert_int_equal(s3_target("s3://b.with.dots/key", &opt, &t), 0);
	assert_string_equal(t.url, "http://127.0.0.1:9000/b.with.dots/key");
	assert_string_equal(t.sigv4, "aws:amz:r1:s3");
	assert_string_equal(t.creds->access_key, "id");
	assert_string_equal(t.creds->secret_key, "secret");
	remote_target_clear(&t);

	assert_int_equal(s3_target("s3://bucket", &opt, &t), -EINVAL);
	assert_int_equal(s3_target("s3://Bad_Bucket/k", &opt, &t), -EINVAL);
	assert_int_equal(s3_target("s3://ab/k", &opt, &t), -EINVAL);
	setenv("AWS_PROFILE", "missing", 1);
	unsetenv("AWS_ACCESS_KEY_ID");
	assert_int_equal(s3_target("s3://bucket/k", &opt, &t), -ENOENT);
	unsetenv("AWS_PROFILE");
}

static void test_disk_cache(void **state)
{
	char dir[] = "/tmp/quash-test-diskcache-XXXXXX", buf[5000], data[5000];
	struct disk_cache *a, *b;
	uint64_t size;
	char *identity, *root;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(data, 'x', sizeof(data));
	assert_int_equal(disk_cache_open(dir, 0, "http://h/i:5000:\"e1\"", 65536, &a), 0);
	assert_int_equal(disk_cache_open(dir, 0, "http://h/i:5000:\"e2\"", 65536, &b), 0);
	assert_int_equal(disk_cache_get(a, 0, buf, sizeof(buf)), -ENOENT);
	disk_cache_put(a, 0, data, sizeof(data));
	assert_int_equal(disk_cache_get(a, 0, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, data, sizeof(data));
	/* Another ETag, another length, another index: misses, never a's bytes. */
	assert_int_equal(disk_cache_get(b, 0, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(disk_cache_get(a, 0, buf, 4000), -ENOENT);
	assert_int_equal(disk_cache_get(a, 1, buf, sizeof(buf)), -ENOENT);
	disk_cache_close(a);
	disk_cache_close(b);

	/*
	 * Ranges (a replay's pieces): found only as the very range, never as a
	 * chunk, nor across ETags.  The range (0, 65536) and chunk 0 of 65536
	 * bytes are the same bytes, and still two keys.
	 */
	assert_int_equal(disk_cache_open(dir, 0, "http://h/i:5000:\"e1\"", 65536, &a), 0);
	assert_int_equal(disk_cache_open(dir, 0, "http://h/i:5000:\"e2\"", 65536, &b), 0);
	assert_int_equal(disk_cache_get_range(a, 100, buf, 3000), -ENOENT);
	assert_false(disk_cache_has_range(a, 100, 3000));
	disk_cache_put_range(a, 100, data, 3000);
	assert_true(disk_cache_has_range(a, 100, 3000));
	assert_false(disk_cache_has_range(a, 100, 2999));
	assert_false(disk_cache_has_range(b, 100, 3000));
	memset(buf, 0, sizeof(buf));
	assert_int_equal(disk_cache_get_range(a, 100, buf, 3000), 0);
	assert_memory_equal(buf, data, 3000);
	assert_int_equal(disk_cache_get_range(a, 100, buf, 2999), -ENOENT);
	assert_int_equal(disk_cache_get_range(a, 101, buf, 3000), -ENOENT);
	assert_int_equal(disk_cache_get_range(b, 100, buf, 3000), -ENOENT);
	assert_int_equal(disk_cache_get_range(a, 0, buf, sizeof(buf)), -ENOENT);     /* chunk 0's bytes */
	disk_cache_put_range(b, 0, data, 2000);
	assert_int_equal(disk_cache_get(b, 0, buf, 2000), -ENOENT);
	disk_cache_close(a);
	disk_cache_close(b);

	assert_int_equal(disk_cache_load_object(dir, "http://h/i", &size, &identity, NULL), -ENOENT);
	assert_int_equal(disk_cache_save_object(dir, "http://h/i", 5000, "http://h/i:5000:\"e1\"", NULL), 0);
	assert_int_equal(disk_cache_load_object(dir, "http://h/i", &size, &identity, &root), 0);
	assert_int_equal(size, 5000);
	assert_string_equal(identity, "http://h/i:5000:\"e1\"");
	assert_null(root);
	free(identity);
	assert_int_equal(disk_cache_save_object(dir, "http://h/i", 5000, "http://h/i:5000:\"e1\"", "ab12"), 0);
	assert_int_equal(disk_cache_load_object(dir, "http://h/i", &size, &identity, &root), 0);
	assert_string_equal(root, "ab12");
	free(identity);
	free(root);
	assert_int_equal(system("rm -rf /tmp/quash-test-diskcache-*"), 0);
}

/* Past its limit the directory drops the least recently used chunks. */
static void test_disk_cache_eviction(void **state)
{
	char dir[] = "/tmp/quash-test-diskevict-XXXXXX";
	size_t len = 4 << 20;
	char *data = calloc(1, len), *buf = malloc(len);
	struct disk_cache *dc;
	unsigned i, present = 0;
	bool ok;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(disk_cache_open(dir, 64ull << 20, "id", len, &dc), 0);
	for (i = 0; i < 24; i++) {
		disk_cache_put(dc, i, data, len);
		assert_int_equal(disk_cache_get(dc, 0, buf, len), 0);    /* chunk 0 stays in use */
	}
	for (i = 0; i < 24; i++)
		present += disk_cache_get(dc, i, buf, len) == 0;
	ok = present < 24 && present >= 8 && disk_cache_get(dc, 0, buf, len) == 0 &&
	     disk_cache_get(dc, 23, buf, len) == 0;
	disk_cache_close(dc);
	free(data);
	free(buf);
	assert_true(ok);
	assert_int_equal(system("rm -rf /tmp/quash-test-diskevict-*"), 0);
}

/* ---- a shared memory budget --------------------------------------------- */

#define BUDGET_OBJECT   (1u << 20)
#define BUDGET_CHUNK    CHUNK_MIN_SIZE
#define BUDGET_LIMIT    (4 * BUDGET_CHUNK)
#define BUDGET_SOURCES  3

/* Byte i of object 'tag' is a function of both: a wrong chunk shows. */
static uint8_t budget_byte(uintptr_t tag, uint64_t i)
{
	return (uint8_t)(i * 31 + (i >> 11) + tag * 101);
}

static int budget_fetch(void *ctx, const struct iovec *iov, int iovcnt, uint64_t off)
{
	for (int k = 0; k < iovcnt; k++)
		for (size_t i = 0; i < iov[k].iov_len; i++)
			((uint8_t *)iov[k].iov_base)[i] = budget_byte((uintptr_t)ctx, off++);
	return 0;
}

static void budget_close(void *ctx)
{
	(void)ctx;
}

static void budget_open(struct qs_memory_budget *b, struct qs_source **src)
{
	struct qs_source_options opt = { .chunk_size = BUDGET_CHUNK, .memory_cache = 64 * BUDGET_CHUNK,
					 .memory_budget = b };

	for (uintptr_t s = 0; s < BUDGET_SOURCES; s++) {
		struct chunk_fetcher f = { .fetch = budget_fetch, .close = budget_close, .ctx = (void *)s };
		char name[32];

		snprintf(name, sizeof(name), "mem%u", (unsigned)s);
		assert_int_equal(chunk_cache_open(&f, name, name, BUDGET_OBJECT, &opt, NULL, 0, NULL, &src[s]), 0);
	}
}

/*
 * The sum within the bound once loads in flight are done: the readahead
 * workers' evict after their loads, a moment after the reads return.
 */
static bool budget_kept(const struct qs_memory_budget *b)
{
	for (int i = 0; i < 200; i++) {
		if (__atomic_load_n(&b->used, __ATOMIC_RELAXED) <= b->limit)
			return true;
		usleep(5000);
	}
	return false;
}

static bool budget_read(struct qs_source *src, uintptr_t tag, uint64_t off, size_t len)
{
	uint8_t buf[4096];
	bool ok = len <= sizeof(buf) && qs_source_pread(src, buf, len, off) == 0;

	for (size_t i = 0; ok && i < len; i++)
		ok = buf[i] == budget_byte(tag, off + i);
	return ok;
}

/*
 * Sources read one after the other: each stays within the shared bound,
 * the idle ones' chunks evicted too (each evicting only its own left the
 * first source's chunks held while the next one emptied itself).
 */
static void test_budget_shared(void **state)
{
	struct qs_memory_budget b;
	struct qs_source *src[BUDGET_SOURCES];

	(void)state;
	qs_memory_budget_init(&b, BUDGET_LIMIT);
	budget_open(&b, src);
	for (uintptr_t s = 0; s < BUDGET_SOURCES; s++) {
		for (uint64_t off = 0; off < BUDGET_OBJECT; off += BUDGET_CHUNK / 2)
			assert_true(budget_read(src[s], s, off, 1000));
		assert_true(budget_kept(&b));
		assert_true(b.used > 0);
	}
	/* One chunk of another source, read alone (no readahead): the others make room for it. */
	assert_true(budget_read(src[1], 1, 5 * BUDGET_CHUNK + 100, 100));
	assert_true(budget_kept(&b));
	/* The first source reads right again after its chunks went. */
	assert_true(budget_read(src[0], 0, 12345, 4000));
	for (int s = 0; s < BUDGET_SOURCES; s++)
		qs_source_close(src[s]);
	assert_int_equal(b.used, 0);
	qs_memory_budget_destroy(&b);
}

struct budget_worker {
	struct qs_source **src;
	unsigned seed;
	bool ok;
};

static void *budget_worker_main(void *arg)
{
	struct budget_worker *w = arg;

	w->ok = true;
	for (int i = 0; i < 2000 && w->ok; i++) {
		uintptr_t s = (uintptr_t)(rand_r(&w->seed) % BUDGET_SOURCES);
		uint64_t off = (uint64_t)rand_r(&w->seed) % (BUDGET_OBJECT - 4096);

		w->ok = budget_read(w->src[s], s, off, 1 + (size_t)rand_r(&w->seed) % 4096);
	}
	return NULL;
}

/* Threads on all the sources at once: every byte right, the bound kept at rest. */
static void test_budget_threads(void **state)
{
	struct qs_memory_budget b;
	struct qs_source *src[BUDGET_SOURCES];
	struct budget_worker w[6];
	pthread_t t[6];

	(void)state;
	qs_memory_budget_init(&b, BUDGET_LIMIT);
	budget_open(&b, src);
	for (int i = 0; i < 6; i++) {
		w[i] = (struct budget_worker){ .src = src, .seed = 7u + (unsigned)i };
		assert_int_equal(pthread_create(&t[i], NULL, budget_worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_true(w[i].ok);
	}
	/* One more read each, with nothing held: whoever loads last brings the sum under the bound. */
	for (uintptr_t s = 0; s < BUDGET_SOURCES; s++)
		assert_true(budget_read(src[s], s, BUDGET_OBJECT - 4096 - s * BUDGET_CHUNK * 3, 100));
	assert_true(budget_kept(&b));
	for (int s = 0; s < BUDGET_SOURCES; s++)
		qs_source_close(src[s]);
	assert_int_equal(b.used, 0);
	qs_memory_budget_destroy(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ini),
		cmocka_unit_test(test_display_name),
		cmocka_unit_test(test_cache_key),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_s3_target),
		cmocka_unit_test(test_disk_cache),
		cmocka_unit_test(test_disk_cache_eviction),
		cmocka_unit_test(test_budget_shared),
		cmocka_unit_test(test_budget_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
