/*
 * verity.c - the dm-verity format: parameters, the tree's layout, the
 * superblock, and computing a tree from a byte source, all as cryptsetup's
 * lib/verity (verity.c, verity_hash.c) does it, so that veritysetup and the
 * kernel accept what is written here and the other way round.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quash.h"
#include "verity.h"
#include "verity_internal.h"

static const char *const hash_names[] = { "sha1", "sha224", "sha256", "sha384", "sha512" };

#define N_HASHES (sizeof(hash_names) / sizeof(hash_names[0]))
#define HASHES_SUPPORTED "sha1, sha224, sha256, sha384 and sha512 are"

static EVP_MD *hash_mds[N_HASHES];
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;
static pthread_key_t ctx_key;

static void free_ctx(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

/* Fetched once: an implicit fetch on every EVP_DigestInit costs more than hashing a block. */
static void hash_init(void)
{
	for (size_t i = 0; i < N_HASHES; i++)
		hash_mds[i] = EVP_MD_fetch(NULL, hash_names[i], NULL);
	pthread_key_create(&ctx_key, free_ctx);
}

const EVP_MD *verity_md(const char *name)
{
	pthread_once(&hash_once, hash_init);
	for (size_t i = 0; i < N_HASHES; i++) {
		if (strcmp(name, hash_names[i]) == 0)
			return hash_mds[i];
	}
	return NULL;
}

int verity_hash(const EVP_MD *md, const uint8_t *salt, size_t salt_size, const void *data, size_t len,
		uint8_t *out)
{
	struct iovec one = { .iov_base = (void *)data, .iov_len = len };

	return verity_hashv(md, salt, salt_size, &one, 1, out);
}

int verity_hashv(const EVP_MD *md, const uint8_t *salt, size_t salt_size, const struct iovec *iov, int n,
		 uint8_t *out)
{
	EVP_MD_CTX *ctx;
	bool ok;

	pthread_once(&hash_once, hash_init);
	ctx = pthread_getspecific(ctx_key);
	if (!ctx) {
		ctx = EVP_MD_CTX_new();
		if (!ctx || pthread_setspecific(ctx_key, ctx) != 0) {
			EVP_MD_CTX_free(ctx);
			return qs_set_error(-ENOMEM, "out of memory");
		}
	}
	ok = EVP_DigestInit_ex2(ctx, md, NULL) && (!salt_size || EVP_DigestUpdate(ctx, salt, salt_size));
	for (int i = 0; ok && i < n; i++)
		ok = EVP_DigestUpdate(ctx, iov[i].iov_base, iov[i].iov_len);
	if (!ok || !EVP_DigestFinal_ex(ctx, out, NULL))
		return qs_set_error(-EIO, "verity: hashing failed in libcrypto");
	return 0;
}

void qs_verity_params_init(struct qs_verity_params *p)
{
	memset(p, 0, sizeof(*p));
	strcpy(p->hash_name, QS_VERITY_DEFAULT_HASH);
	p->hash_type = 1;
	p->data_block_size = QS_VERITY_DEFAULT_BLOCK;
	p->hash_block_size = QS_VERITY_DEFAULT_BLOCK;
}

int qs_verity_digest_size(const char *name)
{
	const EVP_MD *md = verity_md(name);

	if (!md)
		return qs_set_error(-EINVAL, "hash algorithm '%s' is not supported (" HASHES_SUPPORTED ")", name);
	return EVP_MD_get_size(md);
}

int qs_verity_set_hash(struct qs_verity_params *p, const char *name)
{
	char lower[sizeof(p->hash_name)];
	size_t i;

	for (i = 0; name[i] && i < sizeof(lower) - 1; i++)
		lower[i] = (char)tolower((unsigned char)name[i]);
	lower[i] = '\0';
	if (name[i] || qs_verity_digest_size(lower) < 0)
		return qs_set_error(-EINVAL, "hash algorithm '%s' is not supported (" HASHES_SUPPORTED ")", name);
	memcpy(p->hash_name, lower, sizeof(lower));
	return 0;
}

static bool block_size_ok(uint32_t size)
{
	return size >= QS_VERITY_MIN_BLOCK && size <= QS_VERITY_MAX_BLOCK && !(size & (size - 1));
}

