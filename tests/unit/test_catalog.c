/*
 * test_catalog.c - the catalog's model (mount/catalog/, through
 * catalog_int.h), with no mount: which file names give which names,
 * listings merged into names, and per-name versions with their slots.
 *
 * Names: an image's extension is dropped, hidden entries and names with
 * control bytes are never names, nor are "." "..", empty ones and the
 * control files'.  Clashes: a directory wins over an image of its name
 * whichever comes first, and of two keys of one name the one that has it
 * keeps it, else the first in byte order.  Versions: an unchanged listing
 * changes nothing, a changed key, size, time or ETag gives the name its
 * next version in a new slot, and a superseded version's slot is taken back
 * only once nothing names it and reused only after the quarantine.
 * The state file a held catalog's next server seeds from (journal.c,
 * seed.c): the same node ids, superseded slots held, a torn record dropped.
 * Aliases: the text of the symlink entry from one name to another, the
 * part of an absolute target below the root, and the resolution of
 * symlinks in a scratch directory (relative, absolute, chains, loops,
 * escapes, directories, dangling) from the root with O_NOFOLLOW walks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalog_int.h"

#define QUARANTINE_S 5          /* QC_SLOT_QUARANTINE_S, catalog_int.h */

static void test_image_names(void **state)
{
	static const struct { const char *key, *name; bool ok; } cases[] = {
		{ "a.sqfs", "a", true },
		{ "a.squashfs", "a", true },
		{ "a.img", "a", true },
		{ "a.sif", "a", true },
		{ "a.img.sqfs", "a.img", true },        /* one extension only */
		{ "a.SQFS", "a.SQFS", true },           /* bytes, no case folding */
		{ "a.sqfs.bak", "a.sqfs.bak", true },
		{ ".sqfs", ".sqfs", true },             /* an extension needs a name before it */
		{ "..sqfs", ".", false },
		{ "...sqfs", "..", false },
		{ "x.sqfs", "x", true },
		{ ".quash-catalog.sqfs", ".quash-catalog", false },
		{ ".quash-refresh.img", ".quash-refresh", false },
		{ "tab\tname.sqfs", "tab\tname", false },
		{ "del\x7f.sqfs", "del\x7f", false },
		{ "caf\xc3\xa9.sqfs", "caf\xc3\xa9", true },   /* UTF-8 is not control */
	};
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i].key);
		qc_strip_ext(buf);
		assert_string_equal(buf, cases[i].name);
		if (qc_image_name_ok(buf) != cases[i].ok)
			fail_msg("\"%s\": name ok %d, not %d", cases[i].key, !cases[i].ok, cases[i].ok);
	}
	assert_false(qc_image_name_ok(""));
	assert_true(qc_has_image_ext("a.sqfs"));
	assert_false(qc_has_image_ext(".sqfs"));
	assert_false(qc_has_image_ext("a.sqf"));
	assert_false(qc_has_image_ext("a.SQFS"));
	assert_true(qc_has_control("a\nb"));
	assert_true(qc_has_control("\x1f"));
	assert_false(qc_has_control(" ~\x80\xff"));
	assert_false(qc_entry_listed(".hidden.sqfs"));
	assert_false(qc_entry_listed("."));
	assert_false(qc_entry_listed(".."));
	assert_false(qc_entry_listed("a\rb.sqfs"));
	assert_true(qc_entry_listed("a.b.sqfs"));
	assert_true(qc_entry_listed("a."));
}

static int find(struct qm_catalog *c, const char *path, const char **key, uint32_t *version, uint32_t *slot)
{
	const char *k = NULL;
	uint32_t v = 0, s = 0;
	int r = qc_model_find(c, path, &k, &v, &s);

	if (key)
		*key = k;
	if (version)
		*version = v;
	if (slot)
		*slot = s;
	return r;
}

static void assert_image(struct qm_catalog *c, const char *path, const char *key, uint32_t version)
{
	const char *k;
	uint32_t v;

	if (find(c, path, &k, &v, NULL) != 2)
		fail_msg("%s: no image", path);
	assert_string_equal(k, key);
	assert_int_equal(v, version);
}

#define MERGE(c, ...) do { \
		const struct qc_listed l_[] = { __VA_ARGS__ }; \
		assert_int_equal(qc_model_merge((c), l_, sizeof(l_) / sizeof(l_[0])), 0); \
	} while (0)
#define MERGE_NONE(c) assert_int_equal(qc_model_merge((c), NULL, 0), 0)

