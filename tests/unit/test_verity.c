/*
 * test_verity.c - lib/verity: the tree qs_verity_format writes against a
 * reference built here level by level from the format's description
 * (whole levels in memory, hashed with EVP_Digest), the superblock, and the
 * verifying source: every byte it returns is the data's, a flipped byte in
 * a data or tree block fails exactly the reads of the blocks under it with
 * -EIO, a zeroed buffer and a message naming the block and the level, a
 * corruption seen once heals on the re-read, concurrent readers on a small
 * cache see the same, and the cache of tree blocks stays within its bound;
 * the tree alone (qs_verity_check) passes buffers that match and fails the
 * block that does not, without reading it again.
 * (veritysetup is the oracle for the format in tests/t-verity.sh.)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <openssl/evp.h>

#include "quash.h"
#include "verity.h"

/* ---- an in-memory source that can lie ------------------------------------ */

struct mem {
	const uint8_t *bytes;
	uint64_t size;
	uint64_t flip_at;           /* a byte returned inverted ... */
	int flips_left;             /* ... this many times (-1: always, 0: never) */
	uint64_t reads;
	pthread_mutex_t lock;
};

static int mem_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	struct mem *m = src->priv;

	if (off > m->size || len > m->size - off)
		return qs_set_error(-EIO, "mem: read past the end");
	memcpy(buf, m->bytes + off, len);
	pthread_mutex_lock(&m->lock);
	m->reads++;
	if (m->flips_left && m->flip_at >= off && m->flip_at < off + len) {
		((uint8_t *)buf)[m->flip_at - off] ^= 0xff;
		if (m->flips_left > 0)
			m->flips_left--;
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static const struct qs_source_ops mem_ops = { .pread = mem_pread };

/* A source over m (not owned: the test keeps m and frees it). */
static struct qs_source *mem_source(struct mem *m, const uint8_t *bytes, uint64_t size, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->bytes = bytes;
	m->size = size;
	pthread_mutex_init(&m->lock, NULL);
	struct qs_source *s = qs_source_alloc(&mem_ops, name, name, size, m);

	assert_non_null(s);
	return s;
}

/* ---- the reference tree ---------------------------------------------------- */

static void ref_hash(const char *name, const uint8_t *salt, size_t salt_size, const uint8_t *data, size_t len,
		     uint8_t *out)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	assert_true(EVP_DigestInit_ex(ctx, EVP_get_digestbyname(name), NULL));
	assert_true(EVP_DigestUpdate(ctx, salt, salt_size));
	assert_true(EVP_DigestUpdate(ctx, data, len));
	assert_true(EVP_DigestFinal_ex(ctx, out, NULL));
	EVP_MD_CTX_free(ctx);
}

/*
 * The tree as verity.rst describes it: level by level from the data up,
 * then laid out top level first after the superblock's block.  Returns the
 * hash area (from offset 0, the superblock's 512 bytes left zero) and its
 * size; root gets the root hash.
 */
static uint8_t *ref_tree(const struct qs_verity_params *p, const uint8_t *data, uint64_t size, uint8_t *root,
			 size_t *area_len)
{
	size_t ds = (size_t)EVP_MD_get_size(EVP_get_digestbyname(p->hash_name)), stride = 1;
	uint32_t dbs = p->data_block_size, hbs = p->hash_block_size;
	uint64_t n = (size + dbs - 1) / dbs, per;
	uint8_t *levels[QS_VERITY_MAX_LEVELS], *cur, *area;
	uint64_t counts[QS_VERITY_MAX_LEVELS];
	unsigned nl = 0;
	size_t off;

	while (stride < ds)
		stride *= 2;
	per = 1;
	while (per * 2 * ds <= hbs)
		per *= 2;
	/* level 0 from the data blocks (the last one zero-padded), then up */
	cur = calloc(n, dbs);
	memcpy(cur, data, size);
	uint64_t items = n;
	size_t item_len = dbs;
	while (items > 1 || nl == 0) {
		uint64_t blocks = (items + per - 1) / per;
		uint8_t *lvl = calloc(blocks, hbs);

		if (items == 1 && nl == 0) {
			/* one data block: no tree, the root is its hash */
			ref_hash(p->hash_name, p->salt, p->salt_size, cur, item_len, root);
			free(cur);
			free(lvl);
			*area_len = 0;
			return NULL;
		}
		for (uint64_t i = 0; i < items; i++)
			ref_hash(p->hash_name, p->salt, p->salt_size, cur + i * item_len, item_len,
				 lvl + (i / per) * hbs + (i % per) * stride);
		if (nl == 0)
			free(cur);      /* the data copy; the levels are freed once laid out */
		levels[nl] = lvl;
		counts[nl++] = blocks;
		cur = lvl;
		items = blocks;
		item_len = hbs;
	}
	ref_hash(p->hash_name, p->salt, p->salt_size, cur, hbs, root);
	off = ((QS_VERITY_SB_SIZE + hbs - 1) / hbs) * hbs;
	*area_len = off;
	for (unsigned i = 0; i < nl; i++)
		*area_len += counts[i] * hbs;
	area = calloc(1, *area_len);
	for (int i = (int)nl - 1; i >= 0; i--) {
		memcpy(area + off, levels[i], counts[i] * hbs);
		off += counts[i] * hbs;
		free(levels[i]);
	}
	return area;
}

