/*
 * spill.c - the tree's memory, in a temporary file under --memory.
 *
 * mksquashfs holds its whole tree in memory, and its -mem bounds only its
 * caches: a 200-million-file pack went out of memory at 53 GB.  Here, under
 * --memory, the tree's arenas, its directories' child arrays, the export
 * table and the dedup index come from one unlinked file (the spool's kind,
 * beside the image), mapped shared in regions of SPILL_REGION bytes and
 * handed out by a bump pointer: nothing is reused, and freeing is
 * unmapping it all at the end.
 *
 * How much of it is resident is /proc/self/statm's file-backed pages less
 * those before the first region (the program's own).  Past the bound, the
 * SPILL_CHUNK pieces the walk is not in are dropped from the mapping
 * (MADV_DONTNEED): dirty pages stay in the page cache, the kernel writes
 * them to the file when it needs the room, and a touch faults them back.
 * Whatever walks the tree does so in about the order it was built (the
 * directories have their own arena for that, tree.c), so a page comes back
 * about once a walk; the dedup's random reads go through spill_peek().
 *
 * The file is sparse, and its blocks are allocated (fallocate) a
 * SPILL_CHUNK at a time as the bump pointer reaches them, so that a full
 * disk is found here rather than as a SIGBUS at a write through the
 * mapping.  The image is written beside it, so it leaves as much free as it
 * takes, and 64 MiB at least; past that the tree stays in memory from then
 * on, said once.
 *
 * A read fault maps the 16 pages around it that the page cache holds
 * (fault-around, which MADV_RANDOM does not stop), so a walk that jumps
 * maps far more than it touches: the readers that jump use spill_peek().
 *
 * What the bound costs in memory and time: docs/benchmarks.md, bench/pack-many.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "spill.h"
#include "spool.h"
#include "base/util.h"

#define SPILL_REGION      (64u << 20)   /* address space mapped at a time; the file grows by it */
#define SPILL_ALIGN       16u
#define SPILL_CHUNK       (1u << 20)    /* what a check keeps or drops: SPILL_REGION / 64 */
#define SPILL_REGIONS_MAX 65536u        /* 4 TiB of tree */
#define SPILL_ZEROS       (64u << 10)   /* written at a time where fallocate() is not supported */
#define SPILL_DISK_KEEP   (64ull << 20) /* free space the file leaves beside it, at least */

int spill_init(struct spill *s, uint64_t bound, const char *dir)
{
	struct spool file = { .fd = -1, .dir = dir };
	int err;

	memset(s, 0, sizeof(*s));
	s->bound = bound;
	s->dir = dir;
	s->fd = s->statm_fd = -1;
	s->page = sysconf(_SC_PAGESIZE);
	if (!bound)
		return 0;
	/* Made now, not when the tree first needs it: a directory it cannot be made in fails the pack before the scan. */
	err = spool_open(&file);
	s->fd = file.fd;
	return err;
}

void spill_close(struct spill *s)
{
	for (size_t i = 0; i < s->region_count; i++)
		munmap(s->regions[i].base, s->regions[i].size);
	free(s->regions);
	s->regions = NULL;
	s->region_count = 0;
	if (s->fd >= 0)
		close(s->fd);
	if (s->statm_fd >= 0)
		close(s->statm_fd);
	s->fd = s->statm_fd = -1;
}

