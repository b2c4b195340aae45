/*
 * meta.c - the metadata block writer.
 *
 * Each block holds up to 8 KiB of the table's byte stream, compressed if
 * that makes it smaller, behind a 16-bit header carrying its stored size
 * and an "uncompressed" bit.  References into the stream are (start of
 * the block relative to the table) << 16 | offset within the block.
 *
 * The inode and directory tables point into each other: a directory
 * header holds where its inodes' block starts, a directory inode where its
 * listing's block starts.  Those starts depend on how earlier blocks
 * compressed, which is why the streams are written first and compressed
 * after.  The dependencies only ever point backwards in writing order (a
 * listing is written after its children's inodes, a directory's inode
 * after its listing), so a block is ready once the blocks before the ones
 * its patches name are done: no cycle, whatever the tree.  How much runs
 * at once depends on the tree: mksquashfs's order interleaves listings and
 * inodes closely, so in a tree of small directories the two tables mostly
 * wait on each other in turn; the xattr pairs and the lookup tables (export,
 * fragments, ids) have no patches and use every thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "tree/spool.h"
#include "sink/sink.h"
#include "base/util.h"

#define META_SLOT (2 + SQFS_META_SIZE)  /* a stored block at most: header and data */
#define META_JOBS_MAX 256u
#define META_EMIT_CHUNK (64u << 10)   /* copied from the spill file to the image at a time */
#define META_TABLE_BATCH 64u            /* a lookup table's blocks compressed at a time: 512 KiB */

void meta_init(struct meta_writer *w, const struct qs_compressor *comp, const struct qs_compress_params *p)
{
	memset(w, 0, sizeof(*w));
	w->comp = comp;
	w->params = p;
}

void meta_free(struct meta_writer *w)
{
	for (size_t b = 0; b < w->raw_cap; b++)
		free(w->raw[b]);
	free(w->raw);
	free(w->spilled);
	free(w->patches);
	free(w->out);
	free(w->starts);
	w->raw = NULL;
	w->spilled = NULL;
	w->raw_cap = 0;
	w->patches = NULL;
	w->out = NULL;
	w->starts = NULL;
}

static int reserve(void **buf, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*buf, n * elem);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

/* Room in raw for the blocks up to byte 'end' (the new entries are NULL: zeros). */
static int reserve_blocks(struct meta_writer *w, uint64_t end)
{
	uint64_t need = (end + SQFS_META_SIZE - 1) / SQFS_META_SIZE;
	size_t old = w->raw_cap;

	if (need > SIZE_MAX / sizeof(*w->raw))
		return -ENOMEM;
	if (reserve((void **)&w->raw, &w->raw_cap, (size_t)need, sizeof(*w->raw)) < 0)
		return -ENOMEM;
	memset(w->raw + old, 0, (w->raw_cap - old) * sizeof(*w->raw));
	if (w->spill && w->raw_cap != old) {
		uint64_t *p = realloc(w->spilled, w->raw_cap * sizeof(*w->spilled));

		if (!p)
			return -ENOMEM;
		memset(p + old, 0, (w->raw_cap - old) * sizeof(*p));
		w->spilled = p;
	}
	return 0;
}

void meta_spill_init(struct meta_spill *s, const char *dir, uint64_t budget)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->dir = dir;
	s->budget = budget;
}

