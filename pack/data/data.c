/*
 * data.c - regular files' contents: read, split into blocks, deduplicate.
 *
 * A file is blocks of block_size bytes, the last one possibly short.  A
 * block of zeros is stored as a hole (size 0, nothing written), as
 * mksquashfs does.  The tail goes into a fragment when fragments are on.
 * Before a file is read for writing, files whose size matches another
 * file's are hashed and compared with earlier files of that size; an
 * identical one is not written again but shares the earlier file's data.
 * Each file is opened once (by the prefetcher, prefetch.c, where it comes
 * from a source directory), and a file of one block is read once: its
 * hash, the comparison and the fragment all use that one read.  Its
 * xattrs are read then too (scan_dir.c leaves them for this).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "dedup.h"
#include "tree/spill.h"
#include "fragment.h"
#include "pipeline.h"
#include "sink/sink.h"
#include "base/util.h"
#include "base/progress.h"
#include "scan/scan.h"
#include "scan/srcdir.h"
#include "prefetch.h"

/*
 * The archive spool's bytes around the last small read.  An archive's
 * small files lie side by side in the spool, a directory's together, and
 * the data phase reads them in the tree's order: one read of this much
 * serves the next hundreds.  A tar of 500,000 files of 5-10 bytes was
 * 500,000 pread()s.  Reads of SPOOL_WINDOW_READ_MAX or more bypass it.
 */
#define SPOOL_WINDOW (64u << 10)
#define SPOOL_WINDOW_READ_MAX (4u << 10)

struct spool_window {
	uint8_t *buf;               /* SPOOL_WINDOW bytes, or NULL: not used */
	uint64_t pos;               /* the spool offset of buf[0] */
	size_t len;
};

struct data_writer {
	struct data_config cfg;
	struct srcdir_cache dirs;   /* source directories, reopened safely */
	struct pipeline *pipe;
	struct frag_packer frags;
	struct dedup_index *dedup;
	struct spill *spill;        /* the tree's, paged out as the files are written */
	struct prefetch *prefetch;  /* opens source files ahead, or NULL */
	struct xattr_scratch *xattr_buf;
	uint8_t *buf_a, *buf_b;     /* for hashing and comparing */
	struct spool_window window;
	uint64_t dedup_bytes, dedup_files;
	uint64_t empty_files;
	int error;
};

/* An open file's bytes: a source file, a range of the archive spool, or a file of the image appended to. */
struct content {
	struct qs_file *stored;     /* the last: read back through libquash */
	int fd;
	uint64_t base;
	bool owned;
	struct spool_window *window; /* the spool's, for its bytes; else NULL */
	const uint8_t *cache;       /* bytes [0, cache_len) already read, or NULL */
	uint64_t cache_len;
	unsigned limit;             /* data_config.input_limit, for reads of source files */
	char name[PATH_MAX];        /* for messages */
};

bool data_has_fragment(const struct data_config *cfg, uint64_t size)
{
	return cfg->fragments && size % cfg->block_size != 0 && (size < cfg->block_size || cfg->tail_packing);
}

