/*
 * test_compressor.c - the six compressors behind compressor.h.
 *
 * Round trips at several levels and block sizes; corrupt, truncated and
 * oversized blocks; options blocks.  Real oracles check the formats: blocks
 * and options blocks that mksquashfs writes are decoded and compared with
 * what went in; blocks we write are read by the kernel from a loop-mounted
 * image (as root) and decoded by the command-line tools of the same format
 * (zstd, xz, xz --format=lzma, python's zlib), whose output we decode too.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "compressor.h"
#include "squashfs_fs.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static const struct qs_compressor *const all[] = {
	&qs_gzip_compressor, &qs_lzma_compressor, &qs_lzo_compressor,
	&qs_xz_compressor, &qs_lz4_compressor, &qs_zstd_compressor,
};
#define NCOMP (sizeof(all) / sizeof(all[0]))

/* ---- test data ------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

enum data_kind { DATA_ZERO, DATA_TEXT, DATA_RANDOM };

static void fill(uint8_t *buf, size_t n, enum data_kind kind, uint64_t seed)
{
	static const char *const words[] = {
		"squashfs", "block", "inode", "the", "of", "and", "fragment", "directory",
		"compressed", "a", "to", "table", "xattr", "metadata", "mount", "read",
	};
	uint64_t s = seed * 2654435761u + 1;
	size_t i = 0;

	if (kind == DATA_ZERO) {
		memset(buf, 0, n);
		return;
	}
	if (kind == DATA_RANDOM) {
		for (i = 0; i < n; i++)
			buf[i] = (uint8_t)(rng_next(&s) >> 24);
		return;
	}
	while (i < n) {
		const char *w = words[rng_next(&s) % (sizeof(words) / sizeof(words[0]))];
		for (; *w && i < n; w++)
			buf[i++] = (uint8_t)*w;
		if (i < n)
			buf[i++] = rng_next(&s) % 11 ? ' ' : '\n';
	}
}

static uint8_t *xmalloc(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	return p;
}

/* Compress, decompress into a buffer of exactly len bytes (ASan sees any overrun), compare. */
static void round_trip(const struct qs_compressor *c, const struct qs_compress_params *p,
		       const uint8_t *data, size_t len, enum data_kind kind)
{
	uint8_t *packed = xmalloc(len), *out = xmalloc(len);
	ssize_t n, m;

	n = c->compress(p, data, len, packed, len);
	if (n < 0)
		fail_msg("%s level %d: compress of %zu bytes failed: %s", c->name, p->level, len,
			 qs_last_error());
	assert_true((size_t)n < len);
	if (kind == DATA_RANDOM) {
		/* Random data does not shrink: the caller must be told to store it raw. */
		assert_int_equal(n, 0);
	} else {
		assert_true(n > 0);
		m = c->decompress(NULL, packed, (size_t)n, out, len);
		if (m != (ssize_t)len)
			fail_msg("%s level %d: decompress of %zd bytes gave %zd: %s", c->name, p->level, n,
				 m, qs_last_error());
		assert_memory_equal(out, data, len);
	}
	free(packed);
	free(out);
}

struct level_case {
	const struct qs_compressor *c;
	struct qs_compress_params p;
};

static const struct level_case level_cases[] = {
	{ &qs_gzip_compressor, { .level = 1 } },
	{ &qs_gzip_compressor, { .level = 0 } },
	{ &qs_lzma_compressor, { .level = 0 } },
	{ &qs_lzma_compressor, { .level = 1 } },
	{ &qs_lzo_compressor,  { .level = 1 } },
	{ &qs_lzo_compressor,  { .level = 0 } },
	{ &qs_xz_compressor,   { .level = 0 } },
	{ &qs_xz_compressor,   { .level = 2, .xz_filters = 1 | 8 } },
	{ &qs_lz4_compressor,  { .lz4_hc = 0 } },
	{ &qs_lz4_compressor,  { .lz4_hc = 1 } },
	{ &qs_lz4_compressor,  { .lz4_hc = 1, .level = 4 } },
	{ &qs_zstd_compressor, { .level = 1 } },
	{ &qs_zstd_compressor, { .level = 0 } },
	{ &qs_zstd_compressor, { .level = 19 } },
};

