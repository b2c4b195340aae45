/*
 * pipeline.h - compress blocks on many threads, write them in order.
 *
 * Jobs live in a ring of slots.  The producer takes the next free slot,
 * fills its input, and submits it; submission order is the output order.
 * Workers compress submitted jobs; the writer thread appends each to the
 * sink once it and all jobs before it are done, storing the block
 * uncompressed if compression did not make it smaller, or if a sample of
 * it looks like random bytes (then the compressor is never run on it).
 * The ring bounds the memory in flight.
 */
#ifndef QUASH_PACK_PIPELINE_H
#define QUASH_PACK_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "codec/compressor.h"

struct pack_sink;
struct pipeline;

struct pipeline_job {
	uint8_t *in;                /* block_size bytes to fill */
	uint32_t len;               /* bytes filled; 0 only records the position */
	bool store;                 /* written uncompressed whatever it holds (mksquashfs -noD, -noF) */
	uint32_t *size_slot;        /* gets the on-disk size word, or NULL */
	uint64_t *pos_slot;         /* gets the image offset of the block, or NULL */
	/* Owned by the pipeline. */
	uint8_t *out;
	uint32_t buf;               /* the pair in and out are */
	ssize_t out_len;
	int state;
};

/* ring_bytes: input bytes in flight at most (0: the default); as much again is kept for the output. */
int pipeline_start(const struct qs_compressor *comp, const struct qs_compress_params *params,
		   uint32_t block_size, unsigned jobs, uint64_t ring_bytes, struct pack_sink *sink,
		   struct pipeline **out);

/* The next slot to fill (waits for one); NULL once the pipeline has failed. */
struct pipeline_job *pipeline_get(struct pipeline *p);
/* Queue the slot pipeline_get() returned.  A slot taken but not submitted is simply reused. */
void pipeline_submit(struct pipeline *p, struct pipeline_job *job);

/* Wait until every job is written and stop the threads; first error or 0. */
int pipeline_finish(struct pipeline *p);
void pipeline_free(struct pipeline *p);

#endif
