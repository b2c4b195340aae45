/*
 * test_pack_tree.c - pack's in-memory tree (pack/tree.c) and its
 * whole-file deduplication index (pack/dedup.c).
 *
 * The tree: tree_finish() lists every directory bytewise (squashfs's order,
 * whatever order the sources gave), a later entry replaces an earlier one
 * while a directory met again keeps its children, hard links share one
 * inode whose link count is its names, a directory's is 2 + subdirectories,
 * and lookups find every name in directories small and large.  The index:
 * only sizes seen twice are candidates, a file is found again only with
 * the same size, hash and bytes (a hash collision never merges two files),
 * files of at most DEDUP_EXACT_MAX bytes are never compared, and an equal
 * file gets the earlier one's fragment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/dedup.h"
#include "tree/tree.h"

static const struct pack_overrides keep = {
	.uid = -1, .gid = -1, .mode = -1, .mtime = -1, .mtime_max = -1,
};

static struct pack_inode *add(struct pack_tree *t, struct pack_inode *dir, const char *name, uint32_t mode)
{
	struct pack_inode *i = tree_inode_new(t, mode);

	assert_non_null(i);
	i = tree_insert(t, dir, name, strlen(name), i);
	assert_non_null(i);
	return i;
}

static void names_of(const struct pack_inode *dir, char *out, size_t size)
{
	out[0] = '\0';
	for (size_t i = 0; i < dir->u.dir.count; i++) {
		strncat(out, tree_child_name(dir->u.dir.children[i]), size - strlen(out) - 2);
		strcat(out, "|");
	}
}

/* Children are listed by their bytes, unsigned: upper case before lower, 0xff last. */
static void test_sorted_bytewise(void **state)
{
	static const char *const given[] = { "b", "\xff" "x", "a.b", "B", "a", "a-", "ab", "_" };
	struct pack_tree t;
	char got[256];

	(void)state;
	assert_int_equal(tree_init(&t), 0);
	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++)
		add(&t, t.root, given[i], 0100644);
	assert_int_equal(tree_finish(&t, &keep), 0);
	names_of(t.root, got, sizeof(got));
	assert_string_equal(got, "B|_|a|a-|a.b|ab|b|\xff" "x|");
	tree_free(&t);
}

/* A later entry replaces an earlier one; a directory met again keeps its children. */
static void test_later_wins_dirs_merge(void **state)
{
	struct pack_tree t;
	struct pack_inode *d, *d2, *f, *g;

	(void)state;
	assert_int_equal(tree_init(&t), 0);
	d = add(&t, t.root, "d", 0040700);
	add(&t, d, "old", 0100644);
	d2 = tree_inode_new(&t, 0040755);
	d2->mtime = 1234;
	assert_ptr_equal(tree_insert(&t, t.root, "d", 1, d2), d);
	assert_int_equal(d->mode, 0040755);
	assert_int_equal(d->mtime, 1234);
	add(&t, d, "new", 0100644);
	f = add(&t, t.root, "x", 0100644);
	g = add(&t, t.root, "x", 0120777);
	assert_ptr_not_equal(f, g);
	assert_int_equal(tree_finish(&t, &keep), 0);
	assert_ptr_equal(tree_find_path(&t, "x"), g);
	assert_non_null(tree_find_path(&t, "d/old"));
	assert_non_null(tree_find_path(&t, "d/new"));
	assert_null(tree_find_path(&t, "d/none"));
	assert_int_equal(t.root->u.dir.count, 2);
	assert_int_equal(t.file_count, 2);
	assert_int_equal(t.symlink_count, 1);
	assert_int_equal(t.dir_count, 2);
	tree_free(&t);
}