/* Open a file's bytes; 'ahead': the file the data phase is at, which the prefetcher may have opened. */
static int content_open(struct data_writer *w, struct pack_inode *file, struct content *c, bool ahead)
{
	c->stored = NULL;
	c->window = NULL;
	c->cache = NULL;
	c->cache_len = 0;
	if (file->stored) {
		struct qs_inode qi;
		int err = qs_inode_read(w->cfg.stored, file->u.file.content.stored_ref, &qi);

		snprintf(c->name, sizeof(c->name), "the image appended to");
		c->owned = false;
		c->fd = -1;
		if (!err)
			err = qs_file_open(w->cfg.stored, &qi, &c->stored);
		if (err)
			pack_error("%s: %s", c->name, qs_last_error());
		return err;
	}
	c->owned = file->srcdir != 0;
	c->limit = w->cfg.input_limit;
	if (!c->owned) {
		snprintf(c->name, sizeof(c->name), "archive spool");
		c->fd = w->cfg.spool_fd;
		c->base = file->u.file.content.spool_offset;
		c->window = w->window.buf ? &w->window : NULL;
		return 0;
	}
	snprintf(c->name, sizeof(c->name), "%s/%s", tree_srcdir(w->dirs.tree, file)->path, tree_file_name(file));
	c->base = 0;
	c->fd = ahead && w->prefetch ? prefetch_take(w->prefetch, file) : PREFETCH_NONE;
	if (c->fd == PREFETCH_NONE)
		c->fd = srcdir_open_file(&w->dirs, file);
	if (c->fd == -ESTALE) {
		pack_error("%s: replaced or changed since the scan; not packed", c->name);
		return -ESTALE;
	}
	if (c->fd == -EACCES || c->fd == -EPERM) {
		pack_error("%s: %s; --skip-unreadable leaves such files out", c->name, strerror(-c->fd));
		return c->fd;
	}
	if (c->fd < 0) {
		pack_error("%s: %s", c->name, strerror(-c->fd));
		return c->fd;
	}
	return 0;
}

static void content_close(struct content *c)
{
	qs_file_close(c->stored);
	if (c->owned)
		close(c->fd);
}

/* A small read of the spool through its window; false if it must be read as it is. */
static bool window_read(struct content *c, void *buf, size_t len, uint64_t off)
{
	struct spool_window *sw = c->window;
	uint64_t at = c->base + off;

	if (!sw || len >= SPOOL_WINDOW_READ_MAX)
		return false;
	if (at < sw->pos || at + len > sw->pos + sw->len) {
		ssize_t n;

		do
			n = pread(c->fd, sw->buf, SPOOL_WINDOW, (off_t)at);
		while (n < 0 && errno == EINTR);
		sw->pos = at;
		sw->len = n > 0 ? (size_t)n : 0;
		if (len > sw->len)
			return false;       /* the plain read says what is wrong */
	}
	memcpy(buf, sw->buf + (at - sw->pos), len);
	return true;
}

/*
 * mksquashfs -throttle and -limit: a thread reading sources idles after
 * each read so that its busy time (reading and whatever it did since its
 * last idle) is only 'limit' percent of the whole, which slows the I/O
 * and the compression that follows it alike.
 */
static __thread struct timespec busy_since;

static void limit_input(unsigned limit)
{
	struct timespec now, idle;
	uint64_t busy, rest;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (busy_since.tv_sec == 0 && busy_since.tv_nsec == 0)
		busy_since = now;
	busy = (uint64_t)(now.tv_sec - busy_since.tv_sec) * 1000000000u + (uint64_t)now.tv_nsec -
	       (uint64_t)busy_since.tv_nsec;
	rest = busy * (100 - limit) / limit;
	idle.tv_sec = (time_t)(rest / 1000000000u);
	idle.tv_nsec = (long)(rest % 1000000000u);
	while (nanosleep(&idle, &idle) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &busy_since);
}