/* ---- fixtures ------------------------------------------------------------- */

struct fixture {
	struct qs_verity_params p;
	uint8_t *data;
	uint64_t size;
	uint8_t *tree;              /* the hash file qs_verity_format wrote */
	size_t tree_len;
	uint8_t root[QS_VERITY_MAX_DIGEST];
	struct qs_verity_geometry g;
	struct mem dm, hm;
};

static void fill_random(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint8_t)(seed >> 16);
	}
}

/* Data of 'size' bytes and its tree, written by qs_verity_format to a memfd and read back. */
static void fixture_make(struct fixture *f, const char *hash, uint32_t dbs, uint32_t hbs, uint64_t size,
			 unsigned seed)
{
	struct mem m;
	struct qs_source *src;
	int fd = memfd_create("tree", 0);

	memset(f, 0, sizeof(*f));
	qs_verity_params_init(&f->p);
	assert_int_equal(qs_verity_set_hash(&f->p, hash), 0);
	f->p.data_block_size = dbs;
	f->p.hash_block_size = hbs;
	f->p.salt_size = 32;
	fill_random(f->p.salt, 32, seed + 1);
	memset(f->p.uuid, 0x5a, 16);
	f->size = size;
	f->data = malloc(size);
	fill_random(f->data, size, seed);
	src = mem_source(&m, f->data, size, "data");
	assert_true(fd >= 0);
	assert_int_equal(qs_verity_format(src, &f->p, fd, f->root, &f->g), 0);
	qs_source_close(src);
	f->tree_len = (size_t)lseek(fd, 0, SEEK_END);
	assert_int_equal(f->tree_len, f->g.hash_end);
	f->tree = malloc(f->tree_len);
	assert_int_equal(pread(fd, f->tree, f->tree_len, 0), (ssize_t)f->tree_len);
	close(fd);
}

static void fixture_free(struct fixture *f)
{
	free(f->data);
	free(f->tree);
}

/* The verifying source over the fixture, through two lying memory sources. */
static struct qs_source *fixture_open(struct fixture *f, size_t cache_bytes)
{
	struct qs_verity_params p = f->p;
	struct qs_source *v = NULL, *d = mem_source(&f->dm, f->data, f->size, "data"),
			 *h = mem_source(&f->hm, f->tree, f->tree_len, "tree");

	p.cache_bytes = cache_bytes;
	p.data_blocks = 0;
	assert_int_equal(qs_source_open_verity(d, h, &p, f->root, f->g.digest_size, &v), 0);
	assert_int_equal(v->size, f->size);
	return v;
}

static bool all_zero(const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (b[i])
			return false;
	}
	return true;
}

/* ---- tests ---------------------------------------------------------------- */

/* qs_verity_format against the reference, for several hashes and block sizes and a partial last block. */
static void test_format_matches_reference(void **state)
{
	static const struct { const char *hash; uint32_t dbs, hbs; uint64_t size; } cases[] = {
		{ "sha256", 4096, 4096, (1u << 20) + 1000 },
		{ "sha1", 512, 1024, 300000 },
		{ "sha512", 1024, 512, 200000 },     /* 8 digests a block: four levels */
		{ "sha384", 4096, 4096, 4096 * 129 },  /* slots of 64 for 48-byte digests */
		{ "sha256", 4096, 4096, 100 },       /* one data block: no tree */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f;
		uint8_t root[QS_VERITY_MAX_DIGEST];
		size_t len;
		uint8_t *ref;

		fixture_make(&f, cases[i].hash, cases[i].dbs, cases[i].hbs, cases[i].size, (unsigned)i);
		ref = ref_tree(&f.p, f.data, f.size, root, &len);
		assert_memory_equal(f.root, root, f.g.digest_size);
		if (ref) {
			assert_int_equal(len, f.tree_len);
			/* the tree, after the superblock's block */
			size_t start = (size_t)f.g.tree_offset;
			assert_memory_equal(f.tree + start, ref + start, len - start);
		} else {
			assert_int_equal(f.g.levels, 0);
		}
		free(ref);
		fixture_free(&f);
	}
}