/* Hard links: one inode, counted once, its link count its names; directories 2 + subdirectories. */
static void test_hard_links_and_nlink(void **state)
{
	struct pack_tree t;
	struct pack_inode *a, *b, *f;

	(void)state;
	assert_int_equal(tree_init(&t), 0);
	a = add(&t, t.root, "a", 0040755);
	b = add(&t, t.root, "b", 0040755);
	add(&t, a, "sub", 0040755);
	f = add(&t, a, "f", 0100644);
	f->u.file.size = 100;
	assert_int_equal(tree_link(&t, b, "g", 1, f), 0);
	assert_int_equal(tree_link(&t, t.root, "h", 1, f), 0);
	add(&t, t.root, "single", 0100644);
	assert_int_equal(tree_finish(&t, &keep), 0);
	assert_ptr_equal(tree_find_path(&t, "b/g"), f);
	assert_ptr_equal(tree_find_path(&t, "h"), f);
	assert_int_equal(tree_nlink(f), 3);
	assert_int_equal(tree_nlink(tree_find_path(&t, "single")), 1);
	assert_int_equal(t.hardlinked, 1);
	assert_int_equal(t.file_count, 2);              /* f once, not three times */
	assert_int_equal(t.data_bytes, 100);
	assert_int_equal(tree_nlink(t.root), 4);        /* a, b */
	assert_int_equal(tree_nlink(a), 3);             /* sub */
	assert_int_equal(tree_nlink(b), 2);
	tree_free(&t);
}

/* Every name is found again, in a directory past the linear lookup and after sorting. */
static void test_lookup_large_dir(void **state)
{
	struct pack_tree t;
	char name[32];

	(void)state;
	assert_int_equal(tree_init(&t), 0);
	for (int i = 999; i >= 0; i--) {
		snprintf(name, sizeof(name), "n%d", i);
		add(&t, t.root, name, 0100644)->u.file.size = (uint64_t)i;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 1000; i++) {
			struct pack_inode *f;

			snprintf(name, sizeof(name), "n%d", i);
			f = tree_lookup(&t, t.root, name, strlen(name));
			assert_non_null(f);
			assert_int_equal(f->u.file.size, (uint64_t)i);
		}
		assert_null(tree_lookup(&t, t.root, "n1000", 5));
		assert_null(tree_lookup(&t, t.root, "n1", 1));
		assert_int_equal(tree_finish(&t, &keep), 0);
	}
	for (size_t i = 1; i < t.root->u.dir.count; i++)
		assert_true(strcmp(tree_child_name(t.root->u.dir.children[i - 1]),
				   tree_child_name(t.root->u.dir.children[i])) < 0);
	tree_free(&t);
}

/* The "same" callback: which bytes an inode stands for is its mtime, an index into 'arg'. */
static int compared;

static int same_bytes(struct pack_inode *a, struct pack_inode *b, void *arg)
{
	const char *const *contents = arg;

	compared++;
	return strcmp(contents[a->mtime], contents[b->mtime]) == 0;
}

static struct pack_inode *file(struct pack_tree *t, uint64_t size, uint64_t hash, uint32_t content)
{
	struct pack_inode *f = tree_inode_new(t, 0100644);

	assert_non_null(f);
	f->u.file.size = size;
	f->u.file.hash = hash;
	f->mtime = content;         /* the index never reads it: which bytes same_bytes() compares */
	return f;
}

static void test_dedup_sizes(void **state)
{
	struct dedup_index *d;

	(void)state;
	assert_int_equal(dedup_init(&d, NULL), 0);
	assert_false(dedup_size_known(d, 10));
	assert_int_equal(dedup_count_size(d, 10), 0);
	assert_true(dedup_size_known(d, 10));
	assert_false(dedup_size_shared(d, 10));
	assert_int_equal(dedup_count_size(d, 10), 0);
	assert_true(dedup_size_shared(d, 10));
	/* many sizes: the table grows and forgets none */
	for (uint64_t s = 1000; s < 21000; s++)
		assert_int_equal(dedup_count_size(d, s), 0);
	for (uint64_t s = 1000; s < 21000; s++) {
		assert_true(dedup_size_known(d, s));
		assert_false(dedup_size_shared(d, s));
	}
	assert_false(dedup_size_known(d, 21000));
	assert_true(dedup_size_shared(d, 10));
	dedup_free(d);
}

