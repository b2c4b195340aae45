/*
 * source_verity.c - checking data against a tree (verity.h: struct
 * qs_verity, qs_verity_check) and, on top of it, a byte source that returns
 * only bytes whose hash checks up to the root (qs_source_open_verity).
 *
 * A read hashes every data block it touches against level 0 of the tree.
 * The digests come from tree blocks that were themselves checked against
 * their parent, up to the root hash, and are then kept in a cache of
 * verified blocks: a hash table over a fixed set of slots, evicted by a
 * clock hand, upper levels given more chances (each covers many blocks
 * below).  The lock guards only the table and the copying of digests out
 * of it; reading, hashing and comparing happen outside it.
 *
 * Nothing is remembered of data blocks once verified: a block read again
 * from the source is hashed again, because a source, a local file too,
 * can change between two reads (a writer, an NFS server, a cache
 * directory).  What is read once stays verified in the caller's keeping:
 * the block cache above this source holds decompressed verified blocks,
 * so a block is hashed once per cache miss, not once per read.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quash.h"
#include "verity.h"
#include "verity_internal.h"

/* Slots kept whatever the byte bound says: a path from the top to level 0 and some. */
#define VERITY_MIN_SLOTS 8
/* Clock chances a block of level 1 or above gets, against 1 for level 0. */
#define VERITY_UPPER_CHANCES 3

struct slot {
	uint64_t key;           /* level << 56 | block */
	int32_t next;           /* next slot in the bucket, or -1 */
	uint8_t chances;        /* the clock's: 0 means evict when the hand comes */
	bool used;
};

/* The tree, its root and the cache of its verified blocks (verity.h: struct qs_verity). */
struct qs_verity {
	struct qs_source *hash;     /* not owned */
	struct qs_verity_params p;
	struct qs_verity_geometry g;
	const EVP_MD *md;
	uint8_t root[QS_VERITY_MAX_DIGEST];
	uint64_t data_size;         /* bytes of data the tree covers; a last partial block is zero-padded */

	pthread_mutex_t lock;       /* over the slots, buckets and hand */
	uint32_t nslots, hand, bucket_mask;
	struct slot *slots;
	int32_t *buckets;
	uint8_t *blocks;            /* nslots hash blocks */

	uint64_t stat_data, stat_tree_reads, stat_rereads, stat_failures;
};

static uint64_t slot_key(unsigned level, uint64_t block)
{
	return (uint64_t)level << 56 | block;
}

static uint32_t bucket_of(const struct qs_verity *v, uint64_t key)
{
	key *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(key >> 32) & v->bucket_mask;
}

/* Under the lock. */
static int32_t lookup(struct qs_verity *v, uint64_t key)
{
	for (int32_t i = v->buckets[bucket_of(v, key)]; i >= 0; i = v->slots[i].next) {
		if (v->slots[i].key == key)
			return i;
	}
	return -1;
}

static void unlink_slot(struct qs_verity *v, int32_t s)
{
	int32_t *link = &v->buckets[bucket_of(v, v->slots[s].key)];

	while (*link != s)
		link = &v->slots[*link].next;
	*link = v->slots[s].next;
	v->slots[s].used = false;
}

/* A slot to reuse, under the lock: the first the hand finds without chances left. */
static int32_t evict(struct qs_verity *v)
{
	for (;;) {
		uint32_t s = v->hand;

		v->hand = (v->hand + 1) % v->nslots;
		if (!v->slots[s].used)
			return (int32_t)s;
		if (v->slots[s].chances) {
			v->slots[s].chances--;
			continue;
		}
		unlink_slot(v, (int32_t)s);
		return (int32_t)s;
	}
}

static uint8_t chances_for(unsigned level)
{
	return level ? VERITY_UPPER_CHANCES : 1;
}

/* count digests from entry 'first' of a verified block, packed, into out. */
static void copy_digests(const struct qs_verity *v, const uint8_t *block, unsigned first, unsigned count, uint8_t *out)
{
	for (unsigned i = 0; i < count; i++)
		memcpy(out + (size_t)i * v->g.digest_size, block + (size_t)(first + i) * v->g.digest_stride,
		       v->g.digest_size);
}

static void count_stat(uint64_t *stat)
{
	__atomic_fetch_add(stat, 1, __ATOMIC_RELAXED);
}