void meta_spill_close(struct meta_spill *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int meta_spill_attach(struct meta_writer *w, struct meta_spill *s)
{
	if (s->count == META_SPILL_TABLES || w->raw_cap)
		return -EINVAL;
	s->tables[s->count++] = w;
	w->spill = s;
	return 0;
}

static bool is_spilled(const struct meta_writer *w, size_t b)
{
	return w->spilled && w->spilled[b];
}

/* Move w's complete blocks (all but the one being written) out of memory. */
static int spill_table(struct meta_spill *s, struct meta_writer *w)
{
	size_t complete = (size_t)(w->raw_len / SQFS_META_SIZE);

	for (; w->spill_next < complete; w->spill_next++) {
		size_t b = w->spill_next;

		if (!w->raw[b])
			continue;
		if (pwrite(s->fd, w->raw[b], SQFS_META_SIZE, (off_t)s->end) != SQFS_META_SIZE) {
			int err = errno ? -errno : -EIO;

			pack_error("%s: metadata spill file: %s", s->dir, strerror(-err));
			return err;
		}
		w->spilled[b] = s->end + 1;
		s->end += SQFS_META_SIZE;
		free(w->raw[b]);
		w->raw[b] = NULL;
		s->held -= SQFS_META_SIZE;
	}
	return 0;
}

/* A block of a spilling table was allocated: past the budget, every table spills. */
static int spill_account(struct meta_writer *w)
{
	struct meta_spill *s = w->spill;
	struct spool file = { .fd = s->fd, .dir = s->dir };
	int err;

	s->held += SQFS_META_SIZE;
	if (s->held <= s->budget)
		return 0;
	if (s->fd < 0) {
		err = spool_open(&file);
		if (err)
			return err;
		s->fd = file.fd;
	}
	for (unsigned i = 0; i < s->count; i++) {
		err = spill_table(s, s->tables[i]);
		if (err)
			return err;
	}
	return 0;
}

int meta_write(struct meta_writer *w, const void *data, size_t len)
{
	const uint8_t *src = data;

	if (reserve_blocks(w, w->raw_len + len) < 0)
		return -ENOMEM;
	while (len > 0) {
		size_t b = (size_t)(w->raw_len / SQFS_META_SIZE), at = (size_t)(w->raw_len % SQFS_META_SIZE);
		size_t n = SQFS_META_SIZE - at < len ? SQFS_META_SIZE - at : len;

		if (!w->raw[b] && !all_zero(src, n)) {
			if (!(w->raw[b] = calloc(1, SQFS_META_SIZE)))
				return -ENOMEM;
			if (w->spill) {
				int err = spill_account(w);

				if (err)
					return err;
			}
		}
		if (w->raw[b])
			memcpy(w->raw[b] + at, src, n);
		src += n;
		len -= n;
		w->raw_len += n;
	}
	return 0;
}

int meta_write_zeros(struct meta_writer *w, uint64_t len)
{
	if (reserve_blocks(w, w->raw_len + len) < 0)
		return -ENOMEM;
	/* Allocated blocks start zeroed, and a block is never written twice. */
	w->raw_len += len;
	return 0;
}

int meta_write_start(struct meta_writer *w, const struct meta_writer *target, uint32_t block)
{
	uint8_t placeholder[4] = { 0 };

	if (w->target && w->target != target)
		return -EINVAL;
	w->target = target;
	if (reserve((void **)&w->patches, &w->patch_cap, w->patch_count + 1, sizeof(*w->patches)) < 0)
		return -ENOMEM;
	w->patches[w->patch_count++] = (struct meta_patch){ .pos = w->raw_len, .block = block };
	return meta_write(w, placeholder, sizeof(placeholder));
}

/* One table's state during meta_compress(). */
struct meta_job {
	struct meta_writer *w;
	struct meta_job *target;    /* whose starts the patches need, or NULL */
	size_t blocks;
	size_t taken, done;         /* blocks handed out; contiguous blocks finished */
	bool *finished;
	uint32_t *need;             /* per block: target blocks that must be done first */
	size_t *first_patch;        /* per block: its first patch (they may straddle blocks) */
	uint8_t **slots;            /* per block: the stored block, header included */
	uint16_t *stored;           /* per block: bytes stored, header included */
	const uint8_t *zero_slot;   /* a full block of zeros without patches, stored (shared) */
	uint16_t zero_stored;
	bool to_file;               /* the table spills: each block done goes to the spill file */
};

struct meta_run {
	struct meta_job *jobs;
	size_t n;
	size_t remaining;           /* blocks not yet finished */
	int error;
	pthread_mutex_t lock;
	pthread_cond_t progress;
};

static int job_init(struct meta_job *j)
{
	struct meta_writer *w = j->w;
	size_t p = 0;

	j->blocks = (w->raw_len + SQFS_META_SIZE - 1) / SQFS_META_SIZE;
	j->finished = calloc(j->blocks + 1, sizeof(*j->finished));
	j->need = calloc(j->blocks + 1, sizeof(*j->need));
	j->first_patch = calloc(j->blocks + 1, sizeof(*j->first_patch));
	j->slots = calloc(j->blocks + 1, sizeof(*j->slots));
	j->stored = calloc(j->blocks + 1, sizeof(*j->stored));
	w->starts = calloc(j->blocks + 1, sizeof(*w->starts));
	if (!j->finished || !j->need || !j->first_patch || !j->slots || !j->stored || !w->starts)
		return -ENOMEM;
	/*
	 * A spilling table's blocks get room for their worst case in the
	 * file, a hole but for what they take: the table is contiguous there.
	 */
	if (w->spill && w->spill->fd >= 0) {
		j->to_file = true;
		w->out_at = w->spill->end;
		w->spill->end += (uint64_t)j->blocks * META_SLOT;
	}
	/* A patch belongs to every block its four bytes touch. */
	for (size_t b = 0; b < j->blocks; b++) {
		uint64_t lo = (uint64_t)b * SQFS_META_SIZE, hi = lo + SQFS_META_SIZE;

		while (p < w->patch_count && w->patches[p].pos + 4 <= lo)
			p++;
		j->first_patch[b] = p;
		for (size_t q = p; q < w->patch_count && w->patches[q].pos < hi; q++)
			if (w->patches[q].block > j->need[b])
				j->need[b] = w->patches[q].block;
	}
	return 0;
}

static void job_free(struct meta_job *j)
{
	free(j->finished);
	free(j->need);
	free(j->first_patch);
	for (size_t b = 0; j->slots && b < j->blocks; b++)
		if (j->slots[b] != j->zero_slot)
			free(j->slots[b]);
	free(j->slots);
	free(j->stored);
}

/* Under the lock: a table whose next block can start now, or NULL. */
static struct meta_job *ready_job(struct meta_run *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct meta_job *j = &r->jobs[i];

		if (j->taken < j->blocks && (!j->target || j->target->done >= j->need[j->taken]))
			return j;
	}
	return NULL;
}