int qs_verity_check_params(const struct qs_verity_params *p)
{
	char name[sizeof(p->hash_name) + 1];

	if (p->hash_type != 1)
		return qs_set_error(-EINVAL, "verity hash type %u is not supported (1 is)", p->hash_type);
	memcpy(name, p->hash_name, sizeof(p->hash_name));
	name[sizeof(p->hash_name)] = '\0';
	if (qs_verity_digest_size(name) < 0)
		return -EINVAL;
	if (!block_size_ok(p->data_block_size))
		return qs_set_error(-EINVAL, "data block size %u is not a power of two from 512 to 524288",
				    p->data_block_size);
	if (!block_size_ok(p->hash_block_size))
		return qs_set_error(-EINVAL, "hash block size %u is not a power of two from 512 to 524288",
				    p->hash_block_size);
	if (p->hash_offset % 512)
		return qs_set_error(-EINVAL, "hash offset %llu is not a multiple of 512",
				    (unsigned long long)p->hash_offset);
	if (p->no_superblock && p->hash_offset % p->hash_block_size)
		return qs_set_error(-EINVAL, "hash offset %llu is not a multiple of the hash block size %u",
				    (unsigned long long)p->hash_offset, p->hash_block_size);
	if (p->salt_size > QS_VERITY_MAX_SALT)
		return qs_set_error(-EINVAL, "salt of %u bytes is longer than 256", p->salt_size);
	return 0;
}

static unsigned log2_down(uint64_t u)
{
	unsigned i = 0;

	while ((u >> i) > 1)
		i++;
	return i;
}

int qs_verity_geometry(const struct qs_verity_params *p, uint64_t data_blocks, struct qs_verity_geometry *g)
{
	uint64_t pos, s;
	unsigned bits;
	int size, ret = qs_verity_check_params(p);

	if (ret < 0)
		return ret;
	memset(g, 0, sizeof(*g));
	if (data_blocks == 0)
		return qs_set_error(-EINVAL, "verity: no data blocks to hash");
	size = qs_verity_digest_size(p->hash_name);
	g->digest_size = (unsigned)size;
	g->digest_stride = 1u << (log2_down((uint64_t)size - 1) + 1);
	bits = log2_down(p->hash_block_size / g->digest_size);
	g->per_block = 1u << bits;
	g->data_blocks = data_blocks;
	while (bits * g->levels < 64 && (data_blocks - 1) >> (bits * g->levels))
		g->levels++;
	if (g->levels > QS_VERITY_MAX_LEVELS)
		return qs_set_error(-EINVAL, "verity: too many tree levels");
	if (p->no_superblock)
		pos = p->hash_offset / p->hash_block_size;
	else
		pos = (p->hash_offset + QS_VERITY_SB_SIZE + p->hash_block_size - 1) / p->hash_block_size;
	g->tree_offset = pos * p->hash_block_size;
	/* Top level first, as veritysetup lays them out. */
	for (int i = (int)g->levels - 1; i >= 0; i--) {
		unsigned shift = (unsigned)(i + 1) * bits;

		if (shift > 63)
			return qs_set_error(-EINVAL, "verity: hash area too large");
		s = (data_blocks + ((uint64_t)1 << shift) - 1) >> shift;
		g->level_blocks[i] = s;
		g->level_offset[i] = pos * p->hash_block_size;
		if (pos + s < pos || (pos + s) > UINT64_MAX / p->hash_block_size)
			return qs_set_error(-EINVAL, "verity: hash area too large");
		pos += s;
		g->hash_blocks += s;
	}
	g->hash_end = pos * p->hash_block_size;
	return 0;
}

uint64_t qs_verity_data_blocks_for(const struct qs_verity_params *p, uint64_t data_size)
{
	return data_size / p->data_block_size + (data_size % p->data_block_size != 0);
}

static uint64_t round_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) / align * align;
}

uint64_t qs_verity_appended_offset(const struct qs_verity_params *p, uint64_t data_size)
{
	uint64_t align = 4096;

	if (p->data_block_size > align)
		align = p->data_block_size;
	if (p->hash_block_size > align)
		align = p->hash_block_size;
	return round_up(data_size, align);
}

