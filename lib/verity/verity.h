/*
 * verity.h - dm-verity hash trees, in the format veritysetup (cryptsetup)
 * writes and the kernel's dm-verity reads, and a byte source that verifies
 * every byte it returns against one.
 *
 * The format (Linux Documentation/admin-guide/device-mapper/verity.rst):
 * the data is cut into data blocks; each is hashed as H(salt || block)
 * (hash type 1).  The digests are packed into hash blocks, each digest in
 * a slot of the next power of two of its size, as many slots as fit in a
 * power of two, the rest of the block zero; those hash blocks are hashed
 * the same way into the next level, until one block remains, whose hash is
 * the root hash.  In the hash area the levels lie top first: the single top
 * block, then the level below it, down to level 0 (the hashes of the data
 * blocks).  An optional 512-byte verity superblock at the hash offset names
 * the parameters (not the root hash); the tree then starts at the next hash
 * block boundary after it.  The tree is either a separate file (hash
 * offset 0) or appended to the image at a hash offset past its data.
 *
 * Levels here are numbered as the hashes they hold: level 0 holds the
 * digests of the data blocks, level 'levels - 1' is the top block.
 *
 * Conventions as in quash.h: 0 or a count on success, a negative errno and
 * a one-line qs_last_error() on failure; nothing prints.  Hashes go
 * through OpenSSL's EVP interface (its SHA code uses the CPU's SHA
 * extensions); every function is thread-safe.
 */
#ifndef QUASH_VERITY_H
#define QUASH_VERITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source.h"

#define QS_VERITY_SB_SIZE 512u              /* the verity superblock, padded */
#define QS_VERITY_MAX_SALT 256u             /* the superblock's salt field */
#define QS_VERITY_MAX_DIGEST 64u            /* sha512 */
#define QS_VERITY_MAX_LEVELS 63
#define QS_VERITY_MIN_BLOCK 512u            /* block sizes veritysetup accepts: */
#define QS_VERITY_MAX_BLOCK (512u * 1024)   /* powers of two in between */
#define QS_VERITY_DEFAULT_BLOCK 4096u
#define QS_VERITY_DEFAULT_HASH "sha256"
#define QS_VERITY_DEFAULT_CACHE_BYTES (32u << 20)

/* The parameters of a tree: what the superblock holds, and where the tree is. */
struct qs_verity_params {
	char hash_name[32];             /* "sha256"; lower case, as the kernel takes it */
	uint32_t hash_type;             /* 1 (0, Chrome OS's, is not supported) */
	uint32_t data_block_size;
	uint32_t hash_block_size;
	uint64_t data_blocks;           /* data blocks covered; 0: all of the data source (the last
					 * partial block included, read as zero-padded) */
	uint64_t hash_offset;           /* bytes into the hash file where the superblock (or, without
					 * one, the tree) starts: a multiple of 512, and of the hash
					 * block size without a superblock */
	bool no_superblock;
	uint8_t salt[QS_VERITY_MAX_SALT];
	uint16_t salt_size;             /* 0: no salt (veritysetup's "-") */
	uint8_t uuid[16];               /* the superblock's; written as given */
	/*
	 * Not part of the format: the bytes of verified tree blocks a
	 * verifying source keeps (qs_source_open_verity); 0 = the default,
	 * QS_VERITY_DEFAULT_CACHE_BYTES.  At least a few blocks are kept
	 * whatever it says.
	 */
	size_t cache_bytes;
};

/* The layout a set of parameters gives (qs_verity_geometry). */
struct qs_verity_geometry {
	unsigned digest_size;           /* bytes of one digest (32 for sha256) */
	unsigned digest_stride;         /* its slot: the next power of two */
	unsigned per_block;             /* digests in one hash block (a power of two) */
	unsigned levels;                /* 0 when there is one data block: the root is its hash */
	uint64_t data_blocks;
	uint64_t level_blocks[QS_VERITY_MAX_LEVELS];   /* hash blocks in each level */
	uint64_t level_offset[QS_VERITY_MAX_LEVELS];   /* byte offset of each level in the hash file */
	uint64_t tree_offset;           /* where the tree starts: the top level's offset */
	uint64_t hash_blocks;           /* hash blocks in all levels together */
	uint64_t hash_end;              /* the byte after the tree in the hash file */
};

/*
 * Defaults: sha256, hash type 1, 4096-byte blocks, a superblock at offset
 * 0, no salt, a zero UUID, data_blocks 0.
 */
void qs_verity_params_init(struct qs_verity_params *p);

/*
 * Set p->hash_name to NAME (any case) if it is a hash quash verifies with:
 * sha1, sha224, sha256, sha384 or sha512.  -EINVAL with "hash algorithm
 * 'NAME' is not supported (sha1, sha224, sha256, sha384 and sha512 are)"
 * otherwise.
 */