static void test_round_trips(void **state)
{
	static const uint32_t sizes[] = { 4 * KIB, 8 * KIB, 128 * KIB, 1 * MIB };
	uint8_t *data = xmalloc(MIB);

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (int kind = DATA_ZERO; kind <= DATA_RANDOM; kind++) {
			fill(data, sizes[s], kind, s + 1);
			for (size_t i = 0; i < sizeof(level_cases) / sizeof(level_cases[0]); i++) {
				struct qs_compress_params p = level_cases[i].p;

				p.block_size = sizes[s];
				round_trip(level_cases[i].c, &p, data, sizes[s], kind);
			}
		}
	}
	free(data);
}

/* A short block and an empty one. */
static void test_tiny_blocks(void **state)
{
	static const uint8_t one[1] = { 'x' };
	uint8_t dst[16];

	(void)state;
	for (size_t i = 0; i < NCOMP; i++) {
		struct qs_compress_params p = { .block_size = 4 * KIB };

		assert_int_equal(all[i]->compress(&p, one, 1, dst, sizeof(dst)), 0);
		assert_int_equal(all[i]->compress(&p, one, 0, dst, sizeof(dst)), 0);
	}
}

/* ---- hostile blocks ------------------------------------------------------- */

struct packed {
	uint8_t *buf;
	size_t len;
};

static struct packed pack_text(const struct qs_compressor *c, uint8_t *data, size_t len)
{
	struct qs_compress_params p = { .block_size = (uint32_t)len };
	struct packed out = { xmalloc(len), 0 };
	ssize_t n;

	fill(data, len, DATA_TEXT, 7);
	n = c->compress(&p, data, len, out.buf, len);
	assert_true(n > 0);
	out.len = (size_t)n;
	return out;
}

/* Decoding into exactly 'cap' bytes of heap: an overrun is an ASan error. */
static ssize_t decode_into_exact(const struct qs_compressor *c, const uint8_t *src, size_t len, size_t cap)
{
	uint8_t *copy = xmalloc(len), *out = xmalloc(cap);
	ssize_t n;

	memcpy(copy, src, len);
	n = c->decompress(NULL, copy, len, out, cap);
	free(copy);
	free(out);
	return n;
}

static void assert_eio_with_message(ssize_t n)
{
	assert_int_equal(n, -EIO);
	assert_true(strlen(qs_last_error()) > 0);
}

static void test_truncated(void **state)
{
	const size_t len = 64 * KIB;
	uint8_t *data = xmalloc(len);

	(void)state;
	for (size_t i = 0; i < NCOMP; i++) {
		struct packed pk = pack_text(all[i], data, len);
		size_t cuts[] = { 0, 1, 2, pk.len / 3, pk.len / 2, pk.len - 5, pk.len - 1 };

		for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
			ssize_t n = decode_into_exact(all[i], pk.buf, cuts[k], len);

			/*
			 * lz4 and lzo blocks carry no length or checksum: a cut
			 * that lands between two sequences can decode, shorter.
			 * Everything else must notice.
			 */
			if (n >= 0 && (all[i] == &qs_lz4_compressor || all[i] == &qs_lzo_compressor))
				assert_true((size_t)n < len);
			else
				assert_eio_with_message(n);
		}
		free(pk.buf);
	}
	free(data);
}

static void test_corrupt(void **state)
{
	const size_t len = 64 * KIB;
	uint8_t *data = xmalloc(len);
	uint64_t s = 99;

	(void)state;
	for (size_t i = 0; i < NCOMP; i++) {
		struct packed pk = pack_text(all[i], data, len);
		uint8_t *bad = xmalloc(pk.len);

		for (int round = 0; round < 200; round++) {
			ssize_t n;

			memcpy(bad, pk.buf, pk.len);
			for (int f = 0; f < 1 + round % 4; f++)
				bad[rng_next(&s) % pk.len] ^= (uint8_t)(1u << (rng_next(&s) % 8));
			n = decode_into_exact(all[i], bad, pk.len, len);
			/* gzip (adler32) and xz (crc32) are checksummed: a flip is always caught. */
			if (all[i] == &qs_gzip_compressor || all[i] == &qs_xz_compressor)
				assert_true(n == -EIO || (n == (ssize_t)len && memcmp(bad, pk.buf, pk.len) == 0));
			else
				assert_true(n == -EIO || (n >= 0 && (size_t)n <= len));
		}
		/* Pure garbage. */
		for (int round = 0; round < 50; round++) {
			fill(bad, pk.len, DATA_RANDOM, (uint64_t)round + 1000);
			ssize_t n = decode_into_exact(all[i], bad, pk.len, len);
			assert_true(n == -EIO || (n >= 0 && (size_t)n <= len));
		}
		free(bad);
		free(pk.buf);
	}
	free(data);
}