static const uint8_t sb_signature[8] = { 'v', 'e', 'r', 'i', 't', 'y', 0, 0 };

/* Offsets in the superblock (cryptsetup's struct verity_sb, packed, little-endian). */
enum {
	SB_VERSION = 8, SB_HASH_TYPE = 12, SB_UUID = 16, SB_ALGORITHM = 32, SB_DATA_BLOCK_SIZE = 64,
	SB_HASH_BLOCK_SIZE = 68, SB_DATA_BLOCKS = 72, SB_SALT_SIZE = 80, SB_SALT = 88,
};

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int qs_verity_encode_superblock(const struct qs_verity_params *p, uint8_t out[QS_VERITY_SB_SIZE])
{
	int ret = qs_verity_check_params(p);

	if (ret < 0)
		return ret;
	if (p->data_blocks == 0)
		return qs_set_error(-EINVAL, "verity: the superblock needs the number of data blocks");
	memset(out, 0, QS_VERITY_SB_SIZE);
	memcpy(out, sb_signature, sizeof(sb_signature));
	put_le(out + SB_VERSION, 1, 4);
	put_le(out + SB_HASH_TYPE, p->hash_type, 4);
	memcpy(out + SB_UUID, p->uuid, 16);
	memcpy(out + SB_ALGORITHM, p->hash_name, strnlen(p->hash_name, 31));
	put_le(out + SB_DATA_BLOCK_SIZE, p->data_block_size, 4);
	put_le(out + SB_HASH_BLOCK_SIZE, p->hash_block_size, 4);
	put_le(out + SB_DATA_BLOCKS, p->data_blocks, 8);
	put_le(out + SB_SALT_SIZE, p->salt_size, 2);
	memcpy(out + SB_SALT, p->salt, p->salt_size);
	return 0;
}