/* Does any patch touch the 'len' bytes of the stream from 'lo'? */
static bool patched(const struct meta_job *j, size_t b, uint64_t lo, size_t len)
{
	size_t q = j->first_patch[b];

	return q < j->w->patch_count && j->w->patches[q].pos < lo + len;
}

/*
 * Compress 'len' bytes of buf into a fresh stored block (header and data)
 * at *out; a table with no compressor (mksquashfs -noI and the like) keeps
 * every block as it is.
 */
static int store_block(const struct meta_writer *w, const uint8_t *buf, size_t len, uint8_t **out, uint16_t *stored)
{
	uint8_t slot[META_SLOT];
	ssize_t n = w->comp ? w->comp->compress(w->params, buf, len, slot + 2, SQFS_META_SIZE) : 0;

	if (n < 0) {
		pack_error("metadata compression failed: %s", qs_last_error());
		return (int)n;
	}
	if (n == 0 || (size_t)n >= len) {
		memcpy(slot + 2, buf, len);
		sqfs_put16(slot, (uint16_t)(len | SQFS_META_UNCOMPRESSED));
		n = (ssize_t)len;
	} else {
		sqfs_put16(slot, (uint16_t)n);
	}
	*stored = (uint16_t)(2 + n);
	*out = malloc(*stored);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, slot, *stored);
	return 0;
}

/* Patch and compress block b of j into its slot (no lock held: its inputs are final). */
static int compress_block(struct meta_job *j, size_t b, uint8_t *buf)
{
	struct meta_writer *w = j->w;
	uint64_t lo = (uint64_t)b * SQFS_META_SIZE;
	size_t len = w->raw_len - lo < SQFS_META_SIZE ? (size_t)(w->raw_len - lo) : SQFS_META_SIZE;

	if (!w->raw[b] && !is_spilled(w, b) && len == SQFS_META_SIZE && j->zero_slot && !patched(j, b, lo, len)) {
		j->slots[b] = (uint8_t *)j->zero_slot;
		j->stored[b] = j->zero_stored;
		return 0;
	}
	if (w->raw[b]) {
		/* The stream's block is read for the last time: its memory goes now, not at the end. */
		memcpy(buf, w->raw[b], len);
		free(w->raw[b]);
		w->raw[b] = NULL;
	} else if (is_spilled(w, b)) {
		ssize_t n = pread(w->spill->fd, buf, len, (off_t)(w->spilled[b] - 1));

		if (n != (ssize_t)len) {
			int err = n < 0 ? -errno : -EIO;

			pack_error("%s: metadata spill file: %s", w->spill->dir, strerror(-err));
			return err;
		}
	} else {
		memset(buf, 0, len);
	}
	for (size_t q = j->first_patch[b]; q < w->patch_count && w->patches[q].pos < lo + len; q++) {
		uint8_t field[4];

		sqfs_put32(field, (uint32_t)j->target->w->starts[w->patches[q].block]);
		for (unsigned k = 0; k < 4; k++)
			if (w->patches[q].pos + k >= lo && w->patches[q].pos + k < lo + len)
				buf[w->patches[q].pos + k - lo] = field[k];
	}
	return store_block(w, buf, len, &j->slots[b], &j->stored[b]);
}

