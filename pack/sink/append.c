/*
 * append.c - adding new sources to an existing image, as mksquashfs does
 * without -noappend.
 *
 * The old image's data area (everything between its superblock and its
 * inode table: the compressor options, the data blocks and the fragment
 * blocks) is copied into the new image byte for byte at the same offsets,
 * so every block position its inodes and fragment table hold stays true
 * and nothing is decompressed or recompressed.  Its tree is read through
 * libquash into the pack tree as "stored" inodes: metadata kept as the
 * image has it (no overrides apply), data already written.  The new data
 * follows, then every metadata table is written anew, as for a fresh image.
 *
 * mksquashfs's rule for names: the new sources go into the old root, and a
 * top-level name the old root already has is renamed NAME_1, NAME_2, ...
 * (the first not taken by an old or a new entry); directories are not
 * merged.  The new root's metadata is the new sources'.  The old image's
 * compressor, options, block size and fragment/duplicate/export settings
 * are kept, whatever the command line says (mksquashfs: "All -b, ... and
 * -comp options ignored").
 *
 * The old image is hostile input like any other: every block and fragment
 * position is checked against the data area, directories may appear only
 * once (no loops), depth is bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "append.h"
#include "sink.h"
#include "base/util.h"

#define APPEND_COPY_CHUNK   (1u << 20)     /* bytes of the data area copied per read */
#define APPEND_INO_INITIAL  1024u          /* slots of the inode-number map at first */
#define APPEND_RENAME_MAX   1000000u       /* NAME_N tried at most, as a bound on a hostile tree */

/* Old inode number -> the pack inode made for it: hard links, and loops refused. */
struct ino_map {
	uint32_t *keys;             /* 0: empty */
	struct pack_inode **vals;
	size_t size, used;
};

struct loader {
	struct append_base *b;
	struct pack_tree *t;
	struct ino_map map;
	uint32_t *words;            /* BLOCK_LIST_PAGE size words */
};

static void corrupt(const struct append_base *b, const char *what)
{
	pack_error("%s: cannot append to it: %s", b->name, what);
}

int append_open(const char *path, struct append_base *b)
{
	struct qs_image_options opt = { .offset = 0, .offset_given = true };
	const struct qs_info *in;
	struct qs_source *src;
	int err;

	memset(b, 0, sizeof(*b));
	b->name = path;
	err = qs_source_open_file(path, &src);
	if (!err)
		err = qs_image_open(src, &opt, &b->img);
	if (err) {
		corrupt(b, qs_last_error());
		return err;
	}
	in = qs_image_info(b->img);
	b->flags = in->flags;
	b->block_size = in->block_size;
	b->data_end = in->inode_table_start;
	b->comp = qs_compressor_by_id(in->compressor);
	if (!b->comp || !b->comp->compress) {
		corrupt(b, "its compressor cannot compress in this build");
		return -ENOTSUP;
	}
	b->params = (struct qs_compress_params){
		.level = (int)in->comp.level,
		.block_size = in->block_size,
		.xz_filters = in->comp.filters,
		.lz4_hc = (int)(in->comp.flags & 1),
	};
	/* mksquashfs appends with the image's gzip window and strategies, and its lzo algorithm. */
	if (in->compressor == SQFS_COMP_GZIP) {
		b->params.gzip_window = (int)in->comp.window_size;
		b->params.gzip_strategies = in->comp.strategies;
	} else if (in->compressor == SQFS_COMP_LZO) {
		b->params.lzo_algorithm = (int)in->comp.algorithm + 1;
	}
	if (b->data_end < SQFS_SUPER_SIZE || b->data_end > in->bytes_used) {
		corrupt(b, "the inode table starts outside the image");
		return -EIO;
	}
	if (in->fragment_count > in->bytes_used / SQFS_FRAGMENT_ENTRY_SIZE) {
		corrupt(b, "more fragments than the image has room for");
		return -EIO;
	}
	b->fragment_count = in->fragment_count;
	b->fragments = calloc((size_t)b->fragment_count + 1, sizeof(*b->fragments));
	if (!b->fragments) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < b->fragment_count; i++) {
		struct sqfs_fragment_entry *f = &b->fragments[i];

		err = qs_fragment_get(b->img, i, &f->start, &f->size);
		if (err) {
			corrupt(b, qs_last_error());
			return err;
		}
		if (f->start < SQFS_SUPER_SIZE || f->start > b->data_end ||
		    (f->size & SQFS_BLOCK_SIZE_MASK) > b->data_end - f->start) {
			corrupt(b, "a fragment block lies outside the data area");
			return -EIO;
		}
	}
	return 0;
}