/*
 * The digests 'first' .. first+count-1 of block 'block' of tree level
 * 'level', from the cache or read and verified up to the root.
 */
static int tree_digests(struct qs_verity *v, unsigned level, uint64_t block, unsigned first, unsigned count,
			uint8_t *out)
{
	uint32_t hbs = v->p.hash_block_size;
	uint64_t key = slot_key(level, block), off = v->g.level_offset[level] + block * hbs;
	uint8_t want[QS_VERITY_MAX_DIGEST], got[QS_VERITY_MAX_DIGEST], *buf;
	int32_t s;
	int ret;

	pthread_mutex_lock(&v->lock);
	s = lookup(v, key);
	if (s >= 0) {
		v->slots[s].chances = chances_for(level);
		copy_digests(v, v->blocks + (size_t)s * hbs, first, count, out);
		pthread_mutex_unlock(&v->lock);
		return 0;
	}
	pthread_mutex_unlock(&v->lock);

	if (level + 1 == v->g.levels)
		memcpy(want, v->root, v->g.digest_size);
	else if ((ret = tree_digests(v, level + 1, block / v->g.per_block, (unsigned)(block % v->g.per_block), 1,
				     want)) < 0)
		return ret;
	buf = malloc(hbs);
	if (!buf)
		return qs_set_error(-ENOMEM, "out of memory");
	for (int attempt = 0;; attempt++) {
		ret = qs_source_pread(v->hash, buf, hbs, off);
		if (ret < 0)
			goto out;
		count_stat(&v->stat_tree_reads);
		ret = verity_hash(v->md, v->p.salt, v->p.salt_size, buf, hbs, got);
		if (ret < 0)
			goto out;
		if (memcmp(got, want, v->g.digest_size) == 0)
			break;
		if (attempt == 1) {
			count_stat(&v->stat_failures);
			if (level + 1 == v->g.levels)
				ret = qs_set_error(-EIO, "verity: tree level %u block %llu (offset %llu of %s) does not "
						   "match the root hash", level, (unsigned long long)block,
						   (unsigned long long)off, v->hash->name);
			else
				ret = qs_set_error(-EIO, "verity: tree level %u block %llu (offset %llu of %s) does not "
						   "match its hash in level %u", level, (unsigned long long)block,
						   (unsigned long long)off, v->hash->name, level + 1);
			goto out;
		}
		count_stat(&v->stat_rereads);
	}
	pthread_mutex_lock(&v->lock);
	s = lookup(v, key);
	if (s < 0) {
		/* evict() unlinks the victim; link the new block in its place. */
		uint32_t b = bucket_of(v, key);

		s = evict(v);
		memcpy(v->blocks + (size_t)s * hbs, buf, hbs);
		v->slots[s].key = key;
		v->slots[s].used = true;
		v->slots[s].next = v->buckets[b];
		v->buckets[b] = s;
	}
	v->slots[s].chances = chances_for(level);
	copy_digests(v, v->blocks + (size_t)s * hbs, first, count, out);
	pthread_mutex_unlock(&v->lock);
	ret = 0;
out:
	free(buf);
	return ret;
}

/*
 * The bytes of data blocks b0 .. b0+nblocks-1 in up to three pieces laid
 * end to end: the bytes of the first block before a read's start, the
 * caller's buffer, and the bytes of the last block after the read's end
 * (zero-padded where the data ends inside it).  Hashing the pieces where
 * they lie spares copying every read through a buffer of whole blocks.
 */
struct span {
	uint8_t *part[3];
	size_t len[3];
};

/* The pieces that hold the span's bytes from..from+dbs-1 (one block), in order: their count. */
static int block_pieces(const struct span *sp, uint64_t from, uint32_t dbs, struct iovec iov[3])
{
	uint64_t at = 0;
	int n = 0;

	for (int k = 0; k < 3; at += sp->len[k], k++) {
		uint64_t lo = from > at ? from : at;
		uint64_t hi = from + dbs < at + sp->len[k] ? from + dbs : at + sp->len[k];

		if (lo < hi)
			iov[n++] = (struct iovec){ .iov_base = sp->part[k] + (lo - at), .iov_len = (size_t)(hi - lo) };
	}
	return n;
}