static void test_superblock(void **state)
{
	struct fixture f;
	struct qs_verity_params p;
	struct mem m;
	struct qs_source *s;
	uint8_t sb[QS_VERITY_SB_SIZE];

	(void)state;
	fixture_make(&f, "sha1", 512, 1024, 70000, 7);
	s = mem_source(&m, f.tree, f.tree_len, "tree");
	qs_verity_params_init(&p);
	assert_int_equal(qs_verity_read_superblock(s, 0, &p), 0);
	assert_string_equal(p.hash_name, "sha1");
	assert_int_equal(p.data_block_size, 512);
	assert_int_equal(p.hash_block_size, 1024);
	assert_int_equal(p.data_blocks, (70000 + 511) / 512);
	assert_int_equal(p.salt_size, 32);
	assert_memory_equal(p.salt, f.p.salt, 32);
	assert_memory_equal(p.uuid, f.p.uuid, 16);
	qs_source_close(s);
	/* not a superblock; an algorithm quash does not verify with */
	s = mem_source(&m, f.data, f.size, "data");
	assert_int_equal(qs_verity_read_superblock(s, 0, &p), -ENODATA);
	qs_source_close(s);
	memcpy(sb, f.tree, sizeof(sb));
	memset(sb + 32, 0, 32);
	memcpy(sb + 32, "whirlpool", 9);
	s = mem_source(&m, sb, sizeof(sb), "sb");
	assert_int_equal(qs_verity_read_superblock(s, 0, &p), -EINVAL);
	assert_non_null(strstr(qs_last_error(), "hash algorithm 'whirlpool' is not supported"));
	qs_source_close(s);
	fixture_free(&f);
}

/* Everything reads back right in odd pieces, and every tree block is read once. */
static void test_read_all(void **state)
{
	struct fixture f;
	struct qs_source *v;
	struct qs_verity_stats st;
	uint8_t *buf;

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, (2u << 20) + 333, 11);
	v = fixture_open(&f, 0);
	buf = malloc(f.size);
	for (uint64_t off = 0, step = 1; off < f.size; off += step, step = step * 3 % 20011 + 1) {
		size_t len = off + step > f.size ? (size_t)(f.size - off) : (size_t)step;

		assert_int_equal(qs_source_pread(v, buf, len, off), 0);
		assert_memory_equal(buf, f.data + off, len);
	}
	assert_int_equal(qs_source_pread(v, buf, f.size, 0), 0);
	assert_memory_equal(buf, f.data, f.size);
	assert_int_equal(qs_source_pread(v, buf, 2, f.size - 1), -EIO);
	assert_int_equal(qs_verity_source_stats(v, &st), 0);
	assert_int_equal(st.tree_blocks_read, f.g.hash_blocks);
	assert_int_equal(st.failures, 0);
	free(buf);
	qs_source_close(v);
	fixture_free(&f);
}

/* One flipped data byte: its block fails, zeroed and named; its neighbours do not. */
static void test_flip_data(void **state)
{
	struct fixture f;
	struct qs_source *v;
	uint8_t buf[3 * 4096];
	char want[128];

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, (1u << 20) + 100, 13);
	v = fixture_open(&f, 0);
	f.dm.flip_at = 5 * 4096 + 17;
	f.dm.flips_left = -1;
	memset(buf, 0xaa, sizeof(buf));
	assert_int_equal(qs_source_pread(v, buf, 100, 5 * 4096), -EIO);
	assert_true(all_zero(buf, 100));
	snprintf(want, sizeof(want), "verity: data block 5 (offset %u) does not match its hash in tree level 0",
		 5 * 4096);
	assert_string_equal(qs_last_error(), want);
	assert_int_equal(qs_source_pread(v, buf, sizeof(buf), 4 * 4096 + 10), -EIO);
	assert_int_equal(qs_source_pread(v, buf, 4096, 4 * 4096), 0);
	assert_memory_equal(buf, f.data + 4 * 4096, 4096);
	assert_int_equal(qs_source_pread(v, buf, 4096, 6 * 4096), 0);
	assert_memory_equal(buf, f.data + 6 * 4096, 4096);
	/* the last, partial block */
	f.dm.flip_at = f.size - 1;
	assert_int_equal(qs_source_pread(v, buf, 1, f.size - 1), -EIO);
	assert_int_equal(qs_source_pread(v, buf, 4096, f.size - 100 - 4096), 0);
	assert_memory_equal(buf, f.data + f.size - 100 - 4096, 4096);
	qs_source_close(v);
	fixture_free(&f);
}

