/*
 * siblings.c - the files that share a fragment block, pushed together.
 *
 * mksquashfs packs the small files of a directory, in listing order, into
 * shared fragment blocks.  A READ of one of them decompresses the whole
 * block; the files after it in the same block are then stored into the
 * kernel's page cache (fill.c) while the block is at hand, so that a tree
 * walker reading every file (md5sum, tar, a backup) finds them cached
 * instead of sending one READ round trip each.  It costs no decompression
 * and at most one fragment block of page cache per READ.
 *
 * Only a plain mount whose kernel opens without asking (fs->no_open) does
 * it: the files' directory listings then live in the node table, found by
 * node id.  A READDIRPLUS notes each listed file's directory, by inode
 * number; a READ looks its file up in that listing and walks on while the
 * files share the block.  A block that spans directories is pushed a
 * directory at a time, from the first READ in each.  A stale note only
 * means a listing where the file is not found, and nothing is pushed.
 */
#include <stdlib.h>

#include "mount_int.h"

/* Files pushed after one READ at most: a fragment block of tiny files holds thousands. */
#define QM_SIBLINGS_MAX 256

/*
 * The table costs 8 bytes per inode of the image; above this many the
 * pushes are off rather than costing more than the rest of the daemon.
 */
#define QM_SIBLINGS_INODES_MAX (1u << 22)

/* The directory that listed each file, by inode number (1 .. inode_count); NULL: none (yet). */
static _Atomic uint64_t *parents(struct qm_fs *fs, const struct qm_view *v)
{
	_Atomic uint64_t *t = atomic_load_explicit(&fs->parents, memory_order_acquire);
	_Atomic uint64_t *none = NULL;

	if (t || v->inode_count == 0 || v->inode_count > QM_SIBLINGS_INODES_MAX)
		return t;
	t = calloc((size_t)v->inode_count + 1, sizeof(*t));
	if (!t)
		return NULL;
	if (!atomic_compare_exchange_strong(&fs->parents, &none, t)) {
		free(t);
		return none;
	}
	return t;
}

static bool wanted(const struct qm_fs *fs, const struct qm_view *v, const struct qs_inode *in)
{
	return in->type == QS_FILE && in->u.file.fragment != QS_NO_FRAGMENT && in->ino && in->ino <= v->inode_count &&
	       v == &fs->view && fs->no_open && fs->fill && fs->nodes;
}

void qm_siblings_note(struct qm_fs *fs, const struct qm_view *v, uint64_t dir, const struct qs_inode *in)
{
	_Atomic uint64_t *t;

	if (wanted(fs, v, in) && (t = parents(fs, v)))
		atomic_store_explicit(&t[in->ino], dir, memory_order_relaxed);
}

/* Push the whole of file 'in' (node id 'nodeid'): its one block, the tail in the fragment block. */
static void push_one(struct qm_fs *fs, const struct qm_view *v, uint64_t nodeid, const struct qs_inode *in)
{
	struct qs_file *file;
	struct qs_block *block;
	const void *data;
	size_t len;

	if (qs_file_open(v->img, in, &file))
		return;
	if (qs_file_block(file, 0, &block, &data, &len) == 0) {
		if (len == in->size)
			qm_fill_push(fs->fill, nodeid, 0, 0, block, data, len);
		else
			qs_block_release(NULL, block);
	}
	qs_file_close(file);
}

/* Push the files after 'in' in directory 'dir' that share its fragment block. */
static void push_after(struct qm_fs *fs, const struct qm_view *v, uint64_t dir, const struct qs_inode *in)
{
	uint32_t frag = in->u.file.fragment;
	struct qm_node *node;
	const struct qm_dir *d;
	size_t i, pushed = 0;

	if (!dir || qm_nodes_get(v, dir, true, &node))
		return;
	d = qm_node_obj(node);
	for (i = 0; i < d->count && d->ents[i].ref != in->ref; i++)
		;
	for (i++; i < d->count && pushed < QM_SIBLINGS_MAX; i++) {
		struct qs_inode sib;

		if (d->ents[i].type != QS_FILE)
			continue;
		if (qs_inode_read(v->img, d->ents[i].ref, &sib) || sib.u.file.fragment != frag)
			break;
		/* a file with blocks of its own keeps its tail here too; only whole files are pushed */
		if (sib.u.file.block_count == 0 && sib.size) {
			push_one(fs, v, qm_nodeid_of(v, sib.ref), &sib);
			pushed++;
		}
	}
	qm_nodes_put(node);
}

void qm_siblings_push(struct qm_fs *fs, const struct qm_view *v, const struct qs_inode *in)
{
	_Atomic uint64_t *t;

	if (wanted(fs, v, in) && (t = parents(fs, v)))
		push_after(fs, v, atomic_load_explicit(&t[in->ino], memory_order_relaxed), in);
}