/* Keys make names and directories; names the listing drops go, emptied directories too. */
static void test_merge_tree(void **state)
{
	struct qm_catalog *c = qc_model_new();

	(void)state;
	assert_non_null(c);
	MERGE(c, { "z/deep/one.img", 1, 1, NULL }, { "a.sqfs", 1, 1, NULL }, { "b/c.sif", 2, 1, NULL },
	      { "..sqfs", 3, 1, NULL }, { "b/bell\a.sqfs", 3, 1, NULL });
	assert_image(c, "a", "a.sqfs", 1);
	assert_int_equal(find(c, "b", NULL, NULL, NULL), 1);
	assert_image(c, "b/c", "b/c.sif", 1);
	assert_int_equal(find(c, "z/deep", NULL, NULL, NULL), 1);
	assert_image(c, "z/deep/one", "z/deep/one.img", 1);
	assert_int_equal(find(c, "a.sqfs", NULL, NULL, NULL), 0);
	assert_int_equal(find(c, "..", NULL, NULL, NULL), 0);
	assert_int_equal(find(c, "b/bell\a", NULL, NULL, NULL), 0);

	MERGE(c, { "a.sqfs", 1, 1, NULL }, { "b/c.sif", 2, 1, NULL });
	assert_image(c, "a", "a.sqfs", 1);
	assert_image(c, "b/c", "b/c.sif", 1);
	assert_int_equal(find(c, "z/deep/one", NULL, NULL, NULL), 0);
	assert_int_equal(find(c, "z", NULL, NULL, NULL), 0);
	MERGE_NONE(c);
	assert_int_equal(find(c, "a", NULL, NULL, NULL), 0);
	assert_int_equal(find(c, "b", NULL, NULL, NULL), 0);
	qc_model_free(c);
}

/* A directory wins over an image of its name, in either order of arrival. */
static void test_directory_wins(void **state)
{
	struct qm_catalog *c = qc_model_new();

	(void)state;
	assert_non_null(c);
	MERGE(c, { "x/y.sqfs", 1, 1, NULL }, { "x.sqfs", 1, 1, NULL });
	assert_int_equal(find(c, "x", NULL, NULL, NULL), 1);
	assert_image(c, "x/y", "x/y.sqfs", 1);
	assert_int_equal(qc_model_shadowed(c), 1);

	/* the image had the name first: the directory still takes it */
	MERGE(c, { "w.img", 1, 1, NULL });
	assert_image(c, "w", "w.img", 1);
	MERGE(c, { "w.img", 1, 1, NULL }, { "w/v.img", 1, 1, NULL });
	assert_int_equal(find(c, "w", NULL, NULL, NULL), 1);
	assert_image(c, "w/v", "w/v.img", 1);
	assert_int_equal(qc_model_shadowed(c), 1);
	qc_model_free(c);
}

/* Of two keys of one name: the one that has it keeps it, else the first in byte order. */
static void test_name_clash(void **state)
{
	struct qm_catalog *c = qc_model_new();

	(void)state;
	assert_non_null(c);
	MERGE(c, { "a.sqfs", 1, 1, NULL }, { "a.img", 2, 1, NULL });
	assert_image(c, "a", "a.img", 1);               /* ".img" < ".sqfs" */
	assert_int_equal(qc_model_shadowed(c), 1);

	MERGE(c, { "b.sqfs", 1, 1, NULL });
	assert_image(c, "b", "b.sqfs", 1);
	MERGE(c, { "b.sqfs", 1, 1, NULL }, { "b.img", 2, 1, NULL });
	assert_image(c, "b", "b.sqfs", 1);              /* it had the name */
	assert_int_equal(qc_model_shadowed(c), 1);
	MERGE(c, { "b.img", 2, 1, NULL });
	assert_image(c, "b", "b.img", 2);               /* the name's next version */
	assert_int_equal(qc_model_shadowed(c), 0);
	/* renamed to another extension, the same bytes: the version must open the new key */
	MERGE(c, { "b.sqfs", 2, 1, NULL });
	assert_image(c, "b", "b.sqfs", 3);
	qc_model_free(c);
}