/* A flipped byte in a level-0 tree block fails the data blocks it covers, and only them. */
static void test_flip_tree(void **state)
{
	struct fixture f;
	struct qs_source *v;
	uint8_t buf[4096];
	char want[160];
	uint64_t l0 = 0;

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, 300 * 4096, 17);   /* level 0: 3 blocks, level 1: 1 */
	assert_int_equal(f.g.levels, 2);
	l0 = f.g.level_offset[0] + 4096;                            /* level 0 block 1: data blocks 128..255 */
	v = fixture_open(&f, 0);
	f.hm.flip_at = l0 + 4000;                                   /* digest 125: data block 253's */
	f.hm.flips_left = -1;
	assert_int_equal(qs_source_pread(v, buf, 10, 200 * 4096), -EIO);
	snprintf(want, sizeof(want), "verity: tree level 0 block 1 (offset %llu of tree) does not match its hash "
		 "in level 1", (unsigned long long)l0);
	assert_string_equal(qs_last_error(), want);
	assert_int_equal(qs_source_pread(v, buf, 10, 128 * 4096), -EIO);
	assert_int_equal(qs_source_pread(v, buf, 4096, 127 * 4096), 0);
	assert_memory_equal(buf, f.data + 127 * 4096, 4096);
	assert_int_equal(qs_source_pread(v, buf, 4096, 256 * 4096), 0);
	assert_memory_equal(buf, f.data + 256 * 4096, 4096);
	qs_source_close(v);
	/* the top block: nothing reads, and the message says the root */
	v = fixture_open(&f, 0);
	f.hm.flip_at = f.g.level_offset[1] + 5;
	f.hm.flips_left = -1;
	assert_int_equal(qs_source_pread(v, buf, 10, 0), -EIO);
	assert_non_null(strstr(qs_last_error(), "tree level 1 block 0"));
	assert_non_null(strstr(qs_last_error(), "does not match the root hash"));
	qs_source_close(v);
	fixture_free(&f);
}

/* A corruption seen once, in data or in the tree, heals on the re-read. */
static void test_transient(void **state)
{
	struct fixture f;
	struct qs_source *v;
	struct qs_verity_stats st;
	uint8_t buf[8192];

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, 300 * 4096, 19);
	v = fixture_open(&f, 0);
	f.dm.flip_at = 77 * 4096 + 5;
	f.dm.flips_left = 1;
	assert_int_equal(qs_source_pread(v, buf, sizeof(buf), 77 * 4096), 0);
	assert_memory_equal(buf, f.data + 77 * 4096, sizeof(buf));
	f.hm.flip_at = f.g.level_offset[0] + 2 * 4096 + 3;
	f.hm.flips_left = 1;
	assert_int_equal(qs_source_pread(v, buf, 100, 290 * 4096), 0);
	assert_memory_equal(buf, f.data + 290 * 4096, 100);
	assert_int_equal(qs_verity_source_stats(v, &st), 0);
	assert_int_equal(st.rereads, 2);
	assert_int_equal(st.failures, 0);
	/* twice in a row is not transient */
	f.dm.flip_at = 3 * 4096;
	f.dm.flips_left = 2;
	assert_int_equal(qs_source_pread(v, buf, 10, 3 * 4096), -EIO);
	qs_source_close(v);
	fixture_free(&f);
}

/*
 * The bytes of a read's first and last blocks outside the read are checked
 * too: a flip there once heals on the re-read, a lasting one fails the read
 * and returns none of it.
 */
