/*
 * xattr.c - the xattr table.
 *
 * Each distinct set of xattrs is stored once as key/value pairs in
 * metadata blocks; an xattr id entry points at a set (reference, count,
 * size) and inodes carry the id.  Layout, as the kernel expects: the
 * key/value blocks, the id blocks, then a 16-byte header (where the
 * key/value blocks start, how many ids) followed by the image offsets of
 * the id blocks; the superblock points at that header.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "sink/sink.h"
#include "format/squashfs_fs.h"
#include "base/util.h"

static const struct {
	const char *prefix;
	size_t len;
	uint16_t type;
} prefixes[] = {
	{ "user.", 5, SQFS_XATTR_USER },
	{ "trusted.", 8, SQFS_XATTR_TRUSTED },
	{ "security.", 9, SQFS_XATTR_SECURITY },
};

static uint64_t set_hash(const struct pack_xattrs *x)
{
	uint64_t h = x->count;

	for (uint32_t i = 0; i < x->count; i++) {
		h = pack_hash(h, x->list[i].name, strlen(x->list[i].name) + 1);
		h = pack_hash(h, x->list[i].value, x->list[i].len);
		h = pack_hash(h, &x->list[i].len, sizeof(x->list[i].len));
	}
	return h;
}

static bool same_set(const struct pack_xattrs *a, const struct pack_xattrs *b)
{
	if (a->count != b->count)
		return false;
	for (uint32_t i = 0; i < a->count; i++)
		if (strcmp(a->list[i].name, b->list[i].name) != 0 || a->list[i].len != b->list[i].len ||
		    memcmp(a->list[i].value, b->list[i].value, a->list[i].len) != 0)
			return false;
	return true;
}

static int write_set(struct xattr_table *t, const struct pack_xattrs *x, uint32_t *size)
{
	uint8_t hdr[4];
	int err = 0;

	*size = 0;
	for (uint32_t i = 0; !err && i < x->count; i++) {
		const struct pack_xattr *a = &x->list[i];
		size_t p = 0, name_len;

		while (strncmp(a->name, prefixes[p].prefix, prefixes[p].len) != 0)
			p++;        /* tree_xattrs_normalize() kept only these prefixes */
		name_len = strlen(a->name) - prefixes[p].len;
		sqfs_put16(hdr, prefixes[p].type);
		sqfs_put16(hdr + 2, (uint16_t)name_len);
		err = meta_write(&t->kv, hdr, 4);
		if (!err)
			err = meta_write(&t->kv, a->name + prefixes[p].len, name_len);
		sqfs_put32(hdr, a->len);
		if (!err)
			err = meta_write(&t->kv, hdr, 4);
		if (!err)
			err = meta_write(&t->kv, a->value, a->len);
		*size += (uint32_t)(8 + name_len + a->len);
	}
	return err;
}

#define XATTR_BUCKETS_INITIAL 64

static int rehash(struct xattr_table *t, uint32_t buckets)
{
	uint32_t *b = calloc(buckets, sizeof(*b));

	if (!b)
		return -ENOMEM;
	free(t->buckets);
	t->buckets = b;
	t->bucket_count = buckets;
	for (uint32_t i = 0; i < t->count; i++) {
		uint32_t *head = &b[t->hashes[i] & (buckets - 1)];

		t->next[i] = *head;
		*head = i + 1;
	}
	return 0;
}

/* Room for one more id in the per-id arrays and the hash table. */
static int grow(struct xattr_table *t)
{
	if (t->count == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		void *ids = realloc(t->ids, (size_t)cap * SQFS_XATTR_ID_SIZE);

		if (!ids)
			return -ENOMEM;
		t->ids = ids;
		ids = realloc(t->hashes, cap * sizeof(*t->hashes));
		if (!ids)
			return -ENOMEM;
		t->hashes = ids;
		ids = realloc(t->owners, cap * sizeof(*t->owners));
		if (!ids)
			return -ENOMEM;
		t->owners = ids;
		ids = realloc(t->next, cap * sizeof(*t->next));
		if (!ids)
			return -ENOMEM;
		t->next = ids;
		t->cap = cap;
	}
	if (2 * (t->count + 1) > t->bucket_count)
		return rehash(t, t->bucket_count ? t->bucket_count * 2 : XATTR_BUCKETS_INITIAL);
	return 0;
}

