/*
 * fragment.c - fragment blocks.
 *
 * Files smaller than a block, and (with tail packing) the last partial
 * block of larger files, are appended back to back into a block_size
 * buffer; when the next tail does not fit, the buffer becomes one
 * pipeline job like any data block.  Tails are added in the tree's
 * canonical order, so fragment numbers and offsets are deterministic.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fragment.h"
#include "pipeline.h"

int frag_init(struct frag_packer *fp, struct pipeline *pipe, uint32_t block_size, uint32_t base, uint64_t max)
{
	memset(fp, 0, sizeof(*fp));
	if (max + base >= SQFS_INVALID_FRAG)
		return -EFBIG;
	fp->base = base;
	fp->pipe = pipe;
	fp->block_size = block_size;
	fp->cap = (uint32_t)max;
	fp->buf = malloc(block_size);
	fp->pages = calloc(max / FRAG_PAGE + 1, sizeof(*fp->pages));
	if (!fp->buf || !fp->pages)
		return -ENOMEM;
	return 0;
}

void frag_free(struct frag_packer *fp)
{
	free(fp->buf);
	for (uint32_t p = 0; fp->pages && p <= fp->cap / FRAG_PAGE; p++)
		free(fp->pages[p]);
	free(fp->pages);
	free(fp->table);
	memset(fp, 0, sizeof(*fp));
}

int frag_flush(struct frag_packer *fp)
{
	struct pipeline_job *job;
	struct frag_page **page;

	if (fp->fill == 0)
		return 0;
	if (fp->count >= fp->cap)
		return -EOVERFLOW;
	page = &fp->pages[fp->count / FRAG_PAGE];
	if (!*page && !(*page = calloc(1, sizeof(**page))))
		return -ENOMEM;
	job = pipeline_get(fp->pipe);
	if (!job)
		return -EIO;
	memcpy(job->in, fp->buf, fp->fill);
	job->len = fp->fill;
	job->store = fp->store;
	job->pos_slot = &(*page)->starts[fp->count % FRAG_PAGE];
	job->size_slot = &(*page)->sizes[fp->count % FRAG_PAGE];
	pipeline_submit(fp->pipe, job);
	fp->count++;
	fp->fill = 0;
	return 0;
}

uint8_t *frag_reserve(struct frag_packer *fp, uint32_t len, uint32_t *index, uint32_t *offset)
{
	uint8_t *at;

	if (fp->fill + len > fp->block_size && frag_flush(fp) < 0)
		return NULL;
	*index = fp->base + fp->count;
	*offset = fp->fill;
	at = fp->buf + fp->fill;
	fp->fill += len;
	return at;
}

const struct sqfs_fragment_entry *frag_table(struct frag_packer *fp)
{
	if (!fp->table && fp->count) {
		fp->table = calloc(fp->count, sizeof(*fp->table));
		if (!fp->table)
			return NULL;
		for (uint32_t i = 0; i < fp->count; i++) {
			fp->table[i].start = fp->pages[i / FRAG_PAGE]->starts[i % FRAG_PAGE];
			fp->table[i].size = fp->pages[i / FRAG_PAGE]->sizes[i % FRAG_PAGE];
		}
	}
	return fp->table;
}