static void test_edges(void **state)
{
	struct fixture f;
	struct qs_source *v;
	struct qs_verity_stats st;
	uint8_t buf[2 * 4096];

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, 300 * 4096 + 1000, 23);
	v = fixture_open(&f, 0);
	f.dm.flip_at = 10 * 4096 + 7;                   /* before the read's start */
	f.dm.flips_left = 1;
	assert_int_equal(qs_source_pread(v, buf, 5000, 10 * 4096 + 100), 0);
	assert_memory_equal(buf, f.data + 10 * 4096 + 100, 5000);
	f.dm.flip_at = 20 * 4096 + 4000;                /* after its end */
	f.dm.flips_left = 1;
	assert_int_equal(qs_source_pread(v, buf, 3000, 20 * 4096 + 50), 0);
	assert_memory_equal(buf, f.data + 20 * 4096 + 50, 3000);
	f.dm.flip_at = f.size - 2;                      /* after its end in the last, partial block */
	f.dm.flips_left = 1;
	assert_int_equal(qs_source_pread(v, buf, 500, 300 * 4096 + 100), 0);
	assert_memory_equal(buf, f.data + 300 * 4096 + 100, 500);
	assert_int_equal(qs_verity_source_stats(v, &st), 0);
	assert_int_equal(st.rereads, 3);
	assert_int_equal(st.failures, 0);
	f.dm.flip_at = 30 * 4096 + 1;
	f.dm.flips_left = -1;
	memset(buf, 0xaa, sizeof(buf));
	assert_int_equal(qs_source_pread(v, buf, 4096, 30 * 4096 + 10), -EIO);
	assert_true(all_zero(buf, 4096));
	f.dm.flip_at = 40 * 4096 + 4000;
	memset(buf, 0xaa, sizeof(buf));
	assert_int_equal(qs_source_pread(v, buf, 100, 40 * 4096), -EIO);
	assert_true(all_zero(buf, 100));
	assert_int_equal(qs_source_pread(v, buf, 4096, 29 * 4096), 0);
	assert_memory_equal(buf, f.data + 29 * 4096, 4096);
	assert_int_equal(qs_source_pread(v, buf, 100, 41 * 4096), 0);
	assert_memory_equal(buf, f.data + 41 * 4096, 100);
	qs_source_close(v);
	fixture_free(&f);
}

/* The cache of tree blocks holds at most its slots, and a big one reads each tree block once. */
static void test_cache_bound(void **state)
{
	struct fixture f;
	struct qs_source *v;
	struct qs_verity_stats st;
	uint8_t buf[512];

	(void)state;
	fixture_make(&f, "sha256", 512, 512, 400000, 23);   /* 16 digests a block: 49 + 4 + 1 tree blocks */
	v = fixture_open(&f, 8 * 512);
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t off = 0; off + sizeof(buf) <= f.size; off += 4096) {
			assert_int_equal(qs_source_pread(v, buf, sizeof(buf), off), 0);
			assert_memory_equal(buf, f.data + off, sizeof(buf));
		}
	}
	assert_int_equal(qs_verity_source_stats(v, &st), 0);
	assert_int_equal(st.tree_cache_slots, 8);
	assert_true(st.tree_blocks_cached <= 8);
	assert_true(st.tree_blocks_read > f.g.hash_blocks);       /* evicted and read again */
	qs_source_close(v);
	v = fixture_open(&f, 1 << 20);
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t off = 0; off + sizeof(buf) <= f.size; off += 4096)
			assert_int_equal(qs_source_pread(v, buf, sizeof(buf), off), 0);
	}
	assert_int_equal(qs_verity_source_stats(v, &st), 0);
	assert_int_equal(st.tree_blocks_read, st.tree_blocks_cached);
	assert_true(st.tree_blocks_read <= f.g.hash_blocks);
	qs_source_close(v);
	fixture_free(&f);
}

struct reader_arg {
	struct fixture *f;
	struct qs_source *v;
	uint64_t bad_block;         /* reads touching it must fail */
	unsigned seed;
	int wrong;                  /* reads that gave wrong bytes or the wrong result */
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	uint8_t buf[20000];

	for (int i = 0; i < 3000; i++) {
		a->seed = a->seed * 1103515245u + 12345u;
		uint64_t off = (a->seed >> 4) % (a->f->size - 1);
		size_t len = 1 + (a->seed >> 8) % sizeof(buf);

		if (len > a->f->size - off)
			len = (size_t)(a->f->size - off);
		bool touches = off / 4096 <= a->bad_block && (off + len - 1) / 4096 >= a->bad_block;
		int ret = qs_source_pread(a->v, buf, len, off);

		if (touches ? ret != -EIO : ret != 0 || memcmp(buf, a->f->data + off, len) != 0)
			a->wrong++;
	}
	return NULL;
}