int xattr_assign(struct image_writer *iw, struct pack_inode *inode)
{
	struct xattr_table *t = &iw->xattrs;
	uint8_t *entry;
	uint64_t h, ref;
	uint32_t size, first, *head;
	int err;

	if (tree_xattrs(inode)->count == 0)
		return 0;
	h = set_hash(tree_xattrs(inode));
	first = t->bucket_count ? t->buckets[h & (t->bucket_count - 1)] : 0;
	for (uint32_t i = first; i; i = t->next[i - 1]) {
		if (t->hashes[i - 1] == h && same_set(tree_xattrs(t->owners[i - 1]), tree_xattrs(inode))) {
			tree_xattrs_mut(inode)->id = i - 1;
			return 0;
		}
	}
	err = grow(t);
	if (err)
		return err;
	ref = meta_ref(&t->kv);
	err = write_set(t, tree_xattrs(inode), &size);
	if (err)
		return err;
	entry = t->ids + (size_t)t->count * SQFS_XATTR_ID_SIZE;
	sqfs_put64(entry, ref);
	sqfs_put32(entry + 8, tree_xattrs(inode)->count);
	sqfs_put32(entry + 12, size);
	t->hashes[t->count] = h;
	t->owners[t->count] = inode;
	head = &t->buckets[h & (t->bucket_count - 1)];
	t->next[t->count] = *head;
	*head = t->count + 1;
	tree_xattrs_mut(inode)->id = t->count++;
	return 0;
}

void xattr_resolve_refs(struct image_writer *iw)
{
	struct xattr_table *t = &iw->xattrs;

	for (uint32_t i = 0; i < t->count; i++) {
		uint8_t *entry = t->ids + (size_t)i * SQFS_XATTR_ID_SIZE;

		sqfs_put64(entry, meta_final_ref(&t->kv, sqfs_le64(entry)));
	}
}

int xattr_table_write(struct image_writer *iw, struct pack_sink *sink, uint64_t *start)
{
	struct meta_writer *idsp = NULL;
	struct xattr_table *t = &iw->xattrs;
	struct meta_writer ids;
	uint64_t kv_start = sink->written, ids_start;
	uint8_t *tail = NULL;
	size_t tail_len;
	int err;

	if (t->count == 0) {
		*start = SQFS_INVALID_TABLE;
		return 0;
	}
	err = meta_emit(&t->kv, sink);
	if (err)
		return err;
	ids_start = sink->written;
	meta_init(&ids, image_comp(iw, SQFS_FLAG_UNCOMPRESSED_XATTRS), iw->params);
	idsp = &ids;
	err = meta_write(&ids, t->ids, (size_t)t->count * SQFS_XATTR_ID_SIZE);
	if (!err)
		err = meta_compress(&idsp, 1, iw->jobs);
	if (!err)
		err = sink_append(sink, ids.out, ids.out_len);
	tail_len = SQFS_XATTR_ID_TABLE_SIZE + ids.starts_count * 8;
	if (!err && !(tail = malloc(tail_len)))
		err = -ENOMEM;
	if (!err) {
		sqfs_put64(tail, kv_start);
		sqfs_put32(tail + 8, t->count);
		sqfs_put32(tail + 12, 0);
		for (size_t i = 0; i < ids.starts_count; i++)
			sqfs_put64(tail + SQFS_XATTR_ID_TABLE_SIZE + 8 * i, ids_start + ids.starts[i]);
		*start = sink->written;
		err = sink_append(sink, tail, tail_len);
	}
	free(tail);
	meta_free(&ids);
	return err;
}
