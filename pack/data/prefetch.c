/*
 * prefetch.c - opening source files ahead of the data phase (why: prefetch.h).
 *
 * A ring of descriptors between two threads, guarded by one mutex: the
 * prefetcher fills it in the files' order, the data phase empties it in
 * the same order.  It holds at most PREFETCH_SLOTS files and
 * PREFETCH_BYTES of reading asked for, so page cache and descriptors
 * stay bounded whatever the tree.  A full ring is let drain
 * PREFETCH_REFILL files before the prefetcher is woken again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "prefetch.h"
#include "scan/srcdir.h"

#define PREFETCH_SLOTS     128u             /* files opened ahead at most: reads in flight */
#define PREFETCH_READAHEAD (256u << 10)     /* asked for per file; the kernel's readahead does the rest */
#define PREFETCH_BYTES     (32u << 20)      /* asked for and not yet taken, at most */
/*
 * A full ring is let drain this many files before the prefetcher is woken:
 * woken for each file taken, the two threads would trade futex calls for
 * every file; let drain much further, the opens in flight run dry in turns
 * (docs/benchmarks.md).
 */
#define PREFETCH_REFILL    16u

struct prefetch_slot {
	const struct pack_inode *file;
	int fd;                     /* or -errno */
	uint32_t ahead;             /* bytes asked for */
};

struct prefetch {
	struct pack_inode *root;    /* walked when files is NULL */
	struct pack_inode *const *files;
	size_t n;
	struct srcdir_cache dirs;   /* the prefetcher's own */
	struct prefetch_slot ring[PREFETCH_SLOTS];
	size_t head, tail;          /* taken, filled: ring[i % PREFETCH_SLOTS] */
	uint64_t bytes;             /* asked for in the ring */
	bool done, stopping;
	bool filler_waits;          /* the prefetcher sleeps until ring_has_room() */
	pthread_mutex_t lock;
	pthread_cond_t filled, emptied;
	pthread_t thread;
};

/* Open one file; under no lock (the data phase reads meanwhile). */
static struct prefetch_slot open_one(struct prefetch *p, const struct pack_inode *file)
{
	struct prefetch_slot s = { .file = file };
	uint64_t size = file->u.file.size;

	/* Checked by prefetch_take(), on the data phase's thread: the two halves of the work balance. */
	s.fd = srcdir_open_unchecked(&p->dirs, file);
	if (s.fd >= 0) {
		s.ahead = size < PREFETCH_READAHEAD ? (uint32_t)size : PREFETCH_READAHEAD;
		/*
		 * Advice only: where it fails the data phase simply reads as it
		 * always did.  Should the name hold another file by now, its pages
		 * are read into the cache, and nothing of it further (the check).
		 */
		(void)posix_fadvise(s.fd, 0, (off_t)s.ahead, POSIX_FADV_WILLNEED);
	}
	return s;
}

static bool ring_full(const struct prefetch *p)
{
	return p->tail != p->head && (p->tail - p->head == PREFETCH_SLOTS || p->bytes > PREFETCH_BYTES);
}

static bool ring_has_room(const struct prefetch *p)
{
	return p->tail - p->head <= PREFETCH_SLOTS - PREFETCH_REFILL &&
	       p->bytes <= PREFETCH_BYTES - PREFETCH_BYTES / PREFETCH_SLOTS * PREFETCH_REFILL;
}

/* Open one file of the order into the ring, when there is room; -EINTR once stopped. */
static int offer(struct pack_inode *file, void *arg)
{
	struct prefetch *p = arg;
	struct prefetch_slot s;

	if (!prefetch_wants(file) || file->prefetched)
		return 0;
	file->prefetched = true;
	pthread_mutex_lock(&p->lock);
	if (ring_full(p)) {
		p->filler_waits = true;
		while (!p->stopping && !ring_has_room(p))
			pthread_cond_wait(&p->emptied, &p->lock);
		p->filler_waits = false;
	}
	if (p->stopping) {
		pthread_mutex_unlock(&p->lock);
		return -EINTR;
	}
	pthread_mutex_unlock(&p->lock);
	s = open_one(p, file);
	pthread_mutex_lock(&p->lock);
	p->ring[p->tail++ % PREFETCH_SLOTS] = s;
	p->bytes += s.ahead;
	pthread_cond_signal(&p->filled);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void *prefetch_main(void *arg)
{
	struct prefetch *p = arg;

	if (!p->files)
		(void)tree_walk_files(p->root, offer, p);
	for (size_t i = 0; p->files && i < p->n && offer(p->files[i], p) == 0; i++)
		;
	pthread_mutex_lock(&p->lock);
	p->done = true;
	pthread_cond_signal(&p->filled);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int prefetch_start(struct pack_tree *tree, struct pack_inode *const *files, size_t n, struct prefetch **out)
{
	struct prefetch *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->root = tree->root;
	p->files = files;
	p->n = n;
	srcdir_cache_init(&p->dirs, tree);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->filled, NULL);
	pthread_cond_init(&p->emptied, NULL);
	if (pthread_create(&p->thread, NULL, prefetch_main, p) != 0) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->filled);
		pthread_cond_destroy(&p->emptied);
		free(p);
		return -EAGAIN;
	}
	*out = p;
	return 0;
}

int prefetch_take(struct prefetch *p, const struct pack_inode *file)
{
	int fd = PREFETCH_NONE;

	pthread_mutex_lock(&p->lock);
	while (p->head == p->tail && !p->done)
		pthread_cond_wait(&p->filled, &p->lock);
	if (p->head != p->tail && p->ring[p->head % PREFETCH_SLOTS].file == file) {
		const struct prefetch_slot *s = &p->ring[p->head++ % PREFETCH_SLOTS];

		fd = s->fd;
		p->bytes -= s->ahead;
		if (p->filler_waits && ring_has_room(p))
			pthread_cond_signal(&p->emptied);
	}
	pthread_mutex_unlock(&p->lock);
	if (fd >= 0)
		fd = srcdir_check_file(&p->dirs, fd, file);
	return fd;
}

void prefetch_stop(struct prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_signal(&p->emptied);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	for (; p->head != p->tail; p->head++)
		if (p->ring[p->head % PREFETCH_SLOTS].fd >= 0)
			close(p->ring[p->head % PREFETCH_SLOTS].fd);
	srcdir_cache_clear(&p->dirs);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->filled);
	pthread_cond_destroy(&p->emptied);
	free(p);
}
