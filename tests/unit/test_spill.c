/*
 * test_spill.c - pack/spill.c: the memory --memory pages out to a file.
 *
 * What is written through the mapping survives the pages being given back
 * (the file keeps them), the resident pages stay near the bound while a
 * walk ticks through far more, peek and poke reach the same bytes as the
 * mapping, and without a bound it is all malloc()'s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tree/spill.h"

#define PIECE 4096u
#define PIECES 4096u            /* 16 MiB through a bound of 1 MiB */

static char dir[] = "/tmp/quash-test-spill-XXXXXX";

/* Resident file-backed pages of this process (statm's third field). */
static long file_pages(void)
{
	long size, res, shared = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld %ld", &size, &res, &shared), 3);
	fclose(f);
	return shared;
}

static uint8_t pattern(size_t piece, size_t at)
{
	return (uint8_t)(piece * 131 + at * 7 + 1);
}

static void unbounded_is_malloc(void **state)
{
	struct spill s;
	uint8_t *p, *q, buf[16];

	(void)state;
	assert_int_equal(spill_init(&s, 0, dir), 0);
	assert_int_equal(s.fd, -1);
	p = spill_alloc(&s, 100);
	assert_non_null(p);
	for (size_t i = 0; i < 100; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0xab, 100);
	q = spill_realloc(&s, p, 100, 300);
	assert_non_null(q);
	assert_int_equal(q[99], 0xab);
	assert_int_equal(q[100], 0);
	assert_int_equal(q[299], 0);
	spill_peek(&s, q, buf, sizeof(buf));
	assert_int_equal(buf[0], 0xab);
	memset(buf, 0x11, sizeof(buf));
	spill_poke(&s, q + 200, buf, sizeof(buf));
	assert_int_equal(q[200], 0x11);
	spill_tick(&s, q);          /* no region: nothing */
	assert_int_equal(s.region_count, 0);
	spill_free(&s, q);
	spill_close(&s);
}

static void pages_given_back_keep_their_bytes(void **state)
{
	struct spill s;
	uint8_t *piece[PIECES];
	long before, most = 0;

	(void)state;
	assert_int_equal(spill_init(&s, 1u << 20, dir), 0);
	assert_true(s.fd >= 0);
	before = file_pages();
	for (size_t i = 0; i < PIECES; i++) {
		piece[i] = spill_alloc(&s, PIECE);
		assert_non_null(piece[i]);
		assert_int_equal(piece[i][PIECE - 1], 0);
		for (size_t k = 0; k < PIECE; k += 512)
			piece[i][k] = pattern(i, k);
		for (unsigned t = 0; t < SPILL_TICK_EVERY / 8; t++)
			spill_tick(&s, piece[i]);
		if (file_pages() - before > most)
			most = file_pages() - before;
	}
	assert_true(s.drops > 0);
	/* The bound, the walk's 1 MiB piece kept, and what a check's ticks touch between two checks. */
	assert_true(most * sysconf(_SC_PAGESIZE) < (4 << 20));
	/* Every byte written is there, read through the mapping and by peek. */
	for (size_t i = 0; i < PIECES; i++) {
		uint8_t b;

		for (size_t k = 0; k < PIECE; k += 512)
			assert_int_equal(piece[i][k], pattern(i, k));
		spill_peek(&s, piece[i] + 512, &b, 1);
		assert_int_equal(b, pattern(i, 512));
		spill_tick(&s, piece[i]);
	}
	spill_close(&s);
}

static void peek_and_poke_reach_the_mapping(void **state)
{
	struct spill s;
	uint64_t *slots, v = 0;

	(void)state;
	assert_int_equal(spill_init(&s, 1u << 20, dir), 0);
	slots = spill_alloc(&s, 1024 * sizeof(*slots));
	assert_non_null(slots);
	v = 0x0123456789abcdefull;
	spill_poke(&s, &slots[700], &v, sizeof(v));
	assert_true(slots[700] == v);         /* pwrite()n: the shared mapping sees it */
	slots[701] = 42;
	v = 0;
	spill_peek(&s, &slots[701], &v, sizeof(v));
	assert_true(v == 42);                 /* written through the mapping: pread() sees it */
	spill_close(&s);
}

static void realloc_moves_heap_into_the_file(void **state)
{
	struct spill s;
	uint8_t *heap = malloc(64), *moved;

	(void)state;
	assert_non_null(heap);
	memset(heap, 0x5a, 64);
	assert_int_equal(spill_init(&s, 1u << 20, dir), 0);
	moved = spill_realloc(&s, heap, 64, 1 << 16);     /* heap freed, not leaked (ASan) */
	assert_non_null(moved);
	assert_int_equal(moved[63], 0x5a);
	assert_int_equal(moved[64], 0);
	assert_int_equal(moved[(1 << 16) - 1], 0);
	assert_int_equal(s.region_count, 1);
	spill_free(&s, moved);      /* the file's: stays until close */
	spill_close(&s);
}

static void a_directory_it_cannot_be_made_in(void **state)
{
	struct spill s;

	(void)state;
	assert_true(spill_init(&s, 1u << 20, "/nonexistent/quash-spill") < 0);
	spill_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unbounded_is_malloc),
		cmocka_unit_test(pages_given_back_keep_their_bytes),
		cmocka_unit_test(peek_and_poke_reach_the_mapping),
		cmocka_unit_test(realloc_moves_heap_into_the_file),
		cmocka_unit_test(a_directory_it_cannot_be_made_in),
	};
	int failed;

	if (!mkdtemp(dir))
		return 1;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return failed;
}