/* Data block b read again from src into the pieces that hold it; past the data's end, zeros. */
static int reread_block(const struct qs_verity *v, struct qs_source *src, const struct iovec *iov, int n,
			uint64_t b)
{
	uint64_t at = b * v->p.data_block_size;

	for (int i = 0; i < n; at += iov[i].iov_len, i++) {
		uint64_t left = at < v->data_size ? v->data_size - at : 0;
		size_t have = left < iov[i].iov_len ? (size_t)left : iov[i].iov_len;
		int ret = have ? qs_source_pread(src, iov[i].iov_base, have, at) : 0;

		if (ret < 0)
			return ret;
		memset((uint8_t *)iov[i].iov_base + have, 0, iov[i].iov_len - have);
	}
	return 0;
}

/*
 * Check data blocks b0 .. b0+nblocks-1, whose bytes the span holds.  With
 * 'reread', a block that does not match is read again from it once, into
 * the span (which is then writable).
 */
static int verify_blocks(struct qs_verity *v, const struct span *sp, uint64_t b0, uint64_t nblocks,
			 struct qs_source *reread)
{
	uint32_t dbs = v->p.data_block_size;
	size_t ds = v->g.digest_size;
	uint8_t *want = NULL, got[QS_VERITY_MAX_DIGEST];
	uint64_t done = 0, hashed = 0;
	struct iovec iov[3];
	int ret = 0;

	if (v->g.levels) {
		uint64_t most = nblocks < v->g.per_block ? nblocks : v->g.per_block;

		want = malloc(most * ds);
		if (!want)
			return qs_set_error(-ENOMEM, "out of memory");
	}
	while (done < nblocks) {
		uint64_t b = b0 + done;
		unsigned first = (unsigned)(b % v->g.per_block), count = v->g.per_block - first;
		const uint8_t *digests = v->root;

		if (count > nblocks - done)
			count = (unsigned)(nblocks - done);
		if (v->g.levels) {
			ret = tree_digests(v, 0, b / v->g.per_block, first, count, want);
			if (ret < 0)
				break;
			digests = want;
		}
		for (unsigned i = 0; i < count; i++) {
			int n = block_pieces(sp, (done + i) * dbs, dbs, iov);

			for (int attempt = 0;; attempt++) {
				hashed++;
				ret = verity_hashv(v->md, v->p.salt, v->p.salt_size, iov, n, got);
				if (ret < 0)
					goto out;
				if (memcmp(got, digests + i * ds, ds) == 0)
					break;
				if (attempt == 1 || !reread) {
					count_stat(&v->stat_failures);
					ret = qs_set_error(-EIO, "verity: data block %llu (offset %llu) does not match "
							   "its hash in tree level 0", (unsigned long long)(b + i),
							   (unsigned long long)((b + i) * dbs));
					goto out;
				}
				count_stat(&v->stat_rereads);
				ret = reread_block(v, reread, iov, n, b + i);
				if (ret < 0)
					goto out;
			}
		}
		done += count;
	}
out:
	/* One shared add per call rather than one per block: the counter is every thread's. */
	__atomic_fetch_add(&v->stat_data, hashed, __ATOMIC_RELAXED);
	free(want);
	return ret;
}

int qs_verity_check(struct qs_verity *v, uint64_t off, const void *buf, size_t len)
{
	uint32_t dbs = v->p.data_block_size;
	struct span sp = { { NULL } };
	uint64_t end, nblocks;
	int ret;

	if (off % dbs)
		return qs_set_error(-EINVAL, "verity: check at offset %llu, not at a data block's start",
				    (unsigned long long)off);
	if (off >= v->data_size || len == 0)
		return 0;
	end = len > v->data_size - off ? v->data_size : off + len;
	if (end < v->data_size && (end - off) % dbs)
		return qs_set_error(-EINVAL, "verity: check of %zu bytes at %llu ends inside a data block", len,
				    (unsigned long long)off);
	nblocks = (end - off + dbs - 1) / dbs;
	sp.part[1] = (uint8_t *)buf;
	sp.len[1] = (size_t)(end - off);
	sp.len[2] = nblocks * dbs - sp.len[1];
	/* A last block cut short by the data's end is hashed zero-padded. */
	if (sp.len[2] && !(sp.part[2] = calloc(1, sp.len[2])))
		return qs_set_error(-ENOMEM, "out of memory");
	ret = verify_blocks(v, &sp, off / dbs, nblocks, NULL);
	free(sp.part[2]);
	return ret;
}

