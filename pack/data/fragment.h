/*
 * fragment.h - packing small files and tails into shared fragment blocks.
 */
#ifndef QUASH_PACK_FRAGMENT_H
#define QUASH_PACK_FRAGMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "format/squashfs_fs.h"

struct pipeline;

/*
 * Where each fragment went, in pages made as fragments are: the writer
 * thread stores into them while more are added, so they never move, and
 * a bound of one fragment a file (every file a tail) costs a pointer a
 * page, not 12 bytes a file (a million 5-10 byte files fill 60 fragments).
 */
#define FRAG_PAGE 4096u

struct frag_page {
	uint64_t starts[FRAG_PAGE];     /* image offset, set by the writer */
	uint32_t sizes[FRAG_PAGE];      /* on-disk size word */
};

struct frag_packer {
	struct pipeline *pipe;
	uint8_t *buf;               /* the fragment block being filled */
	uint32_t fill, block_size;
	uint32_t base;              /* index of the first fragment (appending: the old image's count) */
	bool store;                 /* the blocks written uncompressed (mksquashfs -noF) */
	struct frag_page **pages;   /* cap / FRAG_PAGE + 1 of them, NULL until used */
	struct sqfs_fragment_entry *table;
	uint32_t count, cap;
};

/* 'max' bounds the fragments this image can need (one per file with a tail); numbered from 'base'. */
int frag_init(struct frag_packer *fp, struct pipeline *pipe, uint32_t block_size, uint32_t base, uint64_t max);
void frag_free(struct frag_packer *fp);

/*
 * Room for a tail of len bytes (<= block_size): where to copy it, and the
 * fragment index and offset the inode records.  Queues the current block
 * first if the tail does not fit.  NULL if the pipeline failed.
 */
uint8_t *frag_reserve(struct frag_packer *fp, uint32_t len, uint32_t *index, uint32_t *offset);

/* Queue the last, partly filled block.  0 or -errno. */
int frag_flush(struct frag_packer *fp);

/* The new fragments' entries (base on), once the pipeline has finished. */
const struct sqfs_fragment_entry *frag_table(struct frag_packer *fp);

#endif
