/*
 * data.h - file contents: blocks, fragments and duplicates, written by a
 * parallel pipeline whose output order never depends on thread timing.
 *
 * The caller (one thread) hands over regular files in the tree's canonical
 * order.  It reads each file, splits it into blocks, and queues every
 * block and every full fragment block as a job with a sequence number.
 * Worker threads compress jobs in any order; one writer thread appends
 * them to the sink strictly by sequence number and records where each
 * went.  So reading, compressing and writing overlap, and the image is
 * the same for any number of workers.
 */
#ifndef QUASH_PACK_DATA_H
#define QUASH_PACK_DATA_H

#include <stdbool.h>
#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/compressor.h"
#include "quash.h"
#include "tree/tree.h"

struct pack_sink;
struct data_writer;

struct data_config {
	const struct qs_compressor *comp;
	const struct qs_compress_params *params;
	uint32_t block_size;
	unsigned jobs;              /* compression threads */
	bool fragments;             /* pack files smaller than a block into fragments */
	bool tail_packing;          /* ...and the last partial block of larger files too */
	bool dedup;
	bool sparse;                /* all-zero blocks as holes (size 0, nothing written) */
	bool store_data, store_fragments;   /* those blocks written uncompressed (mksquashfs -noD, -noF) */
	int spool_fd;               /* where archive contents were spooled, or -1 */
	bool skip_unreadable;
	struct qs_image *stored;    /* appending: the old image, whose files are read back to compare, or NULL */
	uint32_t fragment_base;     /* appending: the old image's fragment count */
	uint64_t ring_bytes;        /* data in flight at most (pipeline.h); 0: the default */
	unsigned input_limit;       /* mksquashfs -limit: % of the time spent reading sources; 0: no limit */
	/* xattrs read in the data phase are filtered with these (either may be NULL) */
	const regex_t *xattrs_include, *xattrs_exclude;
};

/*
 * files[0 .. nfiles) are the regular files in the order data_write_file()
 * will be called with them (repeats allowed), or NULL for the tree's own
 * order (tree_walk_files()); they are opened ahead in that order.
 */
int data_writer_start(const struct data_config *cfg, struct pack_sink *sink, struct pack_tree *tree,
		      struct pack_inode *const *files, size_t nfiles, struct data_writer **out);

/* Write one regular file's contents (or find an earlier identical file). */
int data_write_file(struct data_writer *w, struct pack_inode *file);

/* Flush the last fragment and wait until everything is written.  First error, or 0. */
int data_writer_finish(struct data_writer *w);

/* The new fragments' table entries (fragment_base on), valid after finish. */
uint32_t data_fragment_count(const struct data_writer *w);
const struct sqfs_fragment_entry *data_fragments(const struct data_writer *w);

/* Statistics for the summary. */
uint64_t data_dedup_bytes(const struct data_writer *w);
/* Files whose contents were found already written. */
uint64_t data_dedup_files(const struct data_writer *w);
/* Empty regular files met (each once, however many names it has). */
uint64_t data_empty_files(const struct data_writer *w);

void data_writer_free(struct data_writer *w);

/* Does this file end in a fragment?  (A pure function of size and configuration.) */
bool data_has_fragment(const struct data_config *cfg, uint64_t size);

#endif