int qs_verity_open(struct qs_source *hash, const struct qs_verity_params *p, uint64_t data_size,
		   const uint8_t *root, size_t root_len, struct qs_verity **out)
{
	struct qs_verity *v = calloc(1, sizeof(*v));
	size_t cache_bytes = p->cache_bytes ? p->cache_bytes : QS_VERITY_DEFAULT_CACHE_BYTES;
	uint64_t nslots, data_blocks, covered;
	int ret;

	if (!v)
		return qs_set_error(-ENOMEM, "out of memory");
	v->hash = hash;
	v->p = *p;
	pthread_mutex_init(&v->lock, NULL);
	data_blocks = p->data_blocks ? p->data_blocks : qs_verity_data_blocks_for(p, data_size);
	v->p.data_blocks = data_blocks;
	ret = qs_verity_geometry(&v->p, data_blocks, &v->g);
	if (ret < 0)
		goto fail;
	v->md = verity_md(v->p.hash_name);
	if (root_len != v->g.digest_size) {
		ret = qs_set_error(-EINVAL, "root hash has %zu bytes, %s's have %u", root_len, v->p.hash_name,
				   v->g.digest_size);
		goto fail;
	}
	memcpy(v->root, root, root_len);
	if (data_size <= (data_blocks - 1) * p->data_block_size) {
		ret = qs_set_error(-EIO, "the data is %llu bytes, the tree covers %llu blocks of %u bytes",
				   (unsigned long long)data_size, (unsigned long long)data_blocks, p->data_block_size);
		goto fail;
	}
	if (hash->size < v->g.hash_end) {
		ret = qs_set_error(-EIO, "%s is %llu bytes, its verity tree ends at %llu", hash->name,
				   (unsigned long long)hash->size, (unsigned long long)v->g.hash_end);
		goto fail;
	}
	covered = data_blocks * p->data_block_size;
	v->data_size = covered < data_size ? covered : data_size;
	nslots = cache_bytes / p->hash_block_size;
	if (nslots > v->g.hash_blocks)
		nslots = v->g.hash_blocks;
	if (nslots < VERITY_MIN_SLOTS)
		nslots = VERITY_MIN_SLOTS;
	v->nslots = (uint32_t)nslots;
	v->bucket_mask = 1;
	while (v->bucket_mask < v->nslots * 2)
		v->bucket_mask <<= 1;
	v->slots = calloc(v->nslots, sizeof(*v->slots));
	v->buckets = malloc(v->bucket_mask * sizeof(*v->buckets));
	v->blocks = malloc((size_t)v->nslots * p->hash_block_size);
	v->bucket_mask--;
	if (!v->slots || !v->buckets || !v->blocks) {
		ret = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i <= v->bucket_mask; i++)
		v->buckets[i] = -1;
	*out = v;
	return 0;
fail:
	qs_verity_close(v);
	return ret;
}

void qs_verity_close(struct qs_verity *v)
{
	if (!v)
		return;
	pthread_mutex_destroy(&v->lock);
	free(v->slots);
	free(v->buckets);
	free(v->blocks);
	free(v);
}

uint64_t qs_verity_data_size(const struct qs_verity *v)
{
	return v->data_size;
}