static int content_read(struct content *c, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	if (window_read(c, buf, len, off))
		return 0;
	if (c->cache && off + len <= c->cache_len) {
		if (p != c->cache + off)
			memcpy(p, c->cache + off, len);
		return 0;
	}
	if (c->stored) {
		ssize_t n = qs_file_pread(c->stored, buf, len, off);

		if (n >= 0 && (size_t)n != len)
			n = qs_set_error(-EIO, "file ends early");
		if (n < 0) {
			pack_error("%s: %s", c->name, qs_last_error());
			return (int)n;
		}
		return 0;
	}
	while (len > 0) {
		ssize_t n = pread(c->fd, p, len, (off_t)(c->base + off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			pack_error("%s: %s", c->name, strerror(errno));
			return -errno;
		}
		if (n == 0) {
			pack_error("%s: file shrank while being packed", c->name);
			return -EIO;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	if (c->limit > 0 && c->limit < 100)
		limit_input(c->limit);
	return 0;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	/* Checking the first byte and then comparing the buffer with itself shifted is fast and short. */
	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

/*
 * Where the next data at or after 'off' begins, so that holes need not be
 * read: SEEK_DATA where the file system knows, else 'off' itself.
 */
static uint64_t next_data(struct content *c, uint64_t off, uint64_t size)
{
	off_t at = lseek(c->fd, (off_t)(c->base + off), SEEK_DATA);

	if (at < 0)
		return errno == ENXIO ? size : off;
	return (uint64_t)at - c->base;
}

/*
 * Of the block at 'off', 'len' bytes: is it a hole?  *data caches the
 * next data's position; when it is a hole, *next is the first block
 * where data may be (every block before it a hole too).  A file of the
 * image appended to says so in its block list (appending keeps the
 * image's block size).
 */
static bool in_hole(struct content *c, uint64_t off, uint32_t len, uint64_t size, uint32_t bs,
		    uint64_t *data, uint64_t *next)
{
	if (c->stored) {
		*next = off + len;
		return qs_file_block_is_sparse(c->stored, off / bs) == 1;
	}
	if (*data < off)
		*data = next_data(c, off, size);
	if (*data < off + len)
		return false;
	*next = *data < size ? *data / bs * bs : size;
	return true;
}

/*
 * Hash the open file 'c'.  A file of one block stays in buf_a, as c's
 * cache: what reads it next (the comparison, the fragment) reads no more.
 * A run of all-zero blocks is hashed as its length, so that holes are
 * skipped, never read (a tar of a few KiB can declare a sparse file of
 * terabytes), and a file whose zeros
 * are holes hashes as the same file with its zeros written.
 */
static int hash_content(struct data_writer *w, struct pack_inode *file, struct content *c)
{
	uint32_t bs = w->cfg.block_size;
	uint64_t size = file->u.file.size, h = size, data = 0, next, zeros = 0;
	bool read_whole = size <= bs;       /* one block, and not a hole */
	int err = 0;

	if (size <= DEDUP_EXACT_MAX) {
		/* The bytes themselves: a key the index can trust without reading the files again. */
		err = content_read(c, w->buf_a, (size_t)size, 0);
		h = 0;
		memcpy(&h, w->buf_a, (size_t)size);
		c->cache = w->buf_a;
		c->cache_len = size;
		file->u.file.hash = h;
		return err;
	}
	for (uint64_t off = 0; !err && off < size;) {
		uint32_t len = size - off < bs ? (uint32_t)(size - off) : bs;

		if (in_hole(c, off, len, size, bs, &data, &next)) {
			zeros += (next - off + bs - 1) / bs;
			off = next;
			read_whole = false;
			continue;
		}
		err = content_read(c, w->buf_a, len, off);
		off += len;
		if (err || all_zero(w->buf_a, len)) {
			zeros++;
			continue;
		}
		if (zeros)
			h = pack_hash(h, &zeros, sizeof(zeros));
		zeros = 0;
		h = pack_hash(h, w->buf_a, len);
	}
	if (zeros)
		h = pack_hash(h, &zeros, sizeof(zeros));
	if (!err && read_whole) {
		c->cache = w->buf_a;
		c->cache_len = size;
	}
	file->u.file.hash = h;
	return err;
}

static int hash_file(struct data_writer *w, struct pack_inode *file)
{
	struct content c;
	int err = content_open(w, file, &c, false);

	if (err)
		return err;
	err = hash_content(w, file, &c);
	content_close(&c);
	return err;
}

/* The file being written, open, for dedup_find()'s comparisons. */
struct current {
	struct data_writer *w;
	struct content *c;
};

/*
 * 'a' is the current file (read through its open content), 'b' an earlier
 * one.  Blocks that are holes in both are not read.
 */
static int same_contents(struct pack_inode *a, struct pack_inode *b, void *arg)
{
	struct current *cur = arg;
	struct data_writer *w = cur->w;
	uint32_t bs = w->cfg.block_size;
	uint64_t size = a->u.file.size, data_a = 0, data_b = 0, next_a, next_b;
	struct content *ca = cur->c, cb;
	int err, same = 1;

	err = content_open(w, b, &cb, false);
	if (err)
		return err;
	for (uint64_t off = 0; same && off < size;) {
		uint32_t len = size - off < bs ? (uint32_t)(size - off) : bs;

		if (in_hole(ca, off, len, size, bs, &data_a, &next_a) &&
		    in_hole(&cb, off, len, size, bs, &data_b, &next_b)) {
			off = next_a < next_b ? next_a : next_b;
			continue;
		}
		err = content_read(ca, w->buf_a, len, off);
		if (!err)
			err = content_read(&cb, w->buf_b, len, off);
		if (err)
			break;
		same = memcmp(w->buf_a, w->buf_b, len) == 0;
		off += len;
	}
	content_close(&cb);
	return err ? err : same;
}

/* First pass over the tree: sizes for deduplication, and a bound on the fragments needed. */
struct prepare {
	struct data_writer *w;
	uint64_t files;
	uint64_t opened;            /* of them, files the prefetcher would open */
};

static int prepare_file(struct pack_inode *inode, void *arg)
{
	struct prepare *pr = arg;

	spill_tick(pr->w->spill, inode);
	if (!tree_is_reg(inode) || inode->u.file.size == 0 || inode->stored)
		return 0;
	pr->files++;
	pr->opened += prefetch_wants(inode);
	return pr->w->dedup ? dedup_count_size(pr->w->dedup, inode->u.file.size) : 0;
}

/*
 * Appending: files of the old image whose size a new file has join the
 * index (read back and hashed), so that a new file identical to an old one
 * shares its stored data.  Others are never read.
 */
static int index_stored(struct pack_inode *inode, void *arg)
{
	struct data_writer *w = arg;
	int err;

	if (!tree_is_reg(inode) || !inode->stored || inode->u.file.size == 0 || inode->hash_done ||
	    !dedup_size_known(w->dedup, inode->u.file.size))
		return 0;
	inode->hash_done = true;
	err = hash_file(w, inode);
	if (!err)
		err = dedup_count_size(w->dedup, inode->u.file.size);
	if (!err)
		err = dedup_add(w->dedup, inode);
	return err;
}

int data_writer_start(const struct data_config *cfg, struct pack_sink *sink, struct pack_tree *tree,
		      struct pack_inode *const *files, size_t nfiles, struct data_writer **out)
{
	struct data_writer *w = calloc(1, sizeof(*w));
	struct prepare pr = { .w = w };
	int err;

	if (!w)
		return -ENOMEM;
	w->cfg = *cfg;
	w->spill = tree->spill;
	srcdir_cache_init(&w->dirs, tree);
	w->buf_a = malloc(cfg->block_size);
	w->buf_b = malloc(cfg->block_size);
	if (cfg->spool_fd >= 0)
		w->window.buf = malloc(SPOOL_WINDOW);   /* none: each read its own */
	w->xattr_buf = malloc(sizeof(*w->xattr_buf));
	err = (!w->buf_a || !w->buf_b || !w->xattr_buf) ? -ENOMEM : 0;
	if (!err && cfg->dedup)
		err = dedup_init(&w->dedup, w->spill);
	if (!err)
		err = tree_walk_files(tree->root, prepare_file, &pr);
	if (!err && cfg->dedup)
		err = dedup_reserve(w->dedup);
	if (!err && cfg->dedup && cfg->stored)
		err = tree_walk_files(tree->root, index_stored, w);
	if (!err)
		err = pipeline_start(cfg->comp, cfg->params, cfg->block_size, cfg->jobs, cfg->ring_bytes, sink,
				     &w->pipe);
	/* The scan is over: tests change the tree here (pack/util.c), before anything is opened. */
	pack_test_pause();
	/*
	 * Not for an archive's files: the prefetcher would only walk the tree,
	 * unbounded by its ring, and fault a paged-out tree (--memory) back in
	 * far ahead of the data phase (12 MB at once at 200,000 files).
	 */
	if (!err && pr.opened)
		err = prefetch_start(tree, files, nfiles, &w->prefetch);
	if (!err)
		err = frag_init(&w->frags, w->pipe, cfg->block_size, cfg->fragment_base, pr.files);
	w->frags.store = cfg->store_fragments;
	if (err) {
		if (err == -ENOMEM)
			pack_error("out of memory");
		data_writer_free(w);
		return err;
	}
	*out = w;
	return 0;
}

/*
 * Queue the file's blocks; holes, and blocks of zeros, are recorded as size
 * 0 and not written, unless --no-sparse asks for every block as data.
 */
static int write_blocks(struct data_writer *w, struct pack_inode *file, struct content *c)
{
	uint32_t bs = w->cfg.block_size;
	uint64_t size = file->u.file.size, data = 0;
	struct pack_extra *b = tree_blocks(file);
	uint32_t count = tree_block_count(file);
	bool positioned = false;

	for (uint32_t i = 0; i < count; i++) {
		uint64_t off = (uint64_t)i * bs;
		uint32_t len = size - off < bs ? (uint32_t)(size - off) : bs;
		struct pipeline_job *job;
		uint64_t next;
		int err;

		if (w->cfg.sparse && in_hole(c, off, len, size, bs, &data, &next)) {
			/*
			 * Every block before the one the next data is in (or to
			 * the end) is a hole; a tail in a fragment is not a block.
			 */
			uint64_t end = next < (uint64_t)count * bs ? next : (uint64_t)count * bs;

			b->sparse += end - off;
			progress_add(end - off, 0);
			i = next < size ? (uint32_t)(next / bs) - 1 : count - 1;
			continue;
		}
		job = pipeline_get(w->pipe);
		if (!job)
			return -EIO;
		err = content_read(c, job->in, len, off);
		if (err)
			return err;
		if (w->cfg.sparse && all_zero(job->in, len)) {
			/* The slot taken is simply reused by the next pipeline_get(). */
			b->sparse += len;
			progress_add(len, 0);
			continue;
		}
		job->len = len;
		job->store = w->cfg.store_data;
		job->size_slot = blocks_slot(b, i);
		if (!job->size_slot)
			return -ENOMEM;
		if (!positioned)
			job->pos_slot = &b->start;
		positioned = true;
		pipeline_submit(w->pipe, job);
	}
	if (!positioned && count > 0) {
		/* All holes: the start is simply where the next block would go. */
		struct pipeline_job *job = pipeline_get(w->pipe);

		if (!job)
			return -EIO;
		job->pos_slot = &b->start;
		pipeline_submit(w->pipe, job);
	}
	return 0;
}

static int write_tail(struct data_writer *w, struct pack_inode *file, struct content *c)
{
	uint64_t size = file->u.file.size;
	uint32_t len = (uint32_t)(size % w->cfg.block_size);
	uint8_t *at = frag_reserve(&w->frags, len, &file->u.file.fragment, &file->u.file.frag_offset);

	if (!at)
		return -EIO;
	return content_read(c, at, len, size - len);
}

/*
 * The xattrs the scan left for now (scan_dir.c), filtered as tree_finish()
 * would have, then joined to what mksquashfs -xattrs-add put on at the scan:
 * a name the file has itself is refused, as mksquashfs refuses it.
 */
static int read_xattrs(struct data_writer *w, struct pack_inode *file, struct content *c)
{
	struct pack_xattrs own = { 0 };
	int err = scan_fd_xattrs(w->xattr_buf, c->fd, &own);

	if (err == -ENOMEM)
		pack_error("out of memory");
	else if (err)
		pack_error("%s: xattrs: %s", c->name, strerror(-err));
	if (!err)
		tree_xattrs_filter(&own, w->cfg.xattrs_include, w->cfg.xattrs_exclude);
	for (uint32_t i = 0; !err && i < own.count; i++) {
		for (uint32_t k = 0; k < tree_xattrs(file)->count; k++) {
			if (strcmp(own.list[i].name, tree_xattrs(file)->list[k].name) == 0) {
				pack_error("-xattrs-add %s: a file has that xattr already (as mksquashfs, refused)",
					   own.list[i].name);
				err = -EEXIST;
				break;
			}
		}
		if (!err && tree_xattr_add(file, own.list[i].name, own.list[i].value, own.list[i].len)) {
			pack_error("out of memory");
			err = -ENOMEM;
		}
	}
	if (!err && own.count)
		tree_xattrs_normalize(tree_xattrs_mut(file));
	tree_xattrs_free(&own);
	return err;
}

int data_write_file(struct data_writer *w, struct pack_inode *file)
{
	uint64_t size = file->u.file.size;
	bool frag = data_has_fragment(&w->cfg, size);
	bool candidate;
	uint32_t count;
	struct content c;
	struct current cur = { .w = w, .c = &c };
	int err;

	if (file->data_done)
		return 0;
	file->data_done = true;
	spill_tick(w->spill, file);
	if (size == 0) {
		w->empty_files++;
		return 0;
	}
	if (!scan_size_fits(size, w->cfg.block_size)) {
		pack_error("%s: %llu bytes is more than a squashfs file of %u-byte blocks can hold",
			   file->srcdir ? tree_file_name(file) : "archive entry",
			   (unsigned long long)size, w->cfg.block_size);
		return -EFBIG;
	}
	count = (uint32_t)(size / w->cfg.block_size + (size % w->cfg.block_size && !frag));

	err = content_open(w, file, &c, true);
	if (err)
		return err;
	if (file->xattrs_pending) {
		file->xattrs_pending = false;
		err = read_xattrs(w, file, &c);
	}
	candidate = w->dedup && dedup_size_shared(w->dedup, size);
	if (!err && candidate) {
		struct dedup_hit same;

		err = hash_content(w, file, &c);
		if (!err && dedup_find(w->dedup, file, same_contents, &cur, &same, &err)) {
			file->u.file.dup_blocks = same.blocks;
			file->u.file.fragment = same.fragment;
			file->u.file.frag_offset = same.frag_offset;
			file->is_dup = true;
			w->dedup_bytes += size;
			w->dedup_files++;
			progress_add(size, 0);
			content_close(&c);
			return 0;
		}
	}
	if (!err && count)
		err = tree_blocks_new(file, count);
	if (!err)
		err = write_blocks(w, file, &c);
	if (!err && frag)
		err = write_tail(w, file, &c);
	content_close(&c);
	if (!err && candidate)
		err = dedup_add(w->dedup, file);
	return err;
}

int data_writer_finish(struct data_writer *w)
{
	int err = frag_flush(&w->frags);
	int perr = pipeline_finish(w->pipe);

	return err ? err : perr;
}

uint32_t data_fragment_count(const struct data_writer *w)
{
	return w->frags.count;
}

const struct sqfs_fragment_entry *data_fragments(const struct data_writer *w)
{
	return frag_table((struct frag_packer *)&w->frags);
}

uint64_t data_dedup_bytes(const struct data_writer *w)
{
	return w->dedup_bytes;
}

uint64_t data_dedup_files(const struct data_writer *w)
{
	return w->dedup_files;
}

uint64_t data_empty_files(const struct data_writer *w)
{
	return w->empty_files;
}

void data_writer_free(struct data_writer *w)
{
	if (!w)
		return;
	prefetch_stop(w->prefetch);
	pipeline_free(w->pipe);
	srcdir_cache_clear(&w->dirs);
	frag_free(&w->frags);
	dedup_free(w->dedup);
	free(w->buf_a);
	free(w->buf_b);
	free(w->window.buf);
	free(w->xattr_buf);
	free(w);
}