/* Runs of zero blocks (sparse files' block lists) are compressed once, not once per block. */
static int prepare_zero_slot(struct meta_job *j)
{
	static const uint8_t zeros[SQFS_META_SIZE];
	uint8_t *slot;
	size_t absent = 0;

	for (size_t b = 0; b + 1 < j->blocks; b++)
		absent += !j->w->raw[b] && !is_spilled(j->w, b);
	if (absent < 2)
		return 0;
	if (store_block(j->w, zeros, SQFS_META_SIZE, &slot, &j->zero_stored) < 0)
		return -ENOMEM;
	j->zero_slot = slot;
	return 0;
}

/* Under the lock: a spilling table's block d, placed, goes to the file and out of memory. */
static int block_out(struct meta_job *j, size_t d)
{
	ssize_t n = pwrite(j->w->spill->fd, j->slots[d], j->stored[d], (off_t)(j->w->out_at + j->w->starts[d]));

	if (n != (ssize_t)j->stored[d])
		return n < 0 ? -errno : -ENOSPC;   /* said by the worker, once */
	if (j->slots[d] != j->zero_slot)
		free(j->slots[d]);
	j->slots[d] = NULL;
	return 0;
}

/* Under the lock: block b is done; extend the run of finished blocks and their starts. */
static int block_done(struct meta_job *j, size_t b)
{
	j->finished[b] = true;
	while (j->done < j->blocks && j->finished[j->done]) {
		j->w->starts[j->done + 1] = j->w->starts[j->done] + j->stored[j->done];
		if (j->to_file) {
			int err = block_out(j, j->done);

			if (err)
				return err;
		}
		j->done++;
	}
	return 0;
}