static void test_cap_too_small(void **state)
{
	const size_t len = 64 * KIB;
	uint8_t *data = xmalloc(len);

	(void)state;
	for (size_t i = 0; i < NCOMP; i++) {
		struct packed pk = pack_text(all[i], data, len);

		assert_eio_with_message(decode_into_exact(all[i], pk.buf, pk.len, len - 1));
		assert_eio_with_message(decode_into_exact(all[i], pk.buf, pk.len, len / 2));
		assert_eio_with_message(decode_into_exact(all[i], pk.buf, pk.len, 1));
		free(pk.buf);
	}
	free(data);
}

/* An .lzma header that claims more than fits, or a dictionary beyond the memory limit. */
static void test_lzma_header_limits(void **state)
{
	const size_t len = 16 * KIB;
	uint8_t *data = xmalloc(len);
	struct packed pk = pack_text(&qs_lzma_compressor, data, len);

	(void)state;
	sqfs_put64(pk.buf + 5, len + 1);
	assert_eio_with_message(decode_into_exact(&qs_lzma_compressor, pk.buf, pk.len, len));
	sqfs_put64(pk.buf + 5, len);
	sqfs_put32(pk.buf + 1, 1u << 30);
	assert_eio_with_message(decode_into_exact(&qs_lzma_compressor, pk.buf, pk.len, len));
	assert_non_null(strstr(qs_last_error(), "MiB"));
	free(pk.buf);
	free(data);
}

/* ---- options blocks ------------------------------------------------------- */

static void test_lookup(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCOMP; i++) {
		assert_ptr_equal(qs_compressor_by_id(all[i]->id), all[i]);
		assert_ptr_equal(qs_compressor_by_name(all[i]->name), all[i]);
		assert_int_equal(all[i]->id, i + 1);
	}
	assert_null(qs_compressor_by_id(0));
	assert_null(qs_compressor_by_id(7));
	assert_null(qs_compressor_by_name("bzip2"));
}

static void test_options_round_trip(void **state)
{
	struct qs_compress_params p = { .block_size = 128 * KIB };
	struct qs_comp_options o;
	uint8_t buf[QS_COMP_OPTIONS_MAX];
	size_t n;

	(void)state;
	/* Defaults write nothing (except lz4, which always has a block). */
	for (size_t i = 0; i < NCOMP; i++) {
		n = all[i]->write_options(&p, buf);
		assert_true(all[i] == &qs_lz4_compressor ? n == 8 : n == 0);
		assert_int_equal(all[i]->parse_options(buf, n, &o), 0);
	}

	p.level = 5;
	assert_int_equal(n = qs_gzip_compressor.write_options(&p, buf), 8);
	assert_int_equal(qs_gzip_compressor.parse_options(buf, n, &o), 0);
	assert_true(o.present);
	assert_int_equal(o.level, 5);
	assert_int_equal(o.window_size, 15);

	assert_int_equal(n = qs_zstd_compressor.write_options(&p, buf), 4);
	assert_int_equal(qs_zstd_compressor.parse_options(buf, n, &o), 0);
	assert_int_equal(o.level, 5);

	assert_int_equal(n = qs_lzo_compressor.write_options(&p, buf), 8);
	assert_int_equal(qs_lzo_compressor.parse_options(buf, n, &o), 0);
	assert_int_equal(o.algorithm, 4);
	assert_int_equal(o.level, 5);

	p.level = 0;
	p.xz_filters = 1 | 32;
	assert_int_equal(n = qs_xz_compressor.write_options(&p, buf), 8);
	assert_int_equal(qs_xz_compressor.parse_options(buf, n, &o), 0);
	assert_int_equal(o.dictionary_size, 128 * KIB);
	assert_int_equal(o.filters, 1 | 32);

	p.lz4_hc = 1;
	assert_int_equal(n = qs_lz4_compressor.write_options(&p, buf), 8);
	assert_int_equal(qs_lz4_compressor.parse_options(buf, n, &o), 0);
	assert_int_equal(o.version, 1);
	assert_int_equal(o.flags, 1);

	/* Without a block, the defaults mksquashfs means. */
	assert_int_equal(qs_gzip_compressor.parse_options(NULL, 0, &o), 0);
	assert_false(o.present);
	assert_int_equal(o.level, 9);
	assert_int_equal(qs_zstd_compressor.parse_options(NULL, 0, &o), 0);
	assert_int_equal(o.level, 15);
	assert_int_equal(qs_lzo_compressor.parse_options(NULL, 0, &o), 0);
	assert_int_equal(o.level, 8);
}