int qs_verity_set_hash(struct qs_verity_params *p, const char *name);

/* Bytes of NAME's digest, or -EINVAL (with the message above) if it is not supported. */
int qs_verity_digest_size(const char *name);

/*
 * Check the parameters on their own: a supported hash and hash type 1,
 * block sizes that are powers of two from 512 to 512 KiB, an aligned hash
 * offset, a salt of at most 256 bytes.  -EINVAL with a message naming the
 * first one that is wrong.
 */
int qs_verity_check_params(const struct qs_verity_params *p);

/*
 * The layout of the tree for p with 'data_blocks' data blocks (p's own
 * field is not consulted): levels, where each lies, the hash file's size
 * needed.  Checks p as qs_verity_check_params does; -EINVAL also for 0
 * data blocks or a tree that would not fit 64 bits.
 */
int qs_verity_geometry(const struct qs_verity_params *p, uint64_t data_blocks, struct qs_verity_geometry *g);

/*
 * The data blocks that cover 'data_size' bytes: data_size / block size,
 * rounded up.  Used when p->data_blocks is 0.
 */
uint64_t qs_verity_data_blocks_for(const struct qs_verity_params *p, uint64_t data_size);

/*
 * Where an appended tree starts by default after 'data_size' bytes of
 * image: data_size rounded up to 4 KiB, or to the data or hash block size
 * when that is larger.  quash verity format puts it there; a reader looks
 * there for the superblock (qs_verity_find_appended).
 */
uint64_t qs_verity_appended_offset(const struct qs_verity_params *p, uint64_t data_size);

/*
 * The 512-byte superblock for p, as veritysetup writes it: signature
 * "verity\0\0", version 1, hash type, UUID, algorithm name, block sizes,
 * data_blocks (which must be non-zero here), salt; little-endian; the rest
 * zero.
 */
int qs_verity_encode_superblock(const struct qs_verity_params *p, uint8_t out[QS_VERITY_SB_SIZE]);

/*
 * Parse the superblock at 'offset' of 'hash': fills p's format fields
 * (hash name, type, block sizes, data_blocks, salt, UUID) and sets
 * p->hash_offset = offset, p->no_superblock = false; p->cache_bytes is left
 * alone.  -ENODATA with "no verity superblock at offset N" when the
 * signature is not there; -EINVAL with a message naming the field for an
 * unsupported version, hash type, block size or algorithm, a salt longer
 * than 256 bytes or 0 data blocks; the source's error if it cannot be read.
 */
int qs_verity_read_superblock(struct qs_source *hash, uint64_t offset, struct qs_verity_params *p);

/*
 * Look for a superblock appended to an image of 'data_size' bytes (a
 * squashfs image's bytes_used): at the offsets qs_verity_appended_offset
 * gives for every block size from 4 KiB to 512 KiB, first match wins.  On
 * success fills p as qs_verity_read_superblock does.  -ENODATA with "no
 * verity superblock after the image's end (offset N)" when there is none.
 */
int qs_verity_find_appended(struct qs_source *src, uint64_t data_size, struct qs_verity_params *p);

/*
 * Where the squashfs image at 'offset' of src ends (offset plus its
 * superblock's bytes_used): the data_size to look for an appended tree
 * after.  0, -EINVAL with a message when no squashfs superblock is there,
 * or the source's -errno.
 */
int qs_verity_image_end(struct qs_source *src, uint64_t offset, uint64_t *end);

/*
 * Compute the tree of 'data' (read only through the source, in order,
 * once) with p's parameters and write it to 'fd' at p->hash_offset: the
 * superblock unless p->no_superblock, then the levels, every byte of the
 * hash area written (zeros between the superblock and the tree).  The fd
 * needs only be writable; it is not read back.  p->data_blocks 0 covers
 * the whole source, the last partial block zero-padded; otherwise the
 * source must hold at least (data_blocks - 1) blocks and one byte.  The
 * root hash goes to root (geometry's digest_size bytes; QS_VERITY_MAX_DIGEST
 * is always enough) and, if g is not NULL, the layout to *g.  Does not
 * fsync.
 */
int qs_verity_format(struct qs_source *data, const struct qs_verity_params *p, int fd,
		     uint8_t root[QS_VERITY_MAX_DIGEST], struct qs_verity_geometry *g);

/*
 * The salt quash uses when none is given, so that the same image always
 * gets the same tree: the SHA-256 of data's first data block (zero-padded
 * when data is shorter), 32 bytes, like veritysetup's random default.
 * Sets p->salt and p->salt_size.  The source's error if it cannot be read.
 */
int qs_verity_default_salt(struct qs_source *data, struct qs_verity_params *p);