static void *meta_worker(void *arg)
{
	struct meta_run *r = arg;
	uint8_t buf[SQFS_META_SIZE];

	pthread_mutex_lock(&r->lock);
	while (!r->error && r->remaining > 0) {
		struct meta_job *j = ready_job(r);
		size_t b;
		int err;

		if (!j) {
			pthread_cond_wait(&r->progress, &r->lock);
			continue;
		}
		b = j->taken++;
		pthread_mutex_unlock(&r->lock);
		err = compress_block(j, b, buf);
		pthread_mutex_lock(&r->lock);
		if (err && !r->error)
			r->error = err;
		if (!err) {
			err = block_done(j, b);
			if (err && !r->error)
				pack_error("%s: metadata spill file: %s", j->w->spill->dir, strerror(-err));
		}
		if (err && !r->error)
			r->error = err;
		if (!err)
			r->remaining--;
		pthread_cond_broadcast(&r->progress);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static int run_workers(struct meta_run *r, unsigned jobs)
{
	pthread_t threads[META_JOBS_MAX];
	unsigned started = 0;

	if (jobs > META_JOBS_MAX)
		jobs = META_JOBS_MAX;
	if (jobs > r->remaining)
		jobs = (unsigned)r->remaining;
	/* The calling thread is one of the workers. */
	while (started + 1 < jobs && pthread_create(&threads[started], NULL, meta_worker, r) == 0)
		started++;
	meta_worker(r);
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	return r->error;
}

/* Lay each table's stored blocks out back to back. */
static int gather(struct meta_job *j)
{
	struct meta_writer *w = j->w;

	w->starts_count = j->blocks;
	w->out_len = w->starts[j->blocks];
	if (j->to_file)
		return 0;           /* there already, in order */
	w->out = malloc(w->out_len + 1);
	if (!w->out)
		return -ENOMEM;
	for (size_t b = 0; b < j->blocks; b++) {
		memcpy(w->out + w->starts[b], j->slots[b], j->stored[b]);
		if (j->slots[b] != j->zero_slot)
			free(j->slots[b]);
		j->slots[b] = NULL;
	}
	return 0;
}

int meta_compress(struct meta_writer *const *ws, size_t n, unsigned jobs)
{
	struct meta_run r = { .n = n };
	int err = 0;

	r.jobs = calloc(n + 1, sizeof(*r.jobs));
	if (!r.jobs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		r.jobs[i].w = ws[i];
	for (size_t i = 0; !err && i < n; i++) {
		err = job_init(&r.jobs[i]);
		if (!err)
			err = prepare_zero_slot(&r.jobs[i]);
		r.remaining += r.jobs[i].blocks;
		for (size_t k = 0; !err && ws[i]->target && k <= n; k++) {
			if (k == n)
				err = -EINVAL;      /* a patch into a table not compressed with it */
			else if (ws[k] == ws[i]->target) {
				r.jobs[i].target = &r.jobs[k];
				break;
			}
		}
	}
	if (!err) {
		pthread_mutex_init(&r.lock, NULL);
		pthread_cond_init(&r.progress, NULL);
		err = run_workers(&r, jobs ? jobs : 1);
		pthread_mutex_destroy(&r.lock);
		pthread_cond_destroy(&r.progress);
	}
	for (size_t i = 0; !err && i < n; i++)
		err = gather(&r.jobs[i]);
	for (size_t i = 0; i < n; i++) {
		job_free(&r.jobs[i]);
		free((void *)r.jobs[i].zero_slot);
	}
	free(r.jobs);
	return err;
}

int meta_emit(const struct meta_writer *w, struct pack_sink *sink)
{
	uint8_t buf[META_EMIT_CHUNK];

	if (w->out || w->out_len == 0)
		return sink_append(sink, w->out, w->out_len);
	for (size_t done = 0; done < w->out_len;) {
		size_t len = w->out_len - done < sizeof(buf) ? w->out_len - done : sizeof(buf);
		ssize_t n = pread(w->spill->fd, buf, len, (off_t)(w->out_at + done));
		int err;

		if (n != (ssize_t)len) {
			err = n < 0 ? -errno : -EIO;
			pack_error("%s: metadata spill file: %s", w->spill->dir, strerror(-err));
			return err;
		}
		err = sink_append(sink, buf, len);
		if (err)
			return err;
		done += len;
	}
	return 0;
}

/*
 * A lookup table is compressed META_TABLE_BATCH blocks at a time: its
 * blocks have no patches, so the bytes are the same as at once, and the
 * export table of a million inodes (8 MB) is never held whole, raw or
 * compressed.
 */
int meta_write_table_from(struct pack_sink *sink, const struct qs_compressor *comp,
			  const struct qs_compress_params *p, unsigned jobs, size_t len, meta_fill_fn fill,
			  void *arg, uint64_t *start)
{
	size_t blocks = (len + SQFS_META_SIZE - 1) / SQFS_META_SIZE, b = 0;
	size_t batch = len < (size_t)META_TABLE_BATCH * SQFS_META_SIZE ? len : (size_t)META_TABLE_BATCH * SQFS_META_SIZE;
	uint8_t *index = malloc(blocks * 8 + 1), *buf = malloc(batch + 1);
	int err = index && buf ? 0 : -ENOMEM;

	for (size_t off = 0; !err && off < len;) {
		size_t n = len - off < batch ? len - off : batch;
		struct meta_writer w, *ws = &w;
		uint64_t base = sink->written;

		fill(arg, buf, off, n);
		meta_init(&w, comp, p);
		err = meta_write(&w, buf, n);
		if (!err)
			err = meta_compress(&ws, 1, jobs);
		if (!err)
			err = sink_append(sink, w.out, w.out_len);
		for (size_t i = 0; !err && i < w.starts_count; i++, b++)
			sqfs_put64(index + 8 * b, base + w.starts[i]);
		meta_free(&w);
		off += n;
	}
	if (!err) {
		*start = sink->written;
		err = sink_append(sink, index, blocks * 8);
	}
	free(index);
	free(buf);
	return err;
}

static void fill_copy(void *arg, uint8_t *buf, size_t off, size_t len)
{
	memcpy(buf, (const uint8_t *)arg + off, len);
}

int meta_write_table(struct pack_sink *sink, const struct qs_compressor *comp,
		     const struct qs_compress_params *p, unsigned jobs, const uint8_t *entries, size_t len,
		     uint64_t *start)
{
	return meta_write_table_from(sink, comp, p, jobs, len, fill_copy, (void *)entries, start);
}
