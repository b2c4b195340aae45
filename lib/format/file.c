/*
 * file.c - reading regular files: the block list, data blocks, sparse
 * blocks and the tail in a fragment.
 *
 * A file's inode is followed by one 32-bit size word per full block; the
 * blocks themselves lie back to back from blocks_start.  Finding block n
 * means summing the sizes before it, so an open file keeps checkpoints:
 * every QS_FILE_CHECKPOINT_BLOCKS blocks, the image position of that block
 * and where its size word lies in the inode table.  Checkpoints are built
 * lazily, in order, as reads reach further into the file, so a hostile size
 * costs nothing until blocks are really read.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define QS_FILE_CHECKPOINT_BLOCKS 128   /* 512 bytes of block list between checkpoints */

struct checkpoint {
	uint64_t data_pos;              /* image position of the block */
	uint64_t list_block;            /* metadata cursor at its size word */
	uint32_t list_offset;
};

struct qs_file {
	struct qs_image *img;
	struct qs_inode inode;
	uint64_t blocks;                /* full blocks plus the tail fragment, if any */

	pthread_mutex_t lock;           /* guards the checkpoint array only */
	struct checkpoint *cp;
	size_t cp_count, cp_cap;
};

int qs_file_open(struct qs_image *img, const struct qs_inode *inode, struct qs_file **out)
{
	struct qs_file *f;

	if (inode->type != QS_FILE)
		return qs_set_error(inode->type == QS_DIR ? -EISDIR : -EINVAL, "not a regular file");
	f = calloc(1, sizeof(*f));
	if (!f)
		return qs_set_error(-ENOMEM, "out of memory");
	f->img = img;
	f->inode = *inode;
	f->blocks = (uint64_t)inode->u.file.block_count + (inode->u.file.fragment != QS_NO_FRAGMENT);
	pthread_mutex_init(&f->lock, NULL);
	f->cp = malloc(sizeof(*f->cp));
	if (!f->cp) {
		free(f);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	f->cp_cap = 1;
	f->cp_count = 1;
	f->cp[0].data_pos = inode->u.file.blocks_start;
	f->cp[0].list_block = img->sb.inode_table_start + sqfs_ref_block(inode->u.file.block_list);
	f->cp[0].list_offset = sqfs_ref_offset(inode->u.file.block_list);
	*out = f;
	return 0;
}

void qs_file_close(struct qs_file *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->lock);
	free(f->cp);
	free(f);
}

const struct qs_inode *qs_file_inode(const struct qs_file *f)
{
	return &f->inode;
}

/* Read 'count' size words at the cursor, adding their stored sizes to *pos. */
static int read_sizes(struct qs_file *f, struct qs_meta_cursor *c, uint32_t *words, size_t count,
		      uint64_t *pos)
{
	uint8_t raw[QS_FILE_CHECKPOINT_BLOCKS * 4];
	int err = qs_meta_read(c, raw, count * 4);

	if (err)
		return err;
	for (size_t i = 0; i < count; i++) {
		uint32_t w = sqfs_le32(raw + i * 4);

		if ((w & SQFS_BLOCK_SIZE_MASK) > f->img->sb.block_size ||
		    (w & ~(SQFS_BLOCK_SIZE_MASK | SQFS_BLOCK_UNCOMPRESSED)))
			return qs_set_error(-EIO, "inode %u: block list holds a bad size word 0x%x",
					    f->inode.ino, w);
		*pos += w & SQFS_BLOCK_SIZE_MASK;
		if (words)
			words[i] = w;
	}
	return 0;
}

/* The checkpoint at or before block n, extending the array as needed. */
static int get_checkpoint(struct qs_file *f, uint64_t n, struct checkpoint *out)
{
	size_t want = (size_t)(n / QS_FILE_CHECKPOINT_BLOCKS);
	int err = 0;

	pthread_mutex_lock(&f->lock);
	while (f->cp_count <= want && !err) {
		struct checkpoint next = f->cp[f->cp_count - 1];
		struct qs_meta_cursor c;

		/*
		 * Metadata is small and cached, and this runs once per 128
		 * blocks of a file: holding the file's lock while reading it
		 * is simpler than publishing checkpoints lock-free.
		 */
		qs_meta_cursor_init(&c, f->img, next.list_block, next.list_offset);
		err = read_sizes(f, &c, NULL, QS_FILE_CHECKPOINT_BLOCKS, &next.data_pos);
		if (err)
			break;
		next.list_block = c.block;
		next.list_offset = c.offset;
		if (f->cp_count == f->cp_cap) {
			struct checkpoint *grown = realloc(f->cp, 2 * f->cp_cap * sizeof(*grown));

			if (!grown) {
				err = qs_set_error(-ENOMEM, "out of memory");
				break;
			}
			f->cp = grown;
			f->cp_cap *= 2;
		}
		f->cp[f->cp_count++] = next;
	}
	if (!err)
		*out = f->cp[want];
	pthread_mutex_unlock(&f->lock);
	return err;
}

/* Image position and size word of full block n. */
static int locate_block(struct qs_file *f, uint64_t n, uint64_t *pos, uint32_t *word)
{
	uint32_t words[QS_FILE_CHECKPOINT_BLOCKS];
	size_t k = (size_t)(n % QS_FILE_CHECKPOINT_BLOCKS);
	struct qs_meta_cursor c;
	struct checkpoint cp;
	int err = get_checkpoint(f, n, &cp);

	if (err)
		return err;
	qs_meta_cursor_init(&c, f->img, cp.list_block, cp.list_offset);
	err = read_sizes(f, &c, words, k + 1, &cp.data_pos);
	if (err)
		return err;
	*word = words[k];
	*pos = cp.data_pos - (words[k] & SQFS_BLOCK_SIZE_MASK);
	return 0;
}