struct hostile_options {
	const struct qs_compressor *c;
	uint8_t bytes[12];
	size_t len;
};

static const struct hostile_options hostile[] = {
	{ &qs_gzip_compressor, { 9, 0, 0, 0, 20, 0, 0, 0 }, 8 },	/* window 20 */
	{ &qs_gzip_compressor, { 9, 0, 0, 0, 7, 0, 0, 0 }, 8 },		/* window 7 */
	{ &qs_gzip_compressor, { 0, 0, 0, 0, 15, 0, 0, 0 }, 8 },	/* level 0 */
	{ &qs_gzip_compressor, { 10, 0, 0, 0, 15, 0, 0, 0 }, 8 },	/* level 10 */
	{ &qs_gzip_compressor, { 9, 0, 0, 0, 15, 0, 0, 1 }, 8 },	/* strategy bit 8 */
	{ &qs_gzip_compressor, { 9, 0, 0, 0, 15, 0 }, 6 },		/* short */
	{ &qs_xz_compressor,   { 0, 0, 0, 0, 0, 0, 0, 0 }, 8 },		/* dictionary 0 */
	{ &qs_xz_compressor,   { 0x88, 0x13, 0, 0, 0, 0, 0, 0 }, 8 },	/* 5000: not 2^n */
	{ &qs_xz_compressor,   { 0, 0, 0, 0x80, 0, 0, 0, 0 }, 8 },	/* 2 GiB */
	{ &qs_xz_compressor,   { 0, 0, 0x40, 0, 0, 0, 0, 0 }, 8 },	/* 4 MiB > any block */
	{ &qs_xz_compressor,   { 0, 0, 2, 0 }, 4 },			/* short */
	{ &qs_lzo_compressor,  { 7, 0, 0, 0, 0, 0, 0, 0 }, 8 },		/* algorithm 7 */
	{ &qs_lzo_compressor,  { 4, 0, 0, 0, 0, 0, 0, 0 }, 8 },		/* 999 at level 0 */
	{ &qs_lzo_compressor,  { 4, 0, 0, 0, 10, 0, 0, 0 }, 8 },	/* 999 at level 10 */
	{ &qs_lzo_compressor,  { 0, 0, 0, 0, 3, 0, 0, 0 }, 8 },		/* level for lzo1x_1 */
	{ &qs_lz4_compressor,  { 2, 0, 0, 0, 0, 0, 0, 0 }, 8 },		/* version 2 */
	{ &qs_lz4_compressor,  { 1, 0, 0, 0, 4, 0, 0, 0 }, 8 },		/* unknown flag */
	{ &qs_lz4_compressor,  { 1, 0, 0, 0 }, 4 },			/* short */
	{ &qs_zstd_compressor, { 0, 0, 0, 0 }, 4 },			/* level 0 */
	{ &qs_zstd_compressor, { 23, 0, 0, 0 }, 4 },			/* level 23 */
	{ &qs_zstd_compressor, { 0xff, 0xff, 0xff, 0xff }, 4 },		/* level -1 */
	{ &qs_lzma_compressor, { 1, 0, 0, 0 }, 4 },			/* lzma has none */
};