/* A changed size, time or ETag is the name's next version, in a new slot; the same listing changes nothing. */
static void test_versions(void **state)
{
	struct qm_catalog *c = qc_model_new();
	uint32_t v, s1, s2, s3, s4, s5;

	(void)state;
	assert_non_null(c);
	MERGE(c, { "a.sqfs", 100, 10, "e1" }, { "b.sqfs", 5, 5, NULL });
	find(c, "a", NULL, &v, &s1);
	assert_int_equal(v, 1);
	MERGE(c, { "b.sqfs", 5, 5, NULL }, { "a.sqfs", 100, 10, "e1" });
	find(c, "a", NULL, &v, &s2);
	assert_int_equal(v, 1);
	assert_int_equal(s2, s1);
	MERGE(c, { "a.sqfs", 101, 10, "e1" }, { "b.sqfs", 5, 5, NULL });
	find(c, "a", NULL, &v, &s2);
	assert_int_equal(v, 2);
	assert_int_not_equal(s2, s1);
	MERGE(c, { "a.sqfs", 101, 11, "e1" }, { "b.sqfs", 5, 5, NULL });
	find(c, "a", NULL, &v, &s3);
	assert_int_equal(v, 3);
	MERGE(c, { "a.sqfs", 101, 11, "e2" }, { "b.sqfs", 5, 5, NULL });
	find(c, "a", NULL, &v, &s4);
	assert_int_equal(v, 4);
	MERGE(c, { "a.sqfs", 101, 11, "e2" }, { "b.sqfs", 5, 5, "" });
	find(c, "a", NULL, &v, &s5);
	assert_int_equal(v, 4);
	assert_int_equal(s5, s4);
	assert_image(c, "b", "b.sqfs", 1);              /* no ETag and an empty one are the same */
	assert_true(s1 != s3 && s1 != s4 && s2 != s3 && s2 != s4 && s3 != s4);
	qc_model_free(c);
}

/* A superseded version's slot: held while the kernel knows it, reused only after the quarantine. */
static void test_slot_reuse(void **state)
{
	struct qm_catalog *c = qc_model_new();
	uint32_t v, s1, s2, s3, s4;

	(void)state;
	assert_non_null(c);
	MERGE(c, { "a.sqfs", 1, 1, NULL });
	find(c, "a", NULL, &v, &s1);
	qc_model_lookups(c, s1, 2);
	MERGE(c, { "a.sqfs", 2, 1, NULL });
	find(c, "a", NULL, &v, &s2);
	assert_int_equal(v, 2);
	assert_int_equal(qc_model_sweep(c, 0), 0);      /* two lookups of version 1 held */
	qc_model_lookups(c, s1, -1);
	assert_int_equal(qc_model_sweep(c, 0), 0);
	qc_model_lookups(c, s1, -1);
	assert_int_equal(qc_model_sweep(c, 0), 1);
	assert_int_equal(qc_model_sweep(c, 0), 0);      /* taken back once */

	MERGE(c, { "a.sqfs", 3, 1, NULL });              /* within the quarantine: a new slot */
	find(c, "a", NULL, &v, &s3);
	assert_int_equal(v, 3);
	assert_int_not_equal(s3, s1);
	assert_int_equal(qc_model_sweep(c, QUARANTINE_S), 1);   /* version 2's; s1 has waited long enough */
	MERGE(c, { "a.sqfs", 4, 1, NULL });
	find(c, "a", NULL, &v, &s4);
	assert_int_equal(v, 4);
	assert_int_equal(s4, s1);
	qc_model_free(c);
}

static void test_alias_text(void **state)
{
	static const struct { const char *from, *to, *text; } cases[] = {
		{ "gcc-latest", "gcc-13.2", "gcc-13.2" },
		{ "gcc-latest", "v/gcc-13.2", "v/gcc-13.2" },
		{ "sub/rel", "v/gcc-13.2", "../v/gcc-13.2" },
		{ "a/b/c", "a/x", "../x" },
		{ "a/b/c", "a/b/d", "d" },
		{ "ab/c", "a/d", "../a/d" },         /* a shared prefix of bytes is no shared directory */
		{ "a/c", "ab/d", "../ab/d" },
		{ "x/y/z", "top", "../../top" },
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(qc_alias_relative(cases[i].from, cases[i].to, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].text);
	}
	assert_int_equal(qc_alias_relative("a/b/c/d", "x", out, 8), -ENAMETOOLONG);

	assert_string_equal(qc_alias_inside("/srv/cat", "/srv/cat/a.sqfs"), "a.sqfs");
	assert_string_equal(qc_alias_inside("/srv/cat/", "/srv/cat/d/a.sqfs"), "d/a.sqfs");
	assert_string_equal(qc_alias_inside("/srv/cat", "/srv/cat"), "");
	assert_string_equal(qc_alias_inside("/", "/srv/a.sqfs"), "srv/a.sqfs");
	assert_null(qc_alias_inside("/srv/cat", "/srv/catalog/a.sqfs"));
	assert_null(qc_alias_inside("/srv/cat", "/srv/a.sqfs"));
	assert_null(qc_alias_inside("/srv/cat", "/etc/shadow"));
}