/*
 * The UUID quash writes when none is given: the first 16 bytes of the root
 * hash with the bits of a version 4 UUID set, so that it is reproducible
 * and differs with the content.
 */
void qs_verity_uuid_from_root(const uint8_t *root, uint8_t uuid[16]);

/* qs_verity_append_file()'s flags. */
#define QS_VERITY_DERIVE_SALT 1u    /* p's salt is qs_verity_default_salt()'s */
#define QS_VERITY_DERIVE_UUID 2u    /* p's UUID is qs_verity_uuid_from_root()'s */
#define QS_VERITY_AT_END 4u         /* p->hash_offset is qs_verity_appended_offset(the file's size) */

/*
 * Append the tree of the local file 'path' to it, as quash verity format
 * IMAGE does (and pack --verity will): the file is extended with zeros to
 * p->hash_offset (which must not be inside it), the data area is
 * everything before that (p->data_blocks 0: hash_offset / data block
 * size, which must then cover the whole file), the tree (and superblock)
 * follow, and the file is synced.  flags derive what is not given.  p is
 * updated to what was written (offset, data blocks, salt, UUID); root and
 * *g as for qs_verity_format.  On failure the file is cut back to its
 * size before, and the message does not name the file.
 */
int qs_verity_append_file(const char *path, struct qs_verity_params *p, unsigned flags,
			  uint8_t root[QS_VERITY_MAX_DIGEST], struct qs_verity_geometry *g);

/*
 * A source that serves data's bytes only after checking them against the
 * tree in 'hash' and the root hash:
 *  - every data block a read touches is hashed and compared with its digest
 *    in level 0 before any byte of the read is returned; a tree block is
 *    checked against its parent up to the root before its digests are used,
 *    and is then kept in a bounded cache of verified blocks;
 *  - a block (data or tree) that does not match is read again once (a
 *    transient corruption heals); if it still does not match, the read fails
 *    with -EIO, the caller's buffer is zeroed, and qs_last_error() says
 *    "verity: data block N (offset X) does not match its hash in tree level
 *    0" or "verity: tree level L block N (offset X of HASH) does not match
 *    its hash in level L+1 / the root hash".  Reads of other blocks go on
 *    working;
 *  - errors of the inner sources pass through with their messages;
 *  - no lock is held while reading the inner sources or hashing; any
 *    number of threads may read at once.
 * Its size is the part of data the tree covers: data_blocks blocks, or
 * data's size if that is smaller (the last block then zero-padded for its
 * hash).  p->data_blocks 0 means the blocks data's size needs.  root has
 * the digest size of p's hash.  'hash' may be the same source as 'data' (an
 * appended tree).  Takes ownership of data and hash (closed once when they
 * are the same), also on failure.  Open fails with -EINVAL for bad
 * parameters or a data source shorter than the tree's blocks need
 * ("the data is N bytes, the tree covers M blocks of B bytes"), with -EIO
 * when the hash source is too short for the tree.  Prefetch, willneed and
 * warm hints pass through to data.
 */
int qs_source_open_verity(struct qs_source *data, struct qs_source *hash, const struct qs_verity_params *p,
			  const uint8_t *root, size_t root_len, struct qs_source **out);

/*
 * What qs_source_open() does with the options' verity fields (source.h):
 * wrap 'src' in a verifying source with the root hash opt->verity_root and
 * the tree in 'tree' (opt->verity_file, opened by the caller) or, when
 * 'tree' is NULL, in 'src' itself at opt->verity_offset or appended after
 * the image.  Both sources are owned, also on failure.  -EINVAL with one
 * line for a root hash that is not hex or a tree file or offset without
 * one, or a signature (opt->verity_sig) without a certificate file
 * (opt->verity_cert) or the reverse; a signature is checked as
 * qs_verity_check_signature_files does before anything is read; the
 * messages of qs_verity_read_superblock, qs_verity_find_appended and
 * qs_source_open_verity otherwise.
 */
int qs_source_open_verified(struct qs_source *src, struct qs_source *tree, const struct qs_source_options *opt,
			    struct qs_source **out);

/*
 * The tree on its own, for a reader that gets the data some other way (a
 * remote source's chunk cache checks each chunk as it arrives, before it
 * keeps it): 'hash' holds the tree (not owned: it must outlive the
 * verifier), data_size is the bytes of data the tree covers (p->data_blocks
 * 0: the blocks they need).  Checks and errors as qs_source_open_verity.
 * Thread-safe; tree blocks are read, checked and cached as that source does.
 */
struct qs_verity;
int qs_verity_open(struct qs_source *hash, const struct qs_verity_params *p, uint64_t data_size,
		   const uint8_t *root, size_t root_len, struct qs_verity **out);
void qs_verity_close(struct qs_verity *v);

/* The data bytes the tree covers: data_size, or less when data_blocks says so. */
uint64_t qs_verity_data_size(const struct qs_verity *v);

