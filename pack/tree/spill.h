/*
 * spill.h - the tree's memory, in a temporary file under --memory.
 *
 * A pack holds its whole tree until the tables are written: about 97
 * bytes a small file, 97 MiB for a million.  Under --memory, what the tree
 * and the dedup index allocate comes from an unlinked temporary file beside
 * the image, mapped shared; spill_tick() gives mapped pages back to the
 * kernel whenever more of them are resident than the tree's share of the
 * bound.  Being a shared file mapping, a page given back is not lost: it
 * stays in the page cache (written to the file when the kernel needs the
 * room) and is faulted back on the next touch.  The code that walks the
 * tree does not change; the walks that touch it out of order read and
 * write through spill_peek() and spill_poke() instead.
 *
 * Without a bound (or with a NULL spill) every call is malloc()'s.
 */
#ifndef QUASH_PACK_SPILL_H
#define QUASH_PACK_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spill_region {
	uint8_t *base;
	size_t size, used;
	size_t reserved;            /* bytes from base with blocks of their own in the file */
	uint64_t file_off;          /* where base is in the file */
};

struct spill {
	uint64_t bound;             /* resident bytes of the file allowed; 0: plain malloc() */
	const char *dir;            /* where the file is made (the image's directory) */
	int fd;                     /* the file; -1 without a bound */
	int statm_fd;               /* /proc/self/statm, kept open: read at every check */
	bool heap;                  /* the file could not grow (said once): malloc() from then on */
	uint64_t file_size;
	uint64_t reserved;          /* bytes of the file with blocks of their own */
	uint64_t avail;             /* free on its file system at the last look */
	struct spill_region *regions;
	size_t region_count;
	unsigned ticks;
	long base_pages;            /* file-backed resident pages before the first region */
	long page;
	uint64_t drops;             /* checks that found the bound passed and gave pages back */
};

/* With a bound, the file is made in 'dir' now: 0, or -errno said in one line. */
int spill_init(struct spill *s, uint64_t bound, const char *dir);
/* Unmap and close the file: every pointer it gave is gone. */
void spill_close(struct spill *s);

/* 'size' zeroed bytes, 16-byte aligned; NULL if out of memory. */
void *spill_alloc(struct spill *s, size_t size);
/* As realloc(), 'old' the size 'p' was given with; the new part zeroed. */
void *spill_realloc(struct spill *s, void *p, size_t old, size_t size);
/* The heap's are freed; the file's stay until spill_close(). */
void spill_free(struct spill *s, void *p);

/*
 * Copy 'len' bytes at 'p' into 'buf' without touching the mapping: by
 * pread() of the file (its page cache) if 'p' is the file's, else memcpy().
 * For reads at random (the dedup's), which would otherwise fault pages in.
 */
void spill_peek(const struct spill *s, const void *p, void *buf, size_t len);
/* The other way: 'len' bytes of buf to 'p', by pwrite() if 'p' is the file's. */
void spill_poke(const struct spill *s, void *p, const void *buf, size_t len);

/* Marks p's piece as in use, and gives pages back if the bound is passed. */
void spill_check_at(struct spill *s, const void *p);

/*
 * A check reads statm (one pread()), which at every tick would cost more
 * than the walk; every 256th keeps the same peak at almost no cost
 * (docs/benchmarks.md).  256 ticks in a walk's
 * order touch a few KiB; a walk that jumped would map 16 pages a touch
 * (fault-around), which is why the readers that jump use spill_peek().
 */
#define SPILL_TICK_EVERY 256u

/* A walk is at 'p': keep its piece mapped at the next check. */
static inline void spill_tick(struct spill *s, const void *p)
{
	if (s && s->region_count && (++s->ticks & (SPILL_TICK_EVERY - 1)) == 0)
		spill_check_at(s, p);
}

#endif
