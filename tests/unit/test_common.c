/*
 * test_common.c - what cli, mount and pack share (common/): the size
 * parser, the remote options' table, the usable CPUs.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cpus.h"
#include "size.h"
#include "source_opt.h"

static void test_size(void **state)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 }, { "123", 123 }, { "0x7b", 123 }, { "4K", 4096 }, { "4k", 4096 }, { "1M", 1 << 20 },
		{ "2G", 2ull << 30 }, { "0x10K", 16384 }, { "17179869183G", 17179869183ull << 30 },
	};
	static const char *const bad[] = { "", "K", "-1", " 1", "1 ", "1T", "1KB", "0x", "17179869184G",
					   "18446744073709551616", "1.5M" };
	uint64_t v = 77;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(size_parse(good[i].s, &v), 0);
		assert_int_equal(v, good[i].v);
	}
	v = 77;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(size_parse(bad[i], &v), -EINVAL);
	assert_int_equal(v, 77);
}

static void test_source_opt(void **state)
{
	struct qs_source_options o = { 0 };

	(void)state;
	assert_int_equal(source_opt_set(&o, "cache_dir", "/c"), 0);
	assert_string_equal(o.cache_dir, "/c");
	assert_int_equal(source_opt_set(&o, "cache-dir-limit", "2M"), 0);
	assert_int_equal(o.cache_dir_limit, 2u << 20);
	assert_int_equal(source_opt_set(&o, "retry_seconds", "5"), 0);
	assert_int_equal(o.retry_seconds, 5);
	assert_int_equal(source_opt_set(&o, "retry_seconds", "0"), -EINVAL);
	assert_int_equal(source_opt_set(&o, "retry-seconds", "4294967296"), -EINVAL);
	assert_int_equal(o.retry_seconds, 5);
	assert_int_equal(source_opt_set(&o, "chunk_size", "0"), -EINVAL);
	assert_int_equal(source_opt_set(&o, "chunk_size", "64K"), 0);
	assert_int_equal(o.chunk_size, 65536);
	assert_int_equal(source_opt_set(&o, "fallback", "/local"), -EINVAL);
	assert_int_equal(source_opt_set(&o, "fallback", "https://h/x"), 0);
	assert_int_equal(source_opt_set(&o, "record", ""), -EINVAL);
	assert_int_equal(source_opt_set(&o, "endpoint", NULL), -EINVAL);
	assert_int_equal(source_opt_set(&o, "threads", "2"), -ENOENT);
	assert_int_equal(source_opt_set(&o, "cache__dir", "/x"), -ENOENT);
}

static void test_cpus(void **state)
{
	cpu_set_t one, saved;

	(void)state;
	assert_int_equal(cpus_of_quota("max 100000\n"), 0);
	assert_int_equal(cpus_of_quota("150000 100000\n"), 2);
	assert_int_equal(cpus_of_quota("100000 100000"), 1);
	assert_int_equal(cpus_of_quota("50000 100000"), 1);
	assert_int_equal(cpus_of_quota("800000 100000"), 8);
	assert_int_equal(cpus_of_quota("0 100000"), 0);
	assert_int_equal(cpus_of_quota("100000 0"), 0);
	assert_int_equal(cpus_of_quota("junk"), 0);
	assert_int_equal(cpus_of_quota("100000 100000 7"), 0);
	/* Bound to one CPU, the process may use one, whatever the machine has. */
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	assert_true(cpus_usable() >= 1 && cpus_usable() <= (unsigned)CPU_COUNT(&saved));
	CPU_ZERO(&one);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &saved)) {
			CPU_SET(i, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(cpus_usable(), 1);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_source_opt),
		cmocka_unit_test(test_cpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