static void test_hostile_options(void **state)
{
	struct qs_comp_options o;

	(void)state;
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		qs_set_error(0, "%s", "");
		if (hostile[i].c->parse_options(hostile[i].bytes, hostile[i].len, &o) != -EINVAL)
			fail_msg("hostile options case %zu (%s) accepted", i, hostile[i].c->name);
		assert_true(strncmp(qs_last_error(), hostile[i].c->name, strlen(hostile[i].c->name)) == 0);
	}
}

static void test_bad_params(void **state)
{
	uint8_t src[4096], dst[4096];
	struct qs_compress_params p = { .block_size = 4096 };

	(void)state;
	memset(src, 'a', sizeof(src));
	p.level = 10;
	assert_int_equal(qs_gzip_compressor.compress(&p, src, sizeof(src), dst, sizeof(dst)), -EINVAL);
	assert_int_equal(qs_lzo_compressor.compress(&p, src, sizeof(src), dst, sizeof(dst)), -EINVAL);
	assert_int_equal(qs_xz_compressor.compress(&p, src, sizeof(src), dst, sizeof(dst)), -EINVAL);
	p.level = 23;
	assert_int_equal(qs_zstd_compressor.compress(&p, src, sizeof(src), dst, sizeof(dst)), -EINVAL);
	p.level = 0;
	p.xz_filters = 1u << 12;
	assert_int_equal(qs_xz_compressor.compress(&p, src, sizeof(src), dst, sizeof(dst)), -EINVAL);
}

/* ---- many threads at once ------------------------------------------------- */

struct worker {
	const struct qs_compressor *c;
	unsigned seed;
	int failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const size_t len = 32 * KIB;
	struct qs_compress_params p = { .block_size = (uint32_t)len };
	uint8_t *data = malloc(len), *packed = malloc(len), *out = malloc(len);

	for (int round = 0; round < 20 && data && packed && out; round++) {
		ssize_t n, m;

		fill(data, len, DATA_TEXT, w->seed * 100 + (unsigned)round);
		n = w->c->compress(&p, data, len, packed, len);
		m = n > 0 ? w->c->decompress(NULL, packed, (size_t)n, out, len) : -1;
		if (m != (ssize_t)len || memcmp(out, data, len) != 0)
			w->failures++;
	}
	free(data);
	free(packed);
	free(out);
	return NULL;
}

/* Per-thread contexts are made and freed as threads come and go (ASan checks leaks). */
static void test_threads(void **state)
{
	enum { THREADS = 4 };
	pthread_t tid[NCOMP][THREADS];
	struct worker w[NCOMP][THREADS];

	(void)state;
	for (size_t i = 0; i < NCOMP; i++)
		for (int t = 0; t < THREADS; t++) {
			w[i][t] = (struct worker){ all[i], (unsigned)(i * THREADS + t), 0 };
			assert_int_equal(pthread_create(&tid[i][t], NULL, worker_main, &w[i][t]), 0);
		}
	for (size_t i = 0; i < NCOMP; i++)
		for (int t = 0; t < THREADS; t++) {
			pthread_join(tid[i][t], NULL);
			assert_int_equal(w[i][t].failures, 0);
		}
}

/* ---- oracles: mksquashfs and the command-line tools ----------------------- */

static char workdir[256];

static int setup_workdir(void **state)
{
	const char *base = getenv("QUASH_WORK");

	(void)state;
	snprintf(workdir, sizeof(workdir), "%s/test_compressor.XXXXXX", base ? base : "/tmp");
	if (base)
		mkdir(base, 0755);
	return mkdtemp(workdir) ? 0 : -1;
}