int qs_verity_stats(struct qs_verity *v, struct qs_verity_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->data_blocks_verified = __atomic_load_n(&v->stat_data, __ATOMIC_RELAXED);
	out->tree_blocks_read = __atomic_load_n(&v->stat_tree_reads, __ATOMIC_RELAXED);
	out->rereads = __atomic_load_n(&v->stat_rereads, __ATOMIC_RELAXED);
	out->failures = __atomic_load_n(&v->stat_failures, __ATOMIC_RELAXED);
	out->tree_cache_slots = v->nslots;
	pthread_mutex_lock(&v->lock);
	for (uint32_t i = 0; i < v->nslots; i++)
		out->tree_blocks_cached += v->slots[i].used;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

/*
 * Hash block 'block' of tree level 'level', as it arrived (buf), against
 * its parent's digest or the root: 0 or -EIO with tree_digests()'s message.
 */
static int check_tree_block(struct qs_verity *v, unsigned level, uint64_t block, const uint8_t *buf)
{
	uint8_t want[QS_VERITY_MAX_DIGEST], got[QS_VERITY_MAX_DIGEST];
	uint64_t off = v->g.level_offset[level] + block * v->p.hash_block_size;
	int ret;

	if (level + 1 == v->g.levels)
		memcpy(want, v->root, v->g.digest_size);
	else if ((ret = tree_digests(v, level + 1, block / v->g.per_block, (unsigned)(block % v->g.per_block), 1,
				     want)) < 0)
		return ret;
	ret = verity_hash(v->md, v->p.salt, v->p.salt_size, buf, v->p.hash_block_size, got);
	if (ret < 0 || memcmp(got, want, v->g.digest_size) == 0)
		return ret;
	count_stat(&v->stat_failures);
	if (level + 1 == v->g.levels)
		return qs_set_error(-EIO, "verity: tree level %u block %llu (offset %llu of %s) does not match the "
				    "root hash", level, (unsigned long long)block, (unsigned long long)off, v->hash->name);
	return qs_set_error(-EIO, "verity: tree level %u block %llu (offset %llu of %s) does not match its hash in "
			    "level %u", level, (unsigned long long)block, (unsigned long long)off, v->hash->name,
			    level + 1);
}

/*
 * The hash blocks of an appended tree among len bytes at off of the image
 * (whole hash blocks from a block boundary), each against its parent; bytes
 * of the hash area outside the levels (the superblock) are not checked.
 */
static int check_tree_bytes(struct qs_verity *v, uint64_t off, const uint8_t *buf, size_t len)
{
	uint32_t hbs = v->p.hash_block_size;

	for (unsigned level = 0; level < v->g.levels; level++) {
		uint64_t lo = v->g.level_offset[level], hi = lo + v->g.level_blocks[level] * hbs;
		uint64_t from = off > lo ? off : lo, to = off + len < hi ? off + len : hi;

		for (uint64_t at = from; at + hbs <= to; at += hbs) {
			int ret = check_tree_block(v, level, (at - lo) / hbs, buf + (at - off));

			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* ---- the verifying source ------------------------------------------------ */

struct vsrc {
	struct qs_verity *tree;
	struct qs_source *data, *hash;  /* owned; the same source when the tree is appended */
	bool tree_units;                /* the appended tree's blocks are units of data's check too */
};

/*
 * data's check of what arrives (qs_source_check): its data blocks against
 * level 0, and, when the tree is appended in whole units, its tree blocks
 * against their parents, so that a remote image's chunk cache keeps neither
 * wrong data nor a wrong tree.
 */
static int verity_arrival_check(void *ctx, uint64_t off, const void *buf, size_t len)
{
	struct vsrc *vs = ctx;
	struct qs_verity *v = vs->tree;
	int ret = 0;

	if (off < v->data_size)
		ret = qs_verity_check(v, off, buf, len);
	if (ret == 0 && vs->tree_units)
		ret = check_tree_bytes(v, off, buf, len);
	return ret;
}

static int verity_pread(struct qs_source *src, void *out, size_t len, uint64_t off)
{
	struct vsrc *vs = src->priv;
	struct qs_verity *v = vs->tree;
	uint32_t dbs = v->p.data_block_size;
	struct span sp = { .part = { NULL, out, NULL }, .len = { 0, len, 0 } };
	uint64_t b0, b1, end, stop;
	uint8_t *edges = NULL;
	int ret;

	if (len == 0)
		return 0;
	if (off > src->size || len > src->size - off)
		return qs_set_error(-EIO, "read of %zu bytes at %llu is past the end (%llu bytes)", len,
				    (unsigned long long)off, (unsigned long long)src->size);
	b0 = off / dbs;
	b1 = (off + len - 1) / dbs;
	end = (b1 + 1) * dbs;
	stop = end < v->data_size ? end : v->data_size;
	/* The read goes straight into the caller's buffer; only the blocks' bytes around it into ours. */
	sp.len[0] = off - b0 * dbs;
	sp.len[2] = end - (off + len);
	if (sp.len[0] + sp.len[2]) {
		edges = malloc(sp.len[0] + sp.len[2]);
		if (!edges)
			return qs_set_error(-ENOMEM, "out of memory");
		sp.part[0] = edges;
		sp.part[2] = edges + sp.len[0];
		memset(sp.part[2] + (stop - (off + len)), 0, end - stop);
	}
	ret = sp.len[0] ? qs_source_pread(vs->data, sp.part[0], sp.len[0], b0 * dbs) : 0;
	if (ret == 0)
		ret = qs_source_pread(vs->data, out, len, off);
	if (ret == 0 && stop > off + len)
		ret = qs_source_pread(vs->data, sp.part[2], stop - (off + len), off + len);
	if (ret == 0)
		ret = verify_blocks(v, &sp, b0, b1 - b0 + 1, vs->data);
	if (ret < 0)
		memset(out, 0, len);    /* nothing unverified reaches the caller */
	free(edges);
	return ret;
}

static void close_inner(struct qs_source *data, struct qs_source *hash)
{
	if (hash != data)
		qs_source_close(hash);
	qs_source_close(data);
}

static void verity_close(struct qs_source *src)
{
	struct vsrc *vs = src->priv;

	/* data first: its fetch workers may be checking with the tree until they stop. */
	close_inner(vs->data, vs->hash);
	qs_verity_close(vs->tree);
	free(vs);
}

static int verity_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct vsrc *vs = src->priv;

	return qs_source_prefetch(vs->data, off, len);
}

static int verity_willneed(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct vsrc *vs = src->priv;

	return qs_source_willneed(vs->data, off, len);
}

static int verity_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	struct vsrc *vs = src->priv;

	return qs_source_warm(vs->data, off, len);
}

static int verity_replayed(struct qs_source *src, size_t *next, uint64_t *off, uint64_t *len)
{
	struct vsrc *vs = src->priv;

	return qs_source_replayed(vs->data, next, off, len);
}

static const struct qs_source_ops verity_ops = {
	.pread = verity_pread,
	.close = verity_close,
	.prefetch = verity_prefetch,
	.willneed = verity_willneed,
	.warm = verity_warm,
	.replayed = verity_replayed,
};

int qs_source_open_verity(struct qs_source *data, struct qs_source *hash, const struct qs_verity_params *p,
			  const uint8_t *root, size_t root_len, struct qs_source **out)
{
	struct vsrc *vs = calloc(1, sizeof(*vs));
	char roothex[2 * QS_VERITY_MAX_DIGEST + 1], *identity = NULL;
	int ret;

	if (!vs) {
		close_inner(data, hash);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	vs->data = data;
	vs->hash = hash;
	ret = qs_verity_open(hash, p, data->size, root, root_len, &vs->tree);
	if (ret < 0)
		goto fail;
	if (hash == data && vs->tree->p.data_blocks * p->data_block_size > p->hash_offset) {
		ret = qs_set_error(-EINVAL, "the data area (%llu bytes) overlaps the hash area at offset %llu",
				   (unsigned long long)(vs->tree->p.data_blocks * p->data_block_size),
				   (unsigned long long)p->hash_offset);
		goto fail;
	}
	/*
	 * A chunk cache under it checks each chunk as it arrives, before it
	 * keeps it; sources that keep nothing, or chunks that are no whole
	 * blocks, refuse, and the reads below are all there is.
	 */
	vs->tree_units = hash == data && p->hash_block_size == p->data_block_size &&
			 vs->tree->g.tree_offset % p->data_block_size == 0;
	if (data->ops->set_check)
		qs_source_set_check(data, &(struct qs_source_check){ verity_arrival_check, vs, p->data_block_size });
	qs_verity_format_hex(root, root_len, roothex);
	if (asprintf(&identity, "verity:%s:%s:%s", vs->tree->p.hash_name, roothex, data->identity) < 0) {
		identity = NULL;
		ret = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	*out = qs_source_alloc(&verity_ops, data->name, identity, vs->tree->data_size, vs);
	free(identity);
	if (!*out) {
		ret = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	return 0;
fail:
	verity_close(&(struct qs_source){ .priv = vs });
	return ret;
}

int qs_verity_source_stats(struct qs_source *src, struct qs_verity_stats *out)
{
	if (src->ops != &verity_ops)
		return qs_set_error(-EINVAL, "not a verifying source");
	return qs_verity_stats(((struct vsrc *)src->priv)->tree, out);
}