void append_close(struct append_base *b)
{
	qs_image_close(b->img);
	free(b->fragments);
	memset(b, 0, sizeof(*b));
}

static size_t ino_slot(uint32_t ino, size_t size)
{
	return (size_t)((ino * 0x9e3779b1u) & (size - 1));
}

static struct pack_inode *ino_get(struct ino_map *m, uint32_t ino)
{
	for (size_t i = ino_slot(ino, m->size); m->keys[i]; i = (i + 1) & (m->size - 1))
		if (m->keys[i] == ino)
			return m->vals[i];
	return NULL;
}

static void ino_place(uint32_t *keys, struct pack_inode **vals, size_t size, uint32_t ino, struct pack_inode *v)
{
	size_t i = ino_slot(ino, size);

	while (keys[i])
		i = (i + 1) & (size - 1);
	keys[i] = ino;
	vals[i] = v;
}

static int ino_put(struct ino_map *m, uint32_t ino, struct pack_inode *v)
{
	if (2 * (m->used + 1) > m->size) {
		size_t size = m->size ? 2 * m->size : APPEND_INO_INITIAL;
		uint32_t *keys = calloc(size, sizeof(*keys));
		struct pack_inode **vals = calloc(size, sizeof(*vals));

		if (!keys || !vals) {
			free(keys);
			free(vals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->size; i++)
			if (m->keys[i])
				ino_place(keys, vals, size, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		m->keys = keys;
		m->vals = vals;
		m->size = size;
	}
	ino_place(m->keys, m->vals, m->size, ino, v);
	m->used++;
	return 0;
}

/* A stored file: where its blocks are, their size words, its fragment; all within the data area. */
static int load_file(struct loader *l, const struct qs_inode *qi, struct pack_inode *inode)
{
	struct append_base *b = l->b;
	uint32_t count = qi->u.file.block_count;
	uint64_t stored = 0;
	struct qs_file *f;
	int err;

	inode->u.file.size = qi->size;
	inode->u.file.fragment = qi->u.file.fragment;
	inode->u.file.frag_offset = qi->u.file.frag_offset;
	inode->data_done = true;
	b->files++;
	b->bytes += qi->size;
	if (qi->u.file.fragment != QS_NO_FRAGMENT &&
	    (qi->u.file.fragment >= b->fragment_count || qi->size == 0)) {
		corrupt(b, "a file names a fragment that does not exist");
		return -EIO;
	}
	/* Kept as stored, even a start or sparse count the file's no blocks make moot. */
	if (count || qi->u.file.blocks_start || qi->u.file.sparse) {
		err = tree_blocks_new(inode, count);
		if (err) {
			pack_error("out of memory");
			return err;
		}
		tree_blocks(inode)->start = qi->u.file.blocks_start;
		tree_blocks(inode)->sparse = qi->u.file.sparse;
	}
	if (count == 0)
		return 0;
	err = qs_file_open(b->img, qi, &f);
	for (uint32_t p = 0; !err && p * (uint64_t)BLOCK_LIST_PAGE < count; p++) {
		uint32_t first = p * BLOCK_LIST_PAGE;
		uint32_t n = count - first < BLOCK_LIST_PAGE ? count - first : BLOCK_LIST_PAGE;
		bool any = false;

		err = qs_file_block_words(f, first, l->words, n);
		for (uint32_t i = 0; !err && i < n; i++) {
			stored += l->words[i] & SQFS_BLOCK_SIZE_MASK;
			any |= l->words[i] != 0;
		}
		if (!err && any) {
			uint32_t *slot = blocks_slot(tree_blocks(inode), first);

			if (!slot)
				err = -ENOMEM;
			else
				memcpy(slot, l->words, n * sizeof(*slot));
		}
	}
	if (err == -ENOMEM)
		pack_error("out of memory");
	else if (err)
		corrupt(b, qs_last_error());
	qs_file_close(f);
	if (!err && stored &&
	    (qi->u.file.blocks_start < SQFS_SUPER_SIZE || qi->u.file.blocks_start > b->data_end ||
	     stored > b->data_end - qi->u.file.blocks_start)) {
		corrupt(b, "a file's blocks lie outside the data area");
		err = -EIO;
	}
	return err;
}

/* The pack inode for an old one: its metadata as stored. */
static int load_inode(struct loader *l, const struct qs_inode *qi, struct pack_inode **out)
{
	struct pack_inode *inode = tree_inode_new(l->t, qi->mode);
	struct qs_xattr *xa = NULL;
	size_t nx = 0;
	int err = 0;

	if (!inode)
		return -ENOMEM;
	inode->stored = true;
	if (tree_is_reg(inode))
		inode->u.file.content.stored_ref = qi->ref;
	err = tree_set_owner(l->t, inode, qi->uid, qi->gid);
	inode->mtime = qi->mtime;
	tree_set_rdev(inode, qi->rdev);
	if (!err && qi->xattr != QS_NO_XATTR) {
		err = qs_xattr_list(l->b->img, qi, &xa, &nx);
		for (size_t i = 0; !err && i < nx; i++)
			err = tree_xattr_add(inode, xa[i].name, xa[i].value, xa[i].value_len);
		qs_xattr_free(xa, nx);
		if (tree_xattrs_mut(inode))
			tree_xattrs_normalize(tree_xattrs_mut(inode));
	}
	if (!err && qi->type == QS_SYMLINK) {
		inode->u.symlink.target = malloc((size_t)qi->size + 1);
		err = inode->u.symlink.target ? qs_readlink(l->b->img, qi, inode->u.symlink.target, qi->size + 1)
					      : -ENOMEM;
		if (err > 0)
			err = 0;        /* the target's length */
	}
	if (err == -ENOMEM)
		pack_error("out of memory");
	else if (err && err != -E2BIG)     /* E2BIG: said by tree_id() */
		corrupt(l->b, qs_last_error());
	if (!err && qi->type == QS_FILE)
		err = load_file(l, qi, inode);      /* says what is wrong itself */
	if (err) {
		inode->refs = 1;
		tree_inode_put(NULL, inode);
		return err;
	}
	*out = inode;
	return 0;
}

static int load_dir(struct loader *l, struct pack_inode *dir, const struct qs_inode *qdir, unsigned depth);

static int load_entry(struct loader *l, struct pack_inode *dir, const struct qs_dirent *de, unsigned depth)
{
	struct pack_inode *inode, *seen;
	struct qs_inode qi;
	int err;

	if (tree_lookup(l->t, dir, de->name, de->name_len)) {
		corrupt(l->b, "a directory lists one name twice");
		return -EIO;
	}
	err = qs_inode_read(l->b->img, de->ref, &qi);
	if (err) {
		corrupt(l->b, qs_last_error());
		return err;
	}
	seen = ino_get(&l->map, qi.ino);
	if (seen) {
		if (tree_is_dir(seen) || qi.type == QS_DIR) {
			corrupt(l->b, "a directory appears twice in the tree");
			return -EIO;
		}
		err = tree_link(l->t, dir, de->name, de->name_len, seen);
		if (err)
			pack_error("out of memory");
		return err;
	}
	err = load_inode(l, &qi, &inode);
	if (err)
		return err;
	/* tree_insert frees the inode if it fails; the tree owns it once it succeeds. */
	if (!tree_insert(l->t, dir, de->name, de->name_len, inode) || ino_put(&l->map, qi.ino, inode) < 0) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	return qi.type == QS_DIR ? load_dir(l, inode, &qi, depth + 1) : 0;
}

static int load_dir(struct loader *l, struct pack_inode *dir, const struct qs_inode *qdir, unsigned depth)
{
	struct qs_dir_iter it;
	struct qs_dirent de;
	int r;

	if (depth > PACK_DEPTH_MAX) {
		corrupt(l->b, "directories nest too deep");
		return -ELOOP;
	}
	r = qs_dir_open(l->b->img, qdir, &it);
	while (r == 0 && (r = qs_dir_next(&it, &de)) == 1) {
		r = load_entry(l, dir, &de, depth);
		if (r < 0)
			return r;       /* said already */
	}
	if (r < 0)
		corrupt(l->b, qs_last_error());
	return r < 0 ? r : 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool old_has(char **names, size_t n, const char *name)
{
	return bsearch(&name, names, n, sizeof(*names), name_cmp) != NULL;
}

/* mksquashfs: "Source directory entry NAME already used! - trying NAME_1". */
static int rename_collisions(struct append_base *b, struct pack_tree *t, char **old, size_t nold)
{
	struct pack_inode *root = t->root;
	size_t n = root->u.dir.count;
	pack_child *sorted = malloc((n + 1) * sizeof(*sorted));
	char name[SQFS_NAME_MAX + 32];
	int err = 0;

	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, root->u.dir.children, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), tree_child_cmp);
	for (size_t i = 0; !err && i < n; i++) {
		pack_child d = sorted[i];
		unsigned k;
		int len = 0;

		if (!old_has(old, nold, tree_child_name(d)))
			continue;
		for (k = 1; k <= APPEND_RENAME_MAX; k++) {
			len = snprintf(name, sizeof(name), "%s_%u", tree_child_name(d), k);
			if (!old_has(old, nold, name) && !tree_lookup(t, root, name, (size_t)len))
				break;
		}
		if (k > APPEND_RENAME_MAX || len > SQFS_NAME_MAX) {
			pack_error("%s: cannot append: no free name for %s (NAME_N)", b->name, tree_child_name(d));
			err = -ENAMETOOLONG;
			break;
		}
		if (b->notices)
			fprintf(stderr, "Source directory entry %s already used! - trying %s\n", tree_child_name(d), name);
		err = tree_rename(t, root, d, name, (size_t)len);
	}
	free(sorted);
	return err;
}

/*
 * mksquashfs -root-becomes NAME: the old root, its metadata as stored, is
 * the directory NAME of the new root; a new top-level NAME is renamed
 * NAME_1, ... as for a name the old root has.
 */
static int merge_as_dir(struct loader *l, const struct qs_inode *root, const char *name)
{
	char *names[] = { (char *)name };
	struct pack_inode *dir;
	int r = rename_collisions(l->b, l->t, names, 1);

	if (r == -ENOMEM)
		pack_error("out of memory");
	if (r < 0)
		return r;
	r = load_inode(l, root, &dir);
	if (r < 0)
		return r;
	if (!tree_insert(l->t, l->t->root, name, strlen(name), dir) || ino_put(&l->map, root->ino, dir) < 0) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	return load_dir(l, dir, root, 1);
}

int append_merge(struct append_base *b, struct pack_tree *t, const char *root_becomes)
{
	struct loader l = { .b = b, .t = t };
	struct qs_inode root;
	struct qs_dir_iter it;
	struct qs_dirent de;
	char **old = NULL;
	size_t nold = 0, cap = 0;
	int r;

	l.words = malloc(BLOCK_LIST_PAGE * sizeof(*l.words));
	if (!l.words)
		return -ENOMEM;
	r = qs_inode_root(b->img, &root);
	if (r == 0 && root_becomes) {
		r = merge_as_dir(&l, &root, root_becomes);
		goto out;
	}
	if (!r)
		r = qs_dir_open(b->img, &root, &it);
	while (r == 0 && (r = qs_dir_next(&it, &de)) == 1) {
		if (nold == cap) {
			char **v = realloc(old, (cap = cap ? 2 * cap : 64) * sizeof(*old));

			if (!v) {
				r = -ENOMEM;
				break;
			}
			old = v;
		}
		old[nold] = strdup(de.name);
		r = old[nold++] ? 0 : -ENOMEM;
	}
	if (r == -ENOMEM)
		pack_error("out of memory");
	else if (r < 0)
		corrupt(b, qs_last_error());
	if (r >= 0) {
		qsort(old, nold, sizeof(*old), name_cmp);
		r = rename_collisions(b, t, old, nold);
		if (r == -ENOMEM)
			pack_error("out of memory");
	}
	if (r >= 0)
		r = ino_put(&l.map, root.ino, t->root);
	if (r >= 0)
		r = load_dir(&l, t->root, &root, 1);
out:
	for (size_t i = 0; i < nold; i++)
		free(old[i]);
	free(old);
	free(l.map.keys);
	free(l.map.vals);
	free(l.words);
	return r < 0 ? r : 0;
}

int append_copy_data(struct append_base *b, struct pack_sink *sink)
{
	struct qs_source *src = qs_image_source(b->img);
	uint8_t *buf = malloc(APPEND_COPY_CHUNK);
	int err = buf ? 0 : -ENOMEM;

	for (uint64_t pos = SQFS_SUPER_SIZE; !err && pos < b->data_end;) {
		size_t n = b->data_end - pos < APPEND_COPY_CHUNK ? (size_t)(b->data_end - pos) : APPEND_COPY_CHUNK;

		err = qs_source_pread(src, buf, n, pos);
		if (err)
			pack_error("%s: %s", b->name, qs_last_error());
		else
			err = sink_append(sink, buf, n);
		pos += n;
	}
	free(buf);
	return err;
}