static char scratch[PATH_MAX];

static void put(const char *rel, const char *link)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", scratch, rel);
	if (link) {
		assert_int_equal(symlink(link, path), 0);
	} else {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

		assert_true(fd >= 0);
		close(fd);
	}
}

/* Resolve 'key' in the scratch catalog: 0 and the target key, or the error and the reason. */
static int resolve(int root, const char *key, char *out, const char **why)
{
	char cat[PATH_MAX + 8];

	snprintf(cat, sizeof(cat), "%s/cat", scratch);
	return qc_alias_resolve(root, cat, key, out, QC_KEY_MAX + 1, why);
}

static void test_alias_resolve(void **state)
{
	static const struct { const char *key; int err; const char *target; } cases[] = {
		{ "latest.sqfs", 0, "v/img.sqfs" },
		{ "sub/rel.sqfs", 0, "v/img.sqfs" },
		{ "abs.sqfs", 0, "v/img.sqfs" },
		{ "chain.sqfs", 0, "v/img.sqfs" },
		{ "via-dir.sqfs", 0, "v/img.sqfs" },         /* through a symlink to a directory */
		{ "dots.sqfs", 0, "v/img.sqfs" },
		{ "loop1.sqfs", -ELOOP, NULL },
		{ "self.sqfs", -ELOOP, NULL },
		{ "up.sqfs", -EXDEV, NULL },
		{ "up-deep.sqfs", -EXDEV, NULL },
		{ "out.sqfs", -EXDEV, NULL },
		{ "sibling.sqfs", -EXDEV, NULL },            /* /.../catalog: a longer name, not below the root */
		{ "dangling.sqfs", -ENOENT, NULL },
		{ "dir.sqfs", -EISDIR, NULL },
		{ "root.sqfs", -EISDIR, NULL },
		{ "through-file.sqfs", -ENOTDIR, NULL },
		{ "nine.sqfs", -ELOOP, NULL },               /* a chain of 9 */
		{ "eight.sqfs", 0, "v/img.sqfs" },           /* a chain of 8 */
	};
	char out[QC_KEY_MAX + 1], link[PATH_MAX + 64];
	const char *why;
	int root;

	(void)state;
	snprintf(scratch, sizeof(scratch), "/tmp/test_catalog.XXXXXX");
	assert_non_null(mkdtemp(scratch));
	snprintf(link, sizeof(link), "%s/cat", scratch);
	assert_int_equal(mkdir(link, 0755), 0);
	snprintf(link, sizeof(link), "%s/cat/v", scratch);
	assert_int_equal(mkdir(link, 0755), 0);
	snprintf(link, sizeof(link), "%s/cat/sub", scratch);
	assert_int_equal(mkdir(link, 0755), 0);
	put("cat/v/img.sqfs", NULL);
	put("secret.sqfs", NULL);         /* outside the root, a name the root does not have */
	put("cat/latest.sqfs", "v/img.sqfs");
	put("cat/sub/rel.sqfs", "../v/img.sqfs");
	snprintf(link, sizeof(link), "%s/cat/v/img.sqfs", scratch);
	put("cat/abs.sqfs", link);
	put("cat/chain.sqfs", "latest.sqfs");
	put("cat/vv", "v");
	put("cat/via-dir.sqfs", "vv/img.sqfs");
	put("cat/dots.sqfs", "./sub/../v/./img.sqfs");
	put("cat/loop1.sqfs", "loop2.sqfs");
	put("cat/loop2.sqfs", "loop1.sqfs");
	put("cat/self.sqfs", "self.sqfs");
	put("cat/up.sqfs", "../secret.sqfs");
	put("cat/up-deep.sqfs", "sub/../../secret.sqfs");
	snprintf(link, sizeof(link), "%s/secret.sqfs", scratch);
	put("cat/out.sqfs", link);
	snprintf(link, sizeof(link), "%s/catalog/v/img.sqfs", scratch);
	put("cat/sibling.sqfs", link);
	put("cat/dangling.sqfs", "missing.sqfs");
	put("cat/dir.sqfs", "v");
	snprintf(link, sizeof(link), "%s/cat", scratch);
	put("cat/root.sqfs", link);
	put("cat/through-file.sqfs", "v/img.sqfs/x");
	put("cat/c1.sqfs", "v/img.sqfs");
	for (int i = 2; i <= 9; i++) {
		char name[32], to[32];

		snprintf(name, sizeof(name), "cat/c%d.sqfs", i);
		snprintf(to, sizeof(to), "c%d.sqfs", i - 1);
		put(name, to);
	}
	put("cat/eight.sqfs", "c7.sqfs");
	put("cat/nine.sqfs", "c8.sqfs");
	snprintf(link, sizeof(link), "%s/cat", scratch);
	root = open(link, O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = resolve(root, cases[i].key, out, &why);

		if (err != cases[i].err)
			fail_msg("%s: %d (%s), want %d", cases[i].key, err, why, cases[i].err);
		if (cases[i].target)
			assert_string_equal(out, cases[i].target);
		else
			assert_true(*why);
	}
	close(root);
	snprintf(link, sizeof(link), "rm -rf '%s'", scratch);
	assert_int_equal(system(link), 0);
}