/* Pages of this process backed by files (statm's third field), -1 if unknown. */
static long file_pages(struct spill *s)
{
	char buf[128], *p;
	ssize_t n;

	if (s->statm_fd < 0)
		s->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (s->statm_fd < 0 || (n = pread(s->statm_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return -1;
	buf[n] = '\0';
	/* "size resident shared text lib data dt" */
	p = strchr(buf, ' ');
	p = p ? strchr(p + 1, ' ') : NULL;
	return p ? strtol(p + 1, NULL, 10) : -1;
}

/* Give [off, off + len) of the file blocks of its own, zeros. */
static int reserve(int fd, uint64_t off, uint64_t len)
{
	int err = posix_fallocate(fd, (off_t)off, (off_t)len);
	uint8_t *zeros;

	if (err != EOPNOTSUPP && err != EINVAL)
		return -err;
	zeros = calloc(1, SPILL_ZEROS);
	err = zeros ? 0 : -ENOMEM;
	for (uint64_t done = 0; !err && done < len;) {
		size_t n = len - done < SPILL_ZEROS ? (size_t)(len - done) : SPILL_ZEROS;
		ssize_t w = pwrite(fd, zeros, n, (off_t)(off + done));

		if (w <= 0)
			err = w < 0 ? -errno : -ENOSPC;
		else
			done += (uint64_t)w;
	}
	free(zeros);
	return err;
}

static int region_add(struct spill *s, size_t need)
{
	size_t size = (need + SPILL_REGION - 1) / SPILL_REGION * SPILL_REGION;
	struct spill_region *r;
	void *p;

	if (s->region_count == SPILL_REGIONS_MAX)
		return -ENOSPC;
	if (!s->region_count)
		s->base_pages = file_pages(s);
	/* Sparse: blocks are reserved as the bump pointer reaches them. */
	if (ftruncate(s->fd, (off_t)(s->file_size + size)) < 0)
		return -errno;
	r = realloc(s->regions, (s->region_count + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->regions = r;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, (off_t)s->file_size);
	if (p == MAP_FAILED)
		return -errno;
	/*
	 * A page the kernel wrote out and dropped is read back alone, without
	 * readahead.  (Those still in the page cache are mapped 16 around a
	 * fault whatever the advice: fault-around.)
	 */
	madvise(p, size, MADV_RANDOM);
	r[s->region_count++] = (struct spill_region){ .base = p, .size = size, .file_off = s->file_size };
	s->file_size += size;
	return 0;
}

/* The region holding p, or NULL. */
static struct spill_region *region_of(const struct spill *s, const void *p)
{
	const uint8_t *b = p;

	for (size_t i = s && s->bound ? s->region_count : 0; i-- > 0;)
		if (b >= s->regions[i].base && b < s->regions[i].base + s->regions[i].size)
			return &s->regions[i];
	return NULL;
}

/*
 * The image is written beside the file, mostly after the tree is built: the
 * file never takes the last SPILL_DISK_KEEP of the disk, nor more than
 * what is left free beside it.
 */
static int disk_allows(struct spill *s, uint64_t more)
{
	struct statvfs v;
	uint64_t avail, keep = s->reserved > SPILL_DISK_KEEP ? s->reserved : SPILL_DISK_KEEP;

	if (fstatvfs(s->fd, &v) < 0)
		return 0;           /* unknown: fallocate() will say */
	avail = s->avail = (uint64_t)v.f_bavail * v.f_frsize;
	return avail >= more && avail - more >= keep ? 0 : -ENOSPC;
}

/* Room for 'size' more bytes in the last region, its blocks reserved in the file. */
static int room(struct spill *s, size_t size)
{
	struct spill_region *r = s->region_count ? &s->regions[s->region_count - 1] : NULL;
	size_t end;
	int err;

	if (!r || r->size - r->used < size) {
		err = region_add(s, size);
		if (err)
			return err;
		r = &s->regions[s->region_count - 1];
	}
	end = r->used + size;
	if (end > r->reserved) {
		end = (end + SPILL_CHUNK - 1) / SPILL_CHUNK * SPILL_CHUNK;
		if (end > r->size)
			end = r->size;
		err = disk_allows(s, end - r->reserved);
		if (!err)
			err = reserve(s->fd, r->file_off + r->reserved, end - r->reserved);
		if (err)
			return err;
		s->reserved += end - r->reserved;
		r->reserved = end;
	}
	return 0;
}

void *spill_alloc(struct spill *s, size_t size)
{
	struct spill_region *r;
	void *p;
	int err;

	if (!s || !s->bound || s->heap)
		return calloc(1, size ? size : 1);
	size = (size + SPILL_ALIGN - 1) & ~(size_t)(SPILL_ALIGN - 1);
	err = room(s, size);
	if (err) {
		if (err == -ENOSPC)
			pack_warn("%s: %llu MiB free, kept for the image: the rest of the tree stays in memory, "
				  "past --memory (%llu MiB of it in its spill file)", s->dir,
				  (unsigned long long)(s->avail >> 20), (unsigned long long)(s->reserved >> 20));
		else
			pack_warn("%s: the tree's spill file: %s: the tree stays in memory, past --memory",
				  s->dir, strerror(-err));
		s->heap = true;
		return calloc(1, size);
	}
	r = &s->regions[s->region_count - 1];
	p = r->base + r->used;
	r->used += size;
	return p;
}

void *spill_realloc(struct spill *s, void *p, size_t old, size_t size)
{
	void *q;

	if (!region_of(s, p) && (!s || !s->bound || s->heap)) {
		q = realloc(p, size ? size : 1);
		if (q && size > old)
			memset((uint8_t *)q + old, 0, size - old);
		return q;
	}
	q = spill_alloc(s, size);
	if (q && p)
		memcpy(q, p, old < size ? old : size);
	if (q)
		spill_free(s, p);
	return q;
}

void spill_free(struct spill *s, void *p)
{
	if (!region_of(s, p))
		free(p);
}

/* Drop every piece of every region but the one 'keep' is in. */
static void drop(struct spill *s, const void *keep)
{
	const uint8_t *k = keep;

	for (size_t i = 0; i < s->region_count; i++) {
		struct spill_region *r = &s->regions[i];

		for (size_t at = 0; at < r->used; at += SPILL_CHUNK) {
			size_t len = r->used - at < SPILL_CHUNK ? r->used - at : SPILL_CHUNK;

			if (k >= r->base + at && k < r->base + at + SPILL_CHUNK)
				continue;
			len = (len + (size_t)s->page - 1) & ~((size_t)s->page - 1);
			madvise(r->base + at, len, MADV_DONTNEED);
		}
	}
}

void spill_check_at(struct spill *s, const void *p)
{
	long pages = file_pages(s);

	if (pages < 0 || pages <= s->base_pages ||
	    (uint64_t)(pages - s->base_pages) * (uint64_t)s->page <= s->bound)
		return;
	drop(s, p);
	s->drops++;
}

void spill_peek(const struct spill *s, const void *p, void *buf, size_t len)
{
	const struct spill_region *r = region_of(s, p);
	const uint8_t *b = p;

	if (r && b + len <= r->base + r->size &&
	    pread(s->fd, buf, len, (off_t)(r->file_off + (uint64_t)(b - r->base))) == (ssize_t)len)
		return;
	memcpy(buf, p, len);
}

void spill_poke(const struct spill *s, void *p, const void *buf, size_t len)
{
	const struct spill_region *r = region_of(s, p);
	uint8_t *b = p;

	if (r && b + len <= r->base + r->size &&
	    pwrite(s->fd, buf, len, (off_t)(r->file_off + (uint64_t)(b - r->base))) == (ssize_t)len)
		return;
	memcpy(p, buf, len);
}