static int teardown_workdir(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int have(const char *tool)
{
	return run("command -v %s >/dev/null 2>&1", tool) == 0;
}

/* A sub-test this machine cannot run: the reason, then cmocka's skip.
 * tests/run.sh counts it skipped if it allows the reason. */
#define skip_because(why) \
	do { \
		print_message("# SKIP %s\n", why); \
		skip(); \
	} while (0)

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = xmalloc((size_t)n);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

struct mksquashfs_case {
	const char *comp;
	const char *args;               /* extra mksquashfs arguments */
	struct qs_compress_params p;    /* the same settings in our terms */
};

static const struct mksquashfs_case mk_cases[] = {
	{ "gzip", "", { 0 } },
	{ "gzip", "-Xcompression-level 3", { .level = 3 } },
	{ "lzma", "", { 0 } },
	{ "lzo",  "", { 0 } },
	{ "lzo",  "-Xcompression-level 4", { .level = 4 } },
	{ "xz",   "", { 0 } },
	{ "xz",   "-Xbcj x86", { .xz_filters = 1 } },
	{ "xz",   "-Xbcj arm,sparc", { .xz_filters = 8 | 32 } },
	{ "lz4",  "", { 0 } },
	{ "lz4",  "-Xhc", { .lz4_hc = 1 } },
	{ "zstd", "", { 0 } },
	{ "zstd", "-Xcompression-level 19", { .level = 19 } },
};

/*
 * One file of one block, no fragments: the image is the superblock, the
 * options metadata block (if any), the data block, then the inode table.
 * Decode the block with our decompressor, and compare the options block with
 * what our write_options makes of the same settings.
 */
static void check_mksquashfs_image(const struct mksquashfs_case *mk, const uint8_t *data, size_t len)
{
	const struct qs_compressor *c = qs_compressor_by_name(mk->comp);
	uint8_t *img, ours[QS_COMP_OPTIONS_MAX], *out = xmalloc(len);
	size_t img_len, pos = SQFS_SUPER_SIZE, opt_len = 0, our_len;
	struct qs_compress_params p = mk->p;
	struct qs_comp_options opt;
	uint64_t inode_table;
	char path[300];

	snprintf(path, sizeof(path), "%s/img", workdir);
	img = read_file(path, &img_len);
	assert_true(img_len > SQFS_SUPER_SIZE);
	assert_int_equal(sqfs_le16(img + 20), c->id);
	p.block_size = sqfs_le32(img + 12);
	inode_table = sqfs_le64(img + 64);

	if (sqfs_le16(img + 24) & SQFS_FLAG_COMPRESSOR_OPTIONS) {
		uint16_t header = sqfs_le16(img + pos);

		assert_true(header & SQFS_META_UNCOMPRESSED);
		opt_len = header & SQFS_META_SIZE_MASK;
		assert_true(opt_len <= QS_COMP_OPTIONS_MAX);
		pos += 2;
	}
	assert_int_equal(c->parse_options(img + pos, opt_len, &opt), 0);
	our_len = c->write_options(&p, ours);
	if (our_len != opt_len || memcmp(ours, img + pos, opt_len) != 0)
		fail_msg("%s %s: our options block (%zu bytes) differs from mksquashfs's (%zu)",
			 mk->comp, mk->args, our_len, opt_len);
	pos += opt_len;

	assert_true(inode_table > pos && inode_table <= img_len);
	ssize_t n = c->decompress(&opt, img + pos, inode_table - pos, out, len);
	if (n != (ssize_t)len)
		fail_msg("%s %s: mksquashfs's block decoded to %zd: %s", mk->comp, mk->args, n, qs_last_error());
	assert_memory_equal(out, data, len);
	free(img);
	free(out);
}

static void test_mksquashfs_blocks(void **state)
{
	const size_t len = 100 * KIB;
	uint8_t *data = xmalloc(len);
	char path[300];

	(void)state;
	if (!have("mksquashfs"))
		skip_because("mksquashfs is not installed");
	fill(data, len, DATA_TEXT, 42);
	snprintf(path, sizeof(path), "%s/in", workdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/in/file", workdir);
	write_file(path, data, len);

	for (size_t i = 0; i < sizeof(mk_cases) / sizeof(mk_cases[0]); i++) {
		const struct mksquashfs_case *mk = &mk_cases[i];

		if (run("mksquashfs '%s/in' '%s/img' -comp %s %s -b 128K -noappend -no-fragments "
			"-no-xattrs -quiet -no-progress >/dev/null", workdir, workdir, mk->comp, mk->args) != 0)
			fail_msg("mksquashfs -comp %s %s failed", mk->comp, mk->args);
		check_mksquashfs_image(mk, data, len);
	}
	free(data);
}

/*
 * The kernel as the oracle for our compress side.  mksquashfs makes an image
 * with raw (uncompressed) data and inode tables holding one file of one
 * block; we put our compressed block where the raw one was, clear the
 * "uncompressed" bit in the inode's block size word, and let the kernel
 * read the file back through a loop mount.  (The kernel has no lzma.)
 */
static const struct mksquashfs_case kernel_cases[] = {
	{ "gzip", "", { .level = 1 } },
	{ "gzip", "", { 0 } },
	{ "lzo",  "", { .level = 1 } },
	{ "lzo",  "", { 0 } },
	{ "xz",   "", { 0 } },
	{ "xz",   "-Xbcj x86,arm", { .xz_filters = 1 | 8 } },
	{ "lz4",  "", { 0 } },
	{ "lz4",  "-Xhc", { .lz4_hc = 1 } },
	{ "zstd", "", { .level = 1 } },
	{ "zstd", "-Xcompression-level 19", { .level = 19 } },
};

static void put_our_block(const struct mksquashfs_case *kc, uint8_t *img, size_t img_len,
			  const uint8_t *data, size_t len)
{
	const struct qs_compressor *c = qs_compressor_by_name(kc->comp);
	struct qs_compress_params p = kc->p;
	uint64_t inode_table = sqfs_le64(img + 64), dir_table = sqfs_le64(img + 72);
	size_t pos = SQFS_SUPER_SIZE, word_at = 0;
	int words = 0;
	ssize_t n;

	if (sqfs_le16(img + 24) & SQFS_FLAG_COMPRESSOR_OPTIONS)
		pos += 2 + (sqfs_le16(img + pos) & SQFS_META_SIZE_MASK);
	assert_true(pos + len <= inode_table && dir_table <= img_len && inode_table < dir_table);
	assert_memory_equal(img + pos, data, len);      /* the raw block is where we think */

	for (size_t at = inode_table; at + 4 <= dir_table; at++)
		if (sqfs_le32(img + at) == (SQFS_BLOCK_UNCOMPRESSED | len)) {
			word_at = at;
			words++;
		}
	assert_int_equal(words, 1);

	p.block_size = sqfs_le32(img + 12);
	n = c->compress(&p, data, len, img + pos, len);
	assert_true(n > 0);
	memset(img + pos + n, 0, len - (size_t)n);
	sqfs_put32(img + word_at, (uint32_t)n);
}

static void test_kernel_reads_our_blocks(void **state)
{
	const size_t len = 100 * KIB;
	uint8_t *data = xmalloc(len), *img;
	char img_path[300], mnt[300], file[300];
	size_t img_len;

	(void)state;
	if (geteuid() != 0)
		skip_because("not root");
	if (!have("mksquashfs"))
		skip_because("mksquashfs is not installed");
	fill(data, len, DATA_TEXT, 43);
	snprintf(img_path, sizeof(img_path), "%s/kin", workdir);
	mkdir(img_path, 0755);
	snprintf(img_path, sizeof(img_path), "%s/kin/file", workdir);
	write_file(img_path, data, len);
	snprintf(img_path, sizeof(img_path), "%s/kimg", workdir);
	snprintf(mnt, sizeof(mnt), "%s/kmnt", workdir);
	snprintf(file, sizeof(file), "%s/kmnt/file", workdir);
	mkdir(mnt, 0755);

	for (size_t i = 0; i < sizeof(kernel_cases) / sizeof(kernel_cases[0]); i++) {
		const struct mksquashfs_case *kc = &kernel_cases[i];
		bool same, unmounted;

		if (run("mksquashfs '%s/kin' '%s' -comp %s %s -b 128K -noI -noD -no-fragments -no-xattrs "
			"-noappend -quiet -no-progress >/dev/null", workdir, img_path, kc->comp, kc->args) != 0)
			fail_msg("mksquashfs -comp %s failed", kc->comp);
		img = read_file(img_path, &img_len);
		put_our_block(kc, img, img_len, data, len);
		write_file(img_path, img, img_len);
		free(img);

		if (run("mount -t squashfs -o loop,ro '%s' '%s' 2>/dev/null", img_path, mnt) != 0)
			fail_msg("the kernel would not mount the %s image", kc->comp);
		same = run("cmp -s '%s' '%s/kin/file'", file, workdir) == 0;
		unmounted = run("umount '%s'", mnt) == 0;
		if (!same)
			fail_msg("%s %s level %d: the kernel read our block differently", kc->comp, kc->args,
				 kc->p.level);
		assert_true(unmounted);
	}
	free(data);
}

struct tool_case {
	const struct qs_compressor *c;
	const char *tool;
	const char *decode;     /* shell command: IN and OUT are files in the work dir */
	const char *encode;
};

/* python's zlib module: CALL is applied to the input file's bytes. */
#define PY_ZLIB(call) \
	"python3 -c 'import sys, zlib; d = open(sys.argv[1], \"rb\").read(); " \
	"sys.stdout.buffer.write(" call ")' IN > OUT"

static const struct tool_case tool_cases[] = {
	{ &qs_zstd_compressor, "zstd", "zstd -q -d -c IN > OUT", "zstd -q -19 -c IN > OUT" },
	{ &qs_xz_compressor, "xz", "xz -d -c IN > OUT", "xz -c --check=crc32 IN > OUT" },
	{ &qs_lzma_compressor, "xz", "xz --format=lzma -d -c IN > OUT", "xz --format=lzma -c IN > OUT" },
	{ &qs_gzip_compressor, "python3", PY_ZLIB("zlib.decompress(d)"), PY_ZLIB("zlib.compress(d, 6)") },
};

static void run_tool(const char *tmpl, const char *in, const char *out)
{
	char cmd[1024];
	const char *p;
	size_t o = 0;

	for (p = tmpl; *p && o < sizeof(cmd) - 300; p++) {
		if (strncmp(p, "IN", 2) == 0) {
			o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "'%s'", in);
			p++;
		} else if (strncmp(p, "OUT", 3) == 0) {
			o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "'%s'", out);
			p += 2;
		} else {
			cmd[o++] = *p;
		}
	}
	cmd[o] = '\0';
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

/* Our blocks decode with the format's own tool, and its output decodes with ours. */
static void test_tools_agree(void **state)
{
	const size_t len = 200 * KIB;
	uint8_t *data = xmalloc(len), *packed = xmalloc(len), *out = xmalloc(len), *got;
	char in[300], res[300];
	size_t got_len;

	(void)state;
	snprintf(in, sizeof(in), "%s/tool.in", workdir);
	snprintf(res, sizeof(res), "%s/tool.out", workdir);
	fill(data, len, DATA_TEXT, 5);
	for (size_t i = 0; i < sizeof(tool_cases) / sizeof(tool_cases[0]); i++) {
		const struct tool_case *tc = &tool_cases[i];
		struct qs_compress_params p = { .block_size = 256 * KIB, .xz_filters = 1 };
		ssize_t n;

		if (!have(tc->tool)) {
			print_message("no %s: skipping %s\n", tc->tool, tc->c->name);
			continue;
		}
		n = tc->c->compress(&p, data, len, packed, len);
		assert_true(n > 0);
		write_file(in, packed, (size_t)n);
		run_tool(tc->decode, in, res);
		got = read_file(res, &got_len);
		assert_int_equal(got_len, len);
		assert_memory_equal(got, data, len);
		free(got);

		write_file(in, data, len);
		run_tool(tc->encode, in, res);
		got = read_file(res, &got_len);
		n = tc->c->decompress(NULL, got, got_len, out, len);
		if (n != (ssize_t)len)
			fail_msg("%s: the tool's stream decoded to %zd: %s", tc->c->name, n, qs_last_error());
		assert_memory_equal(out, data, len);
		free(got);
	}
	free(data);
	free(packed);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_tiny_blocks),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_cap_too_small),
		cmocka_unit_test(test_lzma_header_limits),
		cmocka_unit_test(test_options_round_trip),
		cmocka_unit_test(test_hostile_options),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_mksquashfs_blocks),
		cmocka_unit_test(test_kernel_reads_our_blocks),
		cmocka_unit_test(test_tools_agree),
	};

	return cmocka_run_group_tests(tests, setup_workdir, teardown_workdir);
}