int qs_verity_read_superblock(struct qs_source *hash, uint64_t offset, struct qs_verity_params *p)
{
	uint8_t sb[QS_VERITY_SB_SIZE];
	char name[33];
	uint32_t version;
	int ret;

	if (offset > hash->size || hash->size - offset < sizeof(sb))
		return qs_set_error(-ENODATA, "no verity superblock at offset %llu (the file is %llu bytes)",
				    (unsigned long long)offset, (unsigned long long)hash->size);
	ret = qs_source_pread(hash, sb, sizeof(sb), offset);
	if (ret < 0)
		return ret;
	if (memcmp(sb, sb_signature, sizeof(sb_signature)) != 0)
		return qs_set_error(-ENODATA, "no verity superblock at offset %llu", (unsigned long long)offset);
	version = (uint32_t)get_le(sb + SB_VERSION, 4);
	if (version != 1)
		return qs_set_error(-EINVAL, "verity superblock version %u is not supported (1 is)", version);
	memcpy(name, sb + SB_ALGORITHM, 32);
	name[32] = '\0';
	for (char *c = name; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (strlen(name) >= sizeof(p->hash_name) || !verity_md(name))
		return qs_set_error(-EINVAL, "hash algorithm '%s' is not supported (" HASHES_SUPPORTED ")", name);
	memset(p->hash_name, 0, sizeof(p->hash_name));
	strcpy(p->hash_name, name);
	p->hash_type = (uint32_t)get_le(sb + SB_HASH_TYPE, 4);
	p->data_block_size = (uint32_t)get_le(sb + SB_DATA_BLOCK_SIZE, 4);
	p->hash_block_size = (uint32_t)get_le(sb + SB_HASH_BLOCK_SIZE, 4);
	p->data_blocks = get_le(sb + SB_DATA_BLOCKS, 8);
	if (get_le(sb + SB_SALT_SIZE, 2) > QS_VERITY_MAX_SALT)
		return qs_set_error(-EINVAL, "verity superblock's salt size %u is more than 256",
				    (unsigned)get_le(sb + SB_SALT_SIZE, 2));
	p->salt_size = (uint16_t)get_le(sb + SB_SALT_SIZE, 2);
	memset(p->salt, 0, sizeof(p->salt));
	memcpy(p->salt, sb + SB_SALT, p->salt_size);
	memcpy(p->uuid, sb + SB_UUID, 16);
	p->hash_offset = offset;
	p->no_superblock = false;
	ret = qs_verity_check_params(p);
	if (ret < 0)
		return ret;
	if (p->data_blocks == 0)
		return qs_set_error(-EINVAL, "verity superblock says 0 data blocks");
	return 0;
}

int qs_verity_find_appended(struct qs_source *src, uint64_t data_size, struct qs_verity_params *p)
{
	uint64_t first = 0, last = 0;
	uint8_t sig[sizeof(sb_signature)];
	int ret;

	for (uint64_t align = 4096; align <= QS_VERITY_MAX_BLOCK; align *= 2) {
		uint64_t off = round_up(data_size, align);

		if (align == 4096)
			first = off;
		if (off == last && align > 4096)
			continue;
		last = off;
		if (off > src->size || src->size - off < QS_VERITY_SB_SIZE)
			break;
		ret = qs_source_pread(src, sig, sizeof(sig), off);
		if (ret < 0)
			return ret;
		if (memcmp(sig, sb_signature, sizeof(sig)) == 0)
			return qs_verity_read_superblock(src, off, p);
	}
	return qs_set_error(-ENODATA, "no verity superblock after the image's end (offset %llu)",
			    (unsigned long long)first);
}

int qs_verity_digest(const struct qs_verity_params *p, const void *data, size_t len, uint8_t *out)
{
	const EVP_MD *md = verity_md(p->hash_name);

	if (!md)
		return qs_verity_digest_size(p->hash_name);
	return verity_hash(md, p->salt, p->salt_size, data, len, out);
}

/* ---- computing a tree --------------------------------------------------- */

/* Data read per request while hashing: large reads keep remote sources fast. */
#define FORMAT_CHUNK (4u << 20)

struct tree_writer {
	const struct qs_verity_params *p;
	const struct qs_verity_geometry *g;
	const EVP_MD *md;
	int fd;
	uint8_t *cur[QS_VERITY_MAX_LEVELS];     /* the block being filled at each level */
	unsigned count[QS_VERITY_MAX_LEVELS];   /* digests in it */
	uint64_t written[QS_VERITY_MAX_LEVELS]; /* blocks of the level written */
	uint8_t *root;
};

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *b = buf;

	while (len) {
		ssize_t n = pwrite(fd, b, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return qs_set_error(-errno, "write at offset %llu: %s", (unsigned long long)off,
					    strerror(errno));
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int push_digest(struct tree_writer *w, unsigned level, const uint8_t *digest);

/* Write the level's current block (zero-padded) and hash it into the level above. */
static int emit_block(struct tree_writer *w, unsigned level)
{
	uint32_t hbs = w->p->hash_block_size;
	uint8_t digest[QS_VERITY_MAX_DIGEST];
	int ret;

	if (w->written[level] >= w->g->level_blocks[level])
		return qs_set_error(-EIO, "verity: level %u has more blocks than its layout", level);
	ret = write_all(w->fd, w->cur[level], hbs, w->g->level_offset[level] + w->written[level] * hbs);
	if (ret < 0)
		return ret;
	w->written[level]++;
	ret = verity_hash(w->md, w->p->salt, w->p->salt_size, w->cur[level], hbs, digest);
	if (ret < 0)
		return ret;
	memset(w->cur[level], 0, hbs);
	w->count[level] = 0;
	if (level + 1 == w->g->levels) {
		memcpy(w->root, digest, w->g->digest_size);
		return 0;
	}
	return push_digest(w, level + 1, digest);
}

static int push_digest(struct tree_writer *w, unsigned level, const uint8_t *digest)
{
	memcpy(w->cur[level] + (size_t)w->count[level] * w->g->digest_stride, digest, w->g->digest_size);
	if (++w->count[level] == w->g->per_block)
		return emit_block(w, level);
	return 0;
}

int qs_verity_format(struct qs_source *data, const struct qs_verity_params *p, int fd,
		     uint8_t root[QS_VERITY_MAX_DIGEST], struct qs_verity_geometry *gout)
{
	struct qs_verity_params params = *p;
	struct qs_verity_geometry g;
	struct tree_writer w = { .p = &params, .g = &g, .fd = fd, .root = root };
	uint32_t dbs = p->data_block_size;
	uint8_t digest[QS_VERITY_MAX_DIGEST], *chunk = NULL, *head = NULL;
	uint64_t block = 0, chunk_bytes;
	int ret = qs_verity_check_params(p);

	if (ret < 0)
		return ret;
	if (!params.data_blocks)
		params.data_blocks = qs_verity_data_blocks_for(p, data->size);
	ret = qs_verity_geometry(&params, params.data_blocks, &g);
	if (ret < 0)
		return ret;
	if (data->size <= (params.data_blocks - 1) * dbs)
		return qs_set_error(-EIO, "the data is %llu bytes, the tree covers %llu blocks of %u bytes",
				    (unsigned long long)data->size, (unsigned long long)params.data_blocks, dbs);
	w.md = verity_md(params.hash_name);
	chunk_bytes = FORMAT_CHUNK > dbs ? FORMAT_CHUNK : dbs;
	chunk = malloc(chunk_bytes);
	for (unsigned i = 0; i < g.levels; i++) {
		w.cur[i] = calloc(1, p->hash_block_size);
		if (!w.cur[i])
			ret = qs_set_error(-ENOMEM, "out of memory");
	}
	if (!chunk)
		ret = qs_set_error(-ENOMEM, "out of memory");
	while (ret == 0 && block < params.data_blocks) {
		uint64_t n = chunk_bytes / dbs, off = block * dbs, avail;

		if (n > params.data_blocks - block)
			n = params.data_blocks - block;
		avail = data->size - off < n * dbs ? data->size - off : n * dbs;
		ret = qs_source_pread(data, chunk, avail, off);
		if (ret < 0)
			break;
		memset(chunk + avail, 0, n * dbs - avail);
		for (uint64_t i = 0; i < n && ret == 0; i++) {
			ret = verity_hash(w.md, params.salt, params.salt_size, chunk + i * dbs, dbs, digest);
			if (ret == 0 && g.levels == 0)
				memcpy(root, digest, g.digest_size);
			else if (ret == 0)
				ret = push_digest(&w, 0, digest);
		}
		block += n;
	}
	/* The partial last block of each level, bottom up: each one feeds the next. */
	for (unsigned i = 0; ret == 0 && i < g.levels; i++) {
		if (w.count[i])
			ret = emit_block(&w, i);
	}
	for (unsigned i = 0; ret == 0 && i < g.levels; i++) {
		if (w.written[i] != g.level_blocks[i])
			ret = qs_set_error(-EIO, "verity: level %u has %llu blocks, its layout %llu", i,
					   (unsigned long long)w.written[i], (unsigned long long)g.level_blocks[i]);
	}
	if (ret == 0 && !params.no_superblock) {
		/* The superblock and the zeros up to the tree, in one write. */
		uint64_t len = g.tree_offset - params.hash_offset;

		head = calloc(1, len);
		if (!head)
			ret = qs_set_error(-ENOMEM, "out of memory");
		else if ((ret = qs_verity_encode_superblock(&params, head)) == 0)
			ret = write_all(fd, head, len, params.hash_offset);
	}
	if (ret == 0 && gout)
		*gout = g;
	free(head);
	free(chunk);
	for (unsigned i = 0; i < g.levels; i++)
		free(w.cur[i]);
	return ret;
}

int qs_verity_default_salt(struct qs_source *data, struct qs_verity_params *p)
{
	uint32_t dbs = p->data_block_size;
	size_t have = data->size < dbs ? (size_t)data->size : dbs;
	uint8_t *first = calloc(1, dbs);
	int ret;

	if (!first)
		return qs_set_error(-ENOMEM, "out of memory");
	ret = qs_source_pread(data, first, have, 0);
	if (ret == 0)
		ret = verity_hash(verity_md("sha256"), NULL, 0, first, dbs, p->salt);
	if (ret == 0)
		p->salt_size = 32;
	free(first);
	return ret;
}

void qs_verity_uuid_from_root(const uint8_t *root, uint8_t uuid[16])
{
	memcpy(uuid, root, 16);
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

int qs_verity_append_file(const char *path, struct qs_verity_params *p, unsigned flags,
			  uint8_t root[QS_VERITY_MAX_DIGEST], struct qs_verity_geometry *g)
{
	struct qs_source *src = NULL;
	uint8_t sb[QS_VERITY_SB_SIZE];
	struct stat st;
	off_t orig = -1;
	int ret, fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return qs_set_error(-errno, "%s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = qs_set_error(-EINVAL, "verity: appending a tree needs a regular file");
		goto out;
	}
	if (flags & QS_VERITY_AT_END)
		p->hash_offset = qs_verity_appended_offset(p, (uint64_t)st.st_size);
	if ((uint64_t)st.st_size > p->hash_offset) {
		ret = qs_set_error(-EINVAL, "verity: hash offset %llu is inside the image (%llu bytes)",
				   (unsigned long long)p->hash_offset, (unsigned long long)st.st_size);
		goto out;
	}
	ret = qs_verity_check_params(p);
	if (ret < 0)
		goto out;
	if (!p->data_blocks) {
		/* The data area is the image up to the tree, alignment zeros included, as on a device. */
		p->data_blocks = p->hash_offset / p->data_block_size;
		if (p->data_blocks * p->data_block_size < (uint64_t)st.st_size) {
			ret = qs_set_error(-EINVAL, "verity: hash offset %llu is not a multiple of the data block "
					   "size %u", (unsigned long long)p->hash_offset, p->data_block_size);
			goto out;
		}
	}
	if (p->data_blocks * p->data_block_size > p->hash_offset) {
		ret = qs_set_error(-EINVAL, "verity: the data area (%llu blocks of %u) overlaps the hash area at %llu",
				   (unsigned long long)p->data_blocks, p->data_block_size,
				   (unsigned long long)p->hash_offset);
		goto out;
	}
	orig = st.st_size;
	if (ftruncate(fd, (off_t)p->hash_offset) < 0) {
		ret = qs_set_error(-errno, "%s", strerror(errno));
		goto out;
	}
	ret = qs_source_open_file(path, &src);
	if (ret == 0 && (flags & QS_VERITY_DERIVE_SALT))
		ret = qs_verity_default_salt(src, p);
	if (ret == 0)
		ret = qs_verity_format(src, p, fd, root, g);
	if (ret == 0 && !p->no_superblock && (flags & QS_VERITY_DERIVE_UUID)) {
		qs_verity_uuid_from_root(root, p->uuid);
		ret = qs_verity_encode_superblock(p, sb);
		if (ret == 0)
			ret = write_all(fd, sb, sizeof(sb), p->hash_offset);
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = qs_set_error(-errno, "%s", strerror(errno));
	if (ret == 0)
		orig = -1;
out:
	qs_source_close(src);
	/* A failed append leaves the image as it was. */
	if (orig >= 0 && ftruncate(fd, orig) < 0 && ret == 0)
		ret = qs_set_error(-errno, "%s", strerror(errno));
	close(fd);
	return ret;
}

/* ---- text forms ------------------------------------------------------------ */

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int qs_verity_parse_hex(const char *text, uint8_t *out, size_t max)
{
	size_t len = strlen(text);

	if (strcmp(text, "-") == 0)
		return 0;
	if (len % 2 || len / 2 > max)
		return -EINVAL;
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (int)(len / 2);
}

void qs_verity_format_hex(const uint8_t *bytes, size_t len, char *buf)
{
	for (size_t i = 0; i < len; i++)
		sprintf(buf + 2 * i, "%02x", bytes[i]);
	buf[2 * len] = '\0';
}

int qs_verity_parse_uuid(const char *text, uint8_t out[16])
{
	size_t n = 0;

	if (strlen(text) != 36)
		return -EINVAL;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		int hi, lo;

		if (dash) {
			if (text[i] != '-')
				return -EINVAL;
			continue;
		}
		hi = hex_value(text[i]);
		lo = hex_value(text[i + 1]);
		if (hi < 0 || lo < 0 || i + 1 == 8 || i + 1 == 13 || i + 1 == 18 || i + 1 == 23)
			return -EINVAL;
		out[n++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	return n == 16 ? 0 : -EINVAL;
}

void qs_verity_format_uuid(const uint8_t u[16], char buf[37])
{
	snprintf(buf, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}