/*
 * Check len bytes of data at off (a data block's start) against the tree:
 * every block they hold, a last one cut short by the data's end hashed
 * zero-padded; bytes past the data the tree covers are not checked.  len
 * must end at a block's end or at the data's end (-EINVAL otherwise).
 * 0, or -EIO with the message qs_source_open_verity gives for the first
 * block that does not match (no re-read here: the caller fetches again).
 */
int qs_verity_check(struct qs_verity *v, uint64_t off, const void *buf, size_t len);

/* What a verifying source has done, for tests and statistics. */
struct qs_verity_stats {
	uint64_t data_blocks_verified;  /* data block hashes computed (re-reads included) */
	uint64_t tree_blocks_read;      /* tree blocks read from the hash source and checked */
	uint64_t tree_blocks_cached;    /* tree blocks in the cache now */
	uint64_t tree_cache_slots;      /* the most it keeps */
	uint64_t rereads;               /* blocks read again after a mismatch */
	uint64_t failures;              /* blocks that stayed wrong */
};

/* -EINVAL if src is not a verifying source. */
int qs_verity_source_stats(struct qs_source *src, struct qs_verity_stats *out);
int qs_verity_stats(struct qs_verity *v, struct qs_verity_stats *out);

/* ---- root hash signatures (lib/verity/signature.c) ---- */

/*
 * A root hash may come with a detached PKCS#7 signature (DER), as
 * veritysetup open --root-hash-signature takes it: signed content is the
 * root hash in lower-case hex without a newline (what libcryptsetup hands
 * the kernel), the signature's content type pkcs7-data, not embedded.  It
 * is checked against certificates the admin names, where the kernel uses
 * its keyring, and by the kernel's rules: the signer is one of them or
 * chains to one (through certificates the signature or the file carries),
 * every one of them is a trust anchor, and no X.509 purpose, key usage or
 * validity date is checked.
 */
#define QS_VERITY_MAX_SIG 32767u                /* the kernel's user keys hold no more */
#define QS_VERITY_MAX_CERT_FILE (1u << 20)

/*
 * Read a signature file: 'path' relative to dirfd (AT_FDCWD: as given), not
 * through a symlink when 'nofollow', a regular file of 1 to
 * QS_VERITY_MAX_SIG bytes (a FIFO or device is refused without blocking).
 * *sig is the caller's to free().  -errno with "verity: root hash signature
 * PATH: PROBLEM".
 */
int qs_verity_read_signature(int dirfd, const char *path, bool nofollow, uint8_t **sig, size_t *len);

/*
 * The certificates of a file: every PEM certificate in it, or the one DER
 * certificate it is; at most QS_VERITY_MAX_CERT_FILE bytes, a regular file.
 * -errno with "verity: certificate file PATH: PROBLEM".  A loaded set is
 * read-only and may check signatures from any number of threads.
 */
struct qs_verity_certs;
int qs_verity_certs_load(const char *path, struct qs_verity_certs **out);
void qs_verity_certs_free(struct qs_verity_certs *c);

/*
 * Check sig as a signature of the root hash root (root_len bytes) by the
 * rules above.  0, or -EINVAL / -EKEYREJECTED with one line naming
 * sig_name and the problem: "not a PKCS#7 signature (DER)", "not a
 * detached signature of data ...", "not signed by a certificate in CERT
 * (WHY)", "does not sign root hash HEX".
 */
int qs_verity_check_signature(const struct qs_verity_certs *c, const uint8_t *root, size_t root_len,
			      const uint8_t *sig, size_t sig_len, const char *sig_name);

/* The three above for a signature and a certificate file named by path (the command line's). */
int qs_verity_check_signature_files(const char *sig_path, const char *cert_path, const uint8_t *root,
				    size_t root_len);

/* ---- small helpers the command line shares ---- */

/*
 * Parse hex (either case) into at most 'max' bytes: returns the count, or
 * -EINVAL for an odd length, a non-hex digit or too many bytes.  "-" is
 * the empty string (veritysetup's spelling of no salt).
 */
int qs_verity_parse_hex(const char *text, uint8_t *out, size_t max);

/* Lower-case hex of len bytes into buf (2 * len + 1 bytes). */
void qs_verity_format_hex(const uint8_t *bytes, size_t len, char *buf);

/* Parse "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": 0 or -EINVAL. */
int qs_verity_parse_uuid(const char *text, uint8_t out[16]);

/* The text form of a UUID: 37 bytes with the NUL. */
void qs_verity_format_uuid(const uint8_t uuid[16], char buf[37]);

/* One digest: H(salt || data) with p's hash; the digest size in bytes, or -errno. */
int qs_verity_digest(const struct qs_verity_params *p, const void *data, size_t len, uint8_t *out);

#endif