/* Found again with the same size, hash and bytes only; the fragment comes along. */
static void test_dedup_find(void **state)
{
	static const char *const contents[] = { "alpha", "alpha", "beta", "gamma" };
	struct pack_tree t;
	struct dedup_index *d;
	struct dedup_hit hit;
	struct pack_inode *a, *b, *c, *e, *s1, *s2;
	int err;

	(void)state;
	assert_int_equal(tree_init(&t), 0);
	assert_int_equal(dedup_init(&d, NULL), 0);
	a = file(&t, 100, 0xabc, 0);
	a->u.file.fragment = 7;
	a->u.file.frag_offset = 300;
	b = file(&t, 100, 0xabc, 1);    /* a's bytes */
	c = file(&t, 100, 0xabc, 2);    /* a's hash, other bytes: a collision */
	e = file(&t, 101, 0xabc, 0);    /* another size */
	s1 = file(&t, 5, 0x55, 0);      /* small: the key is the bytes */
	s2 = file(&t, 5, 0x55, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(dedup_count_size(d, 100), 0);
	assert_int_equal(dedup_count_size(d, 101), 0);
	assert_int_equal(dedup_count_size(d, 5), 0);
	assert_int_equal(dedup_count_size(d, 5), 0);
	assert_int_equal(dedup_reserve(d), 0);

	assert_false(dedup_find(d, a, same_bytes, (void *)contents, &hit, &err));
	assert_int_equal(err, 0);
	assert_int_equal(dedup_add(d, a), 0);
	assert_int_equal(dedup_add(d, s1), 0);

	compared = 0;
	assert_true(dedup_find(d, b, same_bytes, (void *)contents, &hit, &err));
	assert_int_equal(hit.fragment, 7);
	assert_int_equal(hit.frag_offset, 300);
	assert_int_equal(compared, 1);
	assert_false(dedup_find(d, c, same_bytes, (void *)contents, &hit, &err));
	assert_int_equal(err, 0);
	assert_false(dedup_find(d, e, same_bytes, (void *)contents, &hit, &err));
	compared = 0;
	assert_true(dedup_find(d, s2, same_bytes, (void *)contents, &hit, &err));
	assert_int_equal(compared, 0);
	dedup_free(d);
	tree_free(&t);
}

/* Many files of one size: each found by its own hash, none by another's. */
static void test_dedup_many(void **state)
{
	static const char *const contents[] = { "x" };
	struct pack_tree t;
	struct dedup_index *d;
	struct dedup_hit hit;
	enum { N = 5000 };
	int err;

	(void)state;
	assert_int_equal(tree_init(&t), 0);
	assert_int_equal(dedup_init(&d, NULL), 0);
	for (int i = 0; i < 2 * N; i++)
		assert_int_equal(dedup_count_size(d, 4096), 0);
	assert_int_equal(dedup_reserve(d), 0);
	for (uint32_t i = 0; i < N; i++) {
		struct pack_inode *f = file(&t, 4096, (uint64_t)i * 2654435761u, 0);

		f->u.file.fragment = i;
		assert_int_equal(dedup_add(d, f), 0);
	}
	for (uint32_t i = 0; i < N; i++) {
		assert_true(dedup_find(d, file(&t, 4096, (uint64_t)i * 2654435761u, 0), same_bytes,
				       (void *)contents, &hit, &err));
		assert_int_equal(hit.fragment, i);
		assert_false(dedup_find(d, file(&t, 4096, (uint64_t)(i + N) * 2654435761u, 0), same_bytes,
					(void *)contents, &hit, &err));
	}
	dedup_free(d);
	tree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sorted_bytewise),
		cmocka_unit_test(test_later_wins_dirs_merge),
		cmocka_unit_test(test_hard_links_and_nlink),
		cmocka_unit_test(test_lookup_large_dir),
		cmocka_unit_test(test_dedup_sizes),
		cmocka_unit_test(test_dedup_find),
		cmocka_unit_test(test_dedup_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