static size_t block_length(const struct qs_file *f, uint64_t n)
{
	uint64_t start = n * f->img->sb.block_size;
	uint64_t left = f->inode.size - start;

	return left < f->img->sb.block_size ? (size_t)left : f->img->sb.block_size;
}

static int tail_block(struct qs_file *f, struct qs_block **out, const void **data, size_t *size)
{
	struct sqfs_fragment_entry frag;
	size_t len = block_length(f, f->inode.u.file.block_count);
	struct qs_block *b;
	int err = qs_fragment_lookup(f->img, f->inode.u.file.fragment, &frag);

	if (!err)
		err = qs_data_block(f->img, frag.start, frag.size, &b);
	if (err)
		return err;
	if (f->inode.u.file.frag_offset > b->size || len > b->size - f->inode.u.file.frag_offset) {
		qs_block_release(f->img, b);
		return qs_set_error(-EIO, "inode %u: tail lies outside fragment %u", f->inode.ino,
				    f->inode.u.file.fragment);
	}
	*out = b;
	*data = (uint8_t *)b->data + f->inode.u.file.frag_offset;
	*size = len;
	return 0;
}

int qs_file_block(struct qs_file *f, uint64_t n, struct qs_block **out, const void **data, size_t *size)
{
	size_t len;
	uint64_t pos;
	uint32_t word;
	struct qs_block *b;
	int err;

	if (n >= f->blocks)
		return qs_set_error(-EINVAL, "block %llu is past the end of the file", (unsigned long long)n);
	if (n == f->inode.u.file.block_count)
		return tail_block(f, out, data, size);
	len = block_length(f, n);
	err = locate_block(f, n, &pos, &word);
	if (err)
		return err;
	if ((word & SQFS_BLOCK_SIZE_MASK) == 0) {
		*out = qs_zero_block();
		*data = (*out)->data;
		*size = len;
		return 0;
	}
	err = qs_data_block(f->img, pos, word, &b);
	if (err)
		return err;
	if (b->size < len) {
		qs_block_release(f->img, b);
		return qs_set_error(-EIO, "inode %u: block %llu holds %zu bytes, %zu expected", f->inode.ino,
				    (unsigned long long)n, b->size, len);
	}
	*out = b;
	*data = b->data;
	*size = len;
	return 0;
}

int qs_file_extent(struct qs_file *f, uint64_t *start, uint64_t *len, uint64_t *frag_start,
		   uint32_t *frag_len)
{
	uint32_t count = f->inode.u.file.block_count;
	struct sqfs_fragment_entry frag;
	uint64_t pos;
	uint32_t word;
	int err;

	*start = f->inode.u.file.blocks_start;
	*len = 0;
	*frag_start = 0;
	*frag_len = 0;
	if (count) {
		err = locate_block(f, count - 1, &pos, &word);
		if (err)
			return err;
		*len = pos + (word & SQFS_BLOCK_SIZE_MASK) - *start;
	}
	if (f->inode.u.file.fragment != QS_NO_FRAGMENT) {
		err = qs_fragment_lookup(f->img, f->inode.u.file.fragment, &frag);
		if (err)
			return err;
		*frag_start = frag.start;
		*frag_len = frag.size & SQFS_BLOCK_SIZE_MASK;
	}
	return 0;
}

int qs_file_block_words(struct qs_file *f, uint64_t first, uint32_t *words, size_t count)
{
	struct qs_meta_cursor c;
	struct checkpoint cp;
	size_t skip;
	int err;

	if (first > f->inode.u.file.block_count || count > f->inode.u.file.block_count - first)
		return qs_set_error(-EINVAL, "blocks %llu..%llu are past the file's %u",
				    (unsigned long long)first, (unsigned long long)(first + count),
				    f->inode.u.file.block_count);
	if (count == 0)
		return 0;
	err = get_checkpoint(f, first, &cp);
	if (err)
		return err;
	qs_meta_cursor_init(&c, f->img, cp.list_block, cp.list_offset);
	skip = (size_t)(first % QS_FILE_CHECKPOINT_BLOCKS);
	if (skip)
		err = read_sizes(f, &c, NULL, skip, &cp.data_pos);
	while (!err && count) {
		size_t n = count < QS_FILE_CHECKPOINT_BLOCKS ? count : QS_FILE_CHECKPOINT_BLOCKS;

		err = read_sizes(f, &c, words, n, &cp.data_pos);
		words += n;
		count -= n;
	}
	return err;
}

int qs_file_block_is_sparse(struct qs_file *f, uint64_t n)
{
	uint64_t pos;
	uint32_t word;
	int err;

	if (n >= f->inode.u.file.block_count)
		return 0;
	err = locate_block(f, n, &pos, &word);
	if (err)
		return err;
	return (word & SQFS_BLOCK_SIZE_MASK) == 0;
}

ssize_t qs_file_pread(struct qs_file *f, void *buf, size_t len, uint64_t off)
{
	uint32_t bs = f->img->sb.block_size;
	uint8_t *out = buf;
	size_t done = 0;

	if (off >= f->inode.size)
		return 0;
	if (len > f->inode.size - off)
		len = (size_t)(f->inode.size - off);
	while (done < len) {
		uint64_t n = (off + done) / bs;
		size_t within = (size_t)((off + done) % bs);
		struct qs_block *b;
		const void *data;
		size_t size, chunk;
		int err = qs_file_block(f, n, &b, &data, &size);

		if (err)
			return err;
		chunk = size - within;
		if (chunk > len - done)
			chunk = len - done;
		memcpy(out + done, (const uint8_t *)data + within, chunk);
		qs_block_release(f->img, b);
		done += chunk;
	}
	return (ssize_t)done;
}