/* Readers at once on a cache of a few blocks: right bytes everywhere but the one bad block. */
static void test_concurrent(void **state)
{
	struct fixture f;
	struct qs_source *v;
	pthread_t t[4];
	struct reader_arg a[4];

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, (4u << 20) + 1234, 29);
	v = fixture_open(&f, 8 * 4096);
	f.dm.flip_at = 333 * 4096 + 1;
	f.dm.flips_left = -1;
	for (int i = 0; i < 4; i++) {
		a[i] = (struct reader_arg){ .f = &f, .v = v, .bad_block = 333, .seed = 1000u + (unsigned)i };
		assert_int_equal(pthread_create(&t[i], NULL, reader, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].wrong, 0);
	}
	qs_source_close(v);
	fixture_free(&f);
}

/* The tree alone checks buffers it is handed: whole ones pass, a flipped byte fails its block, once. */
static void test_check(void **state)
{
	struct fixture f;
	struct mem hm;
	struct qs_source *h;
	struct qs_verity *t;
	struct qs_verity_stats st;
	struct qs_verity_params p;
	uint8_t *copy;
	uint64_t last;

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, (1u << 20) + 700, 37);
	h = mem_source(&hm, f.tree, f.tree_len, "tree");
	p = f.p;
	p.data_blocks = 0;
	assert_int_equal(qs_verity_open(h, &p, f.size, f.root, 32, &t), 0);
	assert_int_equal(qs_verity_data_size(t), f.size);
	for (uint64_t off = 0; off < f.size; off += 65536)
		assert_int_equal(qs_verity_check(t, off, f.data + off, off + 65536 > f.size ? f.size - off : 65536), 0);
	/* the last, partial block; and bytes past the data are not the tree's business */
	last = f.size / 4096 * 4096;
	assert_int_equal(qs_verity_check(t, last, f.data + last, f.size - last), 0);
	copy = calloc(1, 3 * 4096);
	memcpy(copy, f.data + last, f.size - last);
	assert_int_equal(qs_verity_check(t, last, copy, 3 * 4096), 0);
	assert_int_equal(qs_verity_check(t, 3, f.data + 3, 4096), -EINVAL);
	assert_int_equal(qs_verity_check(t, 0, f.data, 5000), -EINVAL);
	memcpy(copy, f.data + 8 * 4096, 2 * 4096);
	copy[4096 + 9] ^= 1;
	assert_int_equal(qs_verity_check(t, 8 * 4096, copy, 2 * 4096), -EIO);
	assert_string_equal(qs_last_error(), "verity: data block 9 (offset 36864) does not match its hash in tree level 0");
	assert_int_equal(qs_verity_stats(t, &st), 0);
	assert_int_equal(st.rereads, 0);
	assert_int_equal(st.failures, 1);
	free(copy);
	qs_verity_close(t);
	qs_source_close(h);
	fixture_free(&f);
}

/* Open refuses short data, a short tree and a root hash of the wrong length. */
static void test_open_errors(void **state)
{
	struct fixture f;
	struct mem dm, hm;
	struct qs_source *v;

	(void)state;
	fixture_make(&f, "sha256", 4096, 4096, 100 * 4096, 31);
	f.p.data_blocks = 100;
	assert_int_equal(qs_source_open_verity(mem_source(&dm, f.data, 99 * 4096, "data"),
					       mem_source(&hm, f.tree, f.tree_len, "tree"), &f.p, f.root, 32, &v),
			 -EIO);
	assert_string_equal(qs_last_error(), "the data is 405504 bytes, the tree covers 100 blocks of 4096 bytes");
	assert_int_equal(qs_source_open_verity(mem_source(&dm, f.data, f.size, "data"),
					       mem_source(&hm, f.tree, f.tree_len - 1, "tree"), &f.p, f.root, 32, &v),
			 -EIO);
	assert_int_equal(qs_source_open_verity(mem_source(&dm, f.data, f.size, "data"),
					       mem_source(&hm, f.tree, f.tree_len, "tree"), &f.p, f.root, 20, &v),
			 -EINVAL);
	assert_string_equal(qs_last_error(), "root hash has 20 bytes, sha256's have 32");
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_matches_reference),
		cmocka_unit_test(test_superblock),
		cmocka_unit_test(test_read_all),
		cmocka_unit_test(test_flip_data),
		cmocka_unit_test(test_flip_tree),
		cmocka_unit_test(test_transient),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_cache_bound),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