/*
 * The state file (journal.c, seed.c): a catalog seeded from another's file
 * has every name at the other's node id, the slots of superseded versions
 * held, the directories gone gone; its next listing keeps them all; a torn
 * last record is dropped and the rest read.
 */
static void test_journal(void **state)
{
	struct qm_catalog *c = qc_model_new(), *d = qc_model_new(), *e = qc_model_new();
	int fd = memfd_create("test-journal", 0);
	uint32_t v, sa, sb, sb1, sy, s2;
	uint64_t dir_c;
	struct stat st;

	(void)state;
	assert_true(c && d && e && fd >= 0);
	qc_model_journal(c, dup(fd));
	MERGE(c, { "b.sqfs", 5, 5, NULL }, { "d/x.sqfs", 6, 6, NULL });
	find(c, "b", NULL, NULL, &sb1);
	/* names that come later get later ids than a fresh listing would give them */
	MERGE(c, { "a.sqfs", 1, 1, "e1" }, { "b.sqfs", 7, 7, NULL }, { "c/y.sqfs", 2, 2, NULL });
	find(c, "a", NULL, NULL, &sa);
	find(c, "b", NULL, &v, &sb);
	find(c, "c/y", NULL, NULL, &sy);
	dir_c = qc_model_dir(c, "c");
	assert_int_equal(v, 2);
	assert_int_equal(qc_model_dir(c, "d"), 0);
	assert_true(dir_c != 0);

	assert_int_equal(qc_journal_seed(d, fd), 0);
	find(d, "a", NULL, NULL, &s2);
	assert_int_equal(s2, sa);
	find(d, "b", NULL, &v, &s2);
	assert_int_equal(s2, sb);
	assert_int_equal(v, 2);
	find(d, "c/y", NULL, NULL, &s2);
	assert_int_equal(s2, sy);
	assert_int_equal(qc_model_dir(d, "c"), dir_c);
	assert_int_equal(qc_model_dir(d, "d"), 0);
	assert_non_null(qc_slot(d, sb1));              /* b's first version: the kernel may still name it */
	assert_true(atomic_load(&qc_slot(d, sb1)->superseded));
	MERGE(d, { "a.sqfs", 1, 1, "e1" }, { "b.sqfs", 7, 7, NULL }, { "c/y.sqfs", 2, 2, NULL });
	find(d, "a", NULL, NULL, &s2);
	assert_int_equal(s2, sa);
	find(d, "c/y", NULL, NULL, &s2);
	assert_int_equal(s2, sy);
	assert_int_equal(qc_model_sweep(d, 60), 0);    /* an inherited slot is never taken back */

	/* a record cut short by a kill: dropped, the ones before it read */
	MERGE(c, { "a.sqfs", 1, 1, "e1" }, { "b.sqfs", 7, 7, NULL }, { "c/y.sqfs", 2, 2, NULL }, { "z.sqfs", 9, 9, NULL });
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(ftruncate(fd, st.st_size - 3), 0);
	assert_int_equal(qc_journal_seed(e, fd), 0);
	assert_int_equal(find(e, "z", NULL, NULL, NULL), 0);
	find(e, "c/y", NULL, NULL, &s2);
	assert_int_equal(s2, sy);
	close(fd);
	qc_model_free(c);
	qc_model_free(d);
	qc_model_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_names),
		cmocka_unit_test(test_merge_tree),
		cmocka_unit_test(test_directory_wins),
		cmocka_unit_test(test_name_clash),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_slot_reuse),
		cmocka_unit_test(test_journal),
		cmocka_unit_test(test_alias_text),
		cmocka_unit_test(test_alias_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
